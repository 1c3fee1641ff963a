// One property run: RapidCheck over generated cases, each observed and
// judged by flagprop.judging.checks, shrinking a failure; the outcome record.
#pragma once

#include "core/records.h"
#include "harness/session.h"

#include <rapidcheck.h>

#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace flagprop {

/// A generated case in its JSON form (what flagprop.judging.checks receives and the
/// report records as the counterexample).
struct Case {
  json value;
};
void showValue(const Case& c, std::ostream& os);

/// Options for one property run.
struct RunOptions {
  int cases = 0;      ///< RapidCheck maxSuccess; 0 = the target's `cases` / `op_cases`
  uint64_t seed = 0;  ///< RapidCheck seed; 0 = a fresh random seed
  int maxSize = 100;  ///< RapidCheck maxSize
  /// Called after each judged case with the number judged so far (a
  /// progress line); may be empty.
  std::function<void(int)> progress;
  std::string reproduce;  ///< a reproduce string to replay, or empty
  /// Where the case in flight is written before it runs ({"key": run key,
  /// "case": the case's JSON}), so that a parent whose child process died
  /// on it knows the case; empty: not written.
  std::string inflightPath;
  /// Where this process logs the op calls it judges (phases::HistoryLog),
  /// so that a failure that does not recur alone can be searched for the
  /// calls before it that it needs; empty: not logged.
  std::string historyPath;
  /// The stage file of flagprop.engine.ops._stage ($FLAGPROP_STAGE_FILE): emptied
  /// as each case starts, so that the stage read there is the case's own
  /// (none until an op case reaches its reference); empty: not touched.
  std::string stagePath;
  /// Stored counterexamples of this run, judged before any case is
  /// generated (runner/example_db.h: {"case", "sampler", "file",
  /// "stored_at", "stored_in", "reason"}). The first that still fails is
  /// the run's outcome, with no search; the others that pass are listed in
  /// observations.db.fixed, those the reference now rejects in .dropped.
  std::vector<json> examples;
  /// How many more times a failing case is judged, in this process, before
  /// it is called a failure: one that passes any of them is `flaky`, with
  /// its tally (observations.replays = {"failed": k, "of": n}); 0: never.
  int flakyReplays = 3;
  /// How long, in s, RapidCheck may shrink each failure it finds (the
  /// first and each distinct one), counted from the failure: past it the
  /// shrink candidates left are discarded unjudged, and the counterexample
  /// is the smallest failing case found so far (observations.shrink says
  /// so). 0: no shrinking at all; -1 (the default): until RapidCheck has no
  /// smaller candidate. A candidate already being judged is not stopped.
  /// Ignored on a replay (`reproduce`). On a GPU each candidate of a new
  /// shape can compile its own Triton kernels, so a budget bounds a run
  /// over many failing ops.
  int shrinkSeconds = -1;
  /// How long, in s, one property run may take (-1, the default: no
  /// limit), on its clock (PropertyRun::clockStart). Once a case has held
  /// or failed and the time is past, no new case, shrink candidate or
  /// distinct-failure search starts (a case already being judged is not
  /// stopped): a failure already found is the outcome, shrunk as far as it
  /// got; a run that found none passes on the cases that held, its reason
  /// saying how many of the cases asked for ran (observations.run_time).
  /// Samples the reference rejects do not count as judged: every run
  /// judges at least one case. Ignored on a replay (`reproduce`).
  /// On a GPU one case of a new shape can take seconds (Triton compiling,
  /// FlagGems autotuning), so a limit bounds a run over every overload.
  int runSeconds = -1;
  /// At most this many distinct failures per property run (the first
  /// included); it lowers PropertyRun::distinct, never raises it; 0, the
  /// default: each run's own (3 for op runs). 1 ends a failing run at its first failure: a sweep over
  /// every overload that wants each one's verdict before any second failure
  /// (on a GPU each further search draws new shapes, which compile).
  int distinct = 0;
  /// At most this many of a run's explicit examples (PropertyRun::examples);
  /// -1, the default: every one the run has (its target's explicit_cases);
  /// 0: none.
  int explicitCases = -1;
  /// Cases judged together per trip into Python where a run can
  /// (PropertyRun::judgeAhead: P5 / P6): the search's next cases, as it
  /// will draw them if each passes, observed in one sandbox and judged
  /// after one restore and one tamper check. 1: one case at a time.
  int batch = 8;
};

/// Result of one property run on one target (one entry of targets[].results[]).
struct PropertyOutcome {
  std::string property;  ///< P1..P6
  std::string title;
  std::string op;      ///< P5 / P6: the catalog op
  std::string dtype;   ///< P5 / P6: the dtype
  std::string status;  ///< pass | fail | flaky | skip | error
  std::string reason;
  int casesRun = 0;
  json counterexample;              ///< shrunk case (JSON) or null
  std::string counterexampleShown;  ///< RapidCheck's rendering
  std::string reproduce;            ///< reproduce string (replays this run only)
  json observations;                ///< the evidence of the shrunk case, or the distribution of passing cases
  std::string checkKind;            ///< flagprop.judging.checks kind, for the reproducer
  json judging;                     ///< op runs: the catalog entry's judging spec
  double seconds = 0.0;
  /// The run key: "P1", or "P5/op/dtype".
  std::string key() const;
  json toJson() const;
};

/// What one property run needs: which property, the cases, and how to judge
/// one. `judge` returns flagprop.judging.checks' result for a case; the property's
/// verdict in it is read with `verdictOf`.
struct PropertyRun {
  std::string id, title, op, dtype;
  std::string checkKind;  ///< flagprop.judging.checks kind
  json judging;           ///< op runs: the catalog entry's judging spec
  int cases = 100;        ///< default maxSuccess (RunOptions::cases overrides)
  /// Op runs: the target's max_elements; a stored example whose tensors'
  /// storages hold more elements is dropped unbuilt (0: no limit).
  int64_t maxElements = 0;
  rc::Gen<Case> generator = rc::gen::just(Case{});
  std::function<json(const Case&)> judge;
  /// Judges a case again, running it anew where `judge` would answer from
  /// what it remembers of the case (the op runs' shared observations): the
  /// flaky check's judgings. Empty: `judge` runs every case anew.
  std::function<json(const Case&)> judgeAgain;
  /// Op runs: judges `cases`, the cases the search will draw next if each
  /// passes (the first is the case at hand), together where it can
  /// (TargetSession::checkBatch), and keeps their results for `judge` to
  /// answer from; `beforeEach(i)` is called before case i runs. Cases it
  /// already remembers are left out; fewer than two left: it does nothing.
  /// An empty `cases` drops every result still waiting. Returns whether
  /// later batches may follow (false: this run's batches are over, e.g. a
  /// case changed the interpreter's state; the search stops looking ahead).
  /// Throws what a batch's judging throws (a tampered judging). Empty: no
  /// batches.
  std::function<bool(const std::vector<Case>& cases, const std::function<void(size_t)>& beforeEach)> judgeAhead;
  /// Whether `judge` has a result judged ahead waiting for the case.
  std::function<bool(const Case&)> judgedAhead;
  /// Op runs with a control: turns on (true) or off (false) the stock
  /// path's second pass in the op's place for the cases judged meanwhile
  /// (flagprop.engine.ops.observe_case, docs/control.md): around the fresh
  /// judging of a case the op lost the device context on. Empty: none.
  std::function<void(bool)> stockInOpPlace;
  /// Checked first: an outcome that stands instead of running (a skip
  /// because the fast path is not active, an error because the device was
  /// lost), or nullopt.
  std::function<std::optional<PropertyOutcome>()> precondition;
  /// Called after the run with the outcome (e.g. to attach statistics).
  std::function<void(PropertyOutcome&)> finish;
  /// When the run's --run-time clock (RunOptions::runSeconds) started;
  /// unset: when this run starts. The runs of one op and dtype share one
  /// clock (the first one's start), so that P6, which judges P5's cases
  /// again from their observations, stops where P5 stopped instead of
  /// judging new cases with a clock of its own.
  std::function<std::chrono::steady_clock::time_point()> clockStart;
  bool quiet = false;  ///< its outcome goes to the report only, not the console (an excluded op's skip)
  /// How many distinct failures to look for: after a failure, the search
  /// goes on (a new seed) with the kinds already found counted as passes,
  /// and each new kind is shrunk on its own (PropertyOutcome::observations
  /// ["distinct_failures"]). Needs the verdict's "kinds" (op runs).
  int distinct = 1;
  /// RapidCheck's maxDiscardRatio: samples the reference may reject per
  /// case before the run gives up (a health skip). Schema-derived entries
  /// take more: the schema does not say which ranks an op accepts.
  int maxDiscardRatio = 2;
  /// A second source of cases for when `generator` gives up (a health skip:
  /// the reference rejected too many samples), e.g. OpInfo's valid samples
  /// where the schema cannot say what a valid input is.
  struct Fallback {
    /// Names the source in the report ("opinfo") and in the reproduce
    /// string's run key ("P5/mm/float32|opinfo"), so that a replay draws
    /// from the same source.
    std::string name;
    /// How the report says where the cases came from ("OpInfo's samples").
    std::string describes;
    /// The generator, or nullopt with `why` set (one line) when there is none.
    std::function<std::optional<rc::Gen<Case>>(std::string& why)> make;
    /// Whether to start with it: another run of the same cases (P5 before
    /// P6) already fell back; may be empty (never).
    std::function<bool()> first;
    /// Why it starts there, when not because another run fell back (the
    /// report's note); empty: "as in the other runs of these cases".
    std::string firstBecause;
    /// Set when the run is a second try after CPU ATen ended the process
    /// on a schema sample (the crash, one line; observations["retried_after"]).
    std::string retriedAfter;
  };
  std::optional<Fallback> fallback;
  /// A case an earlier target process died on, or lost the device context
  /// on (that result, with its counterexample; observations.crash for a
  /// death): judged first and once in this fresh process, instead of a
  /// search. Dying again is that crash confirmed (the parent records it),
  /// losing the device again is a fail; either is observations.recurred. A
  /// normal failure is a fail; a pass makes the run flaky (failed 1 of 2).
  /// Null: none.
  json confirmCrash;
  /// An explicit example (Hypothesis's `@example`): a named case judged
  /// before any generated one.
  struct Example {
    std::string name;     ///< what it is, for the report: "0-d", "OpInfo sample 3", "beta=0"
    rc::Gen<Case> cases;  ///< gives that case; its shrinks keep what makes it one (the edge, the value)
  };
  /// The run's explicit examples, built when the explicit phase (or a
  /// replay of one) first needs them; each is judged once, before the
  /// search, and does not count against the cases asked for (--cases). The
  /// first that fails is the run's failure, shrunk like any other, its run
  /// key "KEY|explicit:NAME" in the reproduce string. Empty: none.
  std::function<std::vector<Example>()> examples;
  /// Explicit examples not to judge, "*" for every one: CPU ATen (the
  /// reference) ended an earlier process on one of them
  /// (observations.explicit.reference_crashed names it).
  std::vector<std::string> skipExamples;
  /// A flaky result of an earlier target process whose case did not end it
  /// (it failed, then passed when judged again in that process): judged
  /// first and once in this fresh process, instead of a search. Failing is
  /// a fail (the fault recurs in every fresh process); holding keeps it
  /// flaky, its tally one longer; either sets observations.fresh. Null: none.
  json confirmFlaky;
};

/// Whether a result (a targets[].results[] entry) is flaky from judgings in
/// the process that found it only, and so is to be judged once in a fresh
/// process (PropertyRun::confirmFlaky): status flaky, observations.replays,
/// a counterexample, and neither observations.crash nor observations.fresh.
bool wantsFreshJudging(const ResultRecord& result);
/// The same for a result as JSON.
bool wantsFreshJudging(const json& result);

/// How a case that lost the device context begins its reason (op runs):
/// the case is kept unshrunk and the target's later runs go on in a fresh
/// process.
constexpr const char* kDeviceLostReason = "the device context was lost while running this case (unshrunk): ";

/// How the discard of a case begins when the stock path (the control, run
/// before the op) lost the device context on it: the op is not blamed.
constexpr const char* kStockLostReason = "the stock path (the control: FlagGems off) lost the device context";

/// Thrown by a judge to fail a case without replacing the recorded
/// counterexample: an earlier case left the device unusable, so every later
/// case fails the same way and the case that did it is the one to keep.
class StickyFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Whether CPU ATen's rejection of a sample, `why` (a discard reason), is
/// for the run's dtype rather than for the sample's shapes or arguments:
/// no kernel for it ("... not implemented for 'Int'"), a floating, complex
/// or bool op given another dtype ("Expected a floating point or complex
/// tensor", `isComplexType(...)` asserted by `_conj`, `self.scalar_type() ==
/// at::kBool` by `_is_all_true`), a result dtype the input cannot hold
/// (`float_power_` of a float32 self: "the operation's result requires
/// dtype Double"), or a uint8 weight required (`_dyn_quant_pack_4bit_weight`:
/// "expect weight to be kByte"). The messages are LibTorch 1.13's and
/// torch 2.11's; a run whose every sample is so rejected ends "not run in
/// DTYPE", never "gave up".
bool isDtypeRejection(const std::string& why);

/// The verdict {"pass", "reason"} for property `id` in a check result.
json verdictOf(const json& result, const std::string& id);

/// Runs `run` with `opts` on RapidCheck: every case judged, a failure shrunk
/// to a minimal counterexample whose evidence the outcome carries. A Python
/// exception from the harness or the code under test outside the op's own
/// calls is status `error` with reason "harness error: ...". Throws nothing.
PropertyOutcome runProperty(const PropertyRun& run, const RunOptions& opts);

/// An outcome for `run` without running it.
PropertyOutcome outcomeFor(const PropertyRun& run, const std::string& status, const std::string& reason);

/// The run keys a RapidCheck reproduce string holds ("P1", "P5/op/dtype";
/// a fallback's "|name" left out); throws std::invalid_argument (one line) when it is not a reproduce string.
std::vector<std::string> reproduceKeys(const std::string& s);

}  // namespace flagprop
