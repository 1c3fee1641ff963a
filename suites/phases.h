// The phases of one property run, over one run state (docs/design.md, "A
// property run"). runProperty (suites/property.h) is their table of
// contents:
//
//   pickSource -> confirmCrash | confirmFresh | reuse -> search (with its
//   shrink gate) -> settle (confirmByReplays) -> distinct -> finish
//
// and replayProperty runs a reproduce string's path: pickSource -> search ->
// settle -> finish. Each phase reads and writes the RunState; the clocks and
// the in-flight record are small objects the state composes (the shrink
// clock is a RapidCheck listener). Declared here for the phases' own unit
// tests (tests/unit/test_phases.cpp); nothing outside suites/ calls them.
#pragma once

#include "suites/property.h"

#include <rapidcheck/detail/Property.h>
#include <rapidcheck/detail/Results.h>
#include <rapidcheck/detail/TestListenerAdapter.h>
#include <rapidcheck/detail/TestParams.h>

#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>

namespace flagprop::phases {

/// A reproduce string decoded: RapidCheck's Reproduce record by run key
/// ("P5/op/dtype", a fallback's "P5/op/dtype|opinfo").
using ReproduceMap = std::unordered_map<std::string, rc::detail::Reproduce>;

/// Decodes a reproduce string; throws std::invalid_argument (one line) when
/// it is not one.
ReproduceMap decodeReproduce(const std::string& s);

/// Why a case failed outside the check's verdict: a Python exception of the
/// harness, a C++ exception, or a StickyFailure (`sticky`: the recorded
/// counterexample stays).
struct CaseFailure {
  std::string why;
  json evidence;
  bool sticky = false;
};

/// The last failure a search recorded (shrinking ends on the last failing
/// case, so after the search it is the shrunk counterexample).
struct LastFailure {
  json caseJson;
  json evidence;
  std::string why;
  json kinds = json::array();  ///< the verdict's finding kinds, where it gives them
};

/// Samples the property discarded (the reference rejects them): how many,
/// and the first reason.
struct Discards {
  int count = 0;
  std::string first;
};

/// The files that tell a parent which case is in flight
/// (RunOptions::inflightPath, ::stagePath): written before a case, emptied
/// when it ends however it ends, so that a crash or stall between cases is
/// never put on the last case. An empty path is not touched.
class InflightRecord {
 public:
  InflightRecord(std::string inflightPath, std::string stagePath);
  /// Before a case: the stage file emptied, then {"key", "case", "sampler"?,
  /// extra's keys} written. Throws FileError when a file cannot be written.
  void begin(const std::string& key, const json& caseJson, const std::string& sampler, const json& extra) const;
  /// After a case: the in-flight record emptied; never throws.
  void end() const noexcept;

 private:
  std::string inflightPath_, stagePath_;
};

/// The op calls a target process judged, in order: one JSON line each,
/// {"key": run key, "kind": check kind, "case": the case, "judging": the
/// catalog entry's judging spec}, appended to RunOptions::historyPath as
/// each case starts. A failure that does not recur alone in a fresh process
/// is searched for the earlier calls it needs (tools/confirm.h). One log per
/// path and process; the file is emptied when this process first writes it.
class HistoryLog {
 public:
  /// The log of `path` in this process (made on first use).
  static HistoryLog& of(const std::string& path);
  /// Appends one call; a write that fails stops the log (calls() then
  /// stays where it was and broken() is true), never the run.
  void append(const std::string& key, const std::string& kind, const json& caseJson, const json& judging);
  /// Calls written so far.
  size_t calls() const { return calls_; }
  bool broken() const { return broken_; }
  const std::string& path() const { return path_; }

 private:
  explicit HistoryLog(std::string path) : path_(std::move(path)) {}
  std::string path_;
  size_t calls_ = 0;
  bool started_ = false, broken_ = false;
};

/// The shrinking of one RapidCheck search, and the listener RapidCheck tells
/// of each shrink candidate it tried. RapidCheck runs the property body
/// again on cases it has judged (the current smallest, to draw its shrinks;
/// the final counterexample, once more; a replay's path), so the body tracks
/// the current smallest failing case itself (`best`): past the budget, that
/// case fails again unjudged and every other candidate is discarded, which
/// RapidCheck never accepts as a shrink.
struct ShrinkClock : rc::detail::TestListenerAdapter {
  std::optional<std::chrono::steady_clock::time_point> since;  ///< the search's first failure
  json best;                                                   ///< the case of the last failure
  std::string bestWhy;
  int tried = 0, accepted = 0, discarded = 0;  ///< candidates tried, taken, discarded unjudged
  bool stopped = false;
  bool byRunTime = false;  ///< stopped by the run's own limit, not the shrink budget

  void onShrinkTried(const rc::detail::CaseDescription&, bool ok) override;
  /// Whether `budget` s (-1: none) have passed since the first failure.
  bool over(int budget) const;
  /// The body is about to fail on `c` with `why`.
  void failing(const json& c, const std::string& why);
  /// {"tried", "accepted", "discarded", "seconds", "stopped", "budget_s"?,
  /// "by"?} of the search that just ended (null when it found no failure);
  /// the clock starts anew.
  json take(int budget);
};

/// The run's own limit (RunOptions::runSeconds, s) on the clock its op and
/// dtype share (PropertyRun::clockStart). Started by the search phase.
struct RunClock {
  std::optional<std::chrono::steady_clock::time_point> start;
  int limitSeconds = -1;  ///< -1: no limit (always on a replay)
  /// Whether the limit has passed.
  bool past() const;
};

/// What the searches of one run have counted.
struct SearchTally {
  LastFailure last;
  Discards discards;
  std::set<std::string> known;  ///< kinds of the failures already recorded
  int judged = 0;               ///< cases handed to the judge (the progress count)
  int held = 0;                 ///< cases that held
  int judgedHere = 0;           ///< cases that held or failed (not discards) in this search
  /// Samples CPU ATen rejected for their dtype while none was accepted.
  int dtypeRejected = 0;
  bool timeUp = false;  ///< the run's limit discarded a case unjudged
  json lastJudged;      ///< the case judged last (a replay's, judged again when it held)
  /// Samples rejected for their dtype before the run stops judging.
  static constexpr int kDtypeRejections = 3;
  /// Whether CPU ATen takes no sample in this dtype: kDtypeRejections
  /// rejections, all for the dtype, and none held.
  bool dtypeRefused() const;
};

/// A further failure an explicit example found, of kinds the first did not
/// have: settled by the distinct phase before it searches for more.
struct MoreFailure;

/// One property run's state, which its phases share.
/// The cases a RapidCheck search will draw next if each of them passes, so
/// that a run can judge several in one trip (PropertyRun::judgeAhead).
/// RapidCheck's search (rc::detail::searchProperty, src/detail/Testing.cpp)
/// draws attempt n from the nth split of Random(params.seed), at the size
/// sizeFor(params, successes so far) + (discards since the last success) / 10;
/// this mirrors that loop, told how each attempt ended. It checks itself:
/// an attempt that did not draw the case it predicted turns it off (on()
/// false) for the rest of the search, so a wrong guess costs time, never a
/// verdict. Assumes the property draws from `gen` first (judgeGenerated).
class Lookahead {
 public:
  Lookahead(rc::Gen<Case> gen, const rc::detail::TestParams& params);
  /// Whether it still follows the search.
  bool on() const { return on_; }
  void off() { on_ = false; }
  /// The attempt at hand drew `c`: false (and off) when that is not the
  /// case predicted for it, or the attempt before it never said how it ended.
  bool at(const json& c);
  /// The attempt at hand ended: it passed (true) or was discarded (false).
  void ended(bool passed);
  /// The cases of the next attempts from the one at hand, as drawn if each
  /// passes: at most n, and no more than the search has successes left to
  /// make. Empty (and off) when the generator throws.
  std::vector<Case> next(int n);

 private:
  json drawAt(size_t attempt, int size);
  rc::Gen<Case> gen_;
  rc::detail::TestParams params_;
  rc::Random random_;
  std::vector<rc::Random> splits_;  // the split of each attempt so far, in order
  size_t attempt_ = 0;
  int successes_ = 0, recent_ = 0;
  std::deque<json> predicted_;  // for attempts attempt_, attempt_ + 1, ... under successes_ / recent_
  bool on_ = true, pending_ = false;
};

struct RunState {
  /// `replay` is the decoded reproduce string (empty on a search).
  RunState(const PropertyRun& run, const RunOptions& opts, ReproduceMap replay = {});
  /// The state keeps references to `run` and `opts`: temporaries would dangle.
  RunState(const PropertyRun& run, RunOptions&& opts, ReproduceMap replay = {}) = delete;
  RunState(PropertyRun&& run, const RunOptions& opts, ReproduceMap replay = {}) = delete;

  const PropertyRun& run;
  const RunOptions& opts;
  const ReproduceMap replay;
  const bool replaying;  ///< a reproduce string's path, not a search
  PropertyOutcome out;
  const std::chrono::steady_clock::time_point t0;
  rc::detail::TestParams params;
  const uint64_t seed;          ///< the first search's seed (params.seed moves on per distinct search)
  rc::detail::TestMetadata md;  ///< md.id: the run key, "|" and a fallback's name when drawing from it
  rc::Gen<Case> generator;
  std::string fallbackNote;  ///< "; cases from ..." or "; no fallback: ..."
  InflightRecord inflight;
  ShrinkClock shrink;
  const int shrinkBudget;  ///< s; -1: none (always on a replay)
  RunClock clock;
  SearchTally tally;
  std::vector<MoreFailure> explicitMore;  ///< explicitExamples' further failures
  /// The search's lookahead (RunOptions::batch > 1 and a run with
  /// PropertyRun::judgeAhead, on a search that is not a replay); reset when
  /// it stops following the search.
  std::optional<Lookahead> ahead;
  /// Set for the case at hand when its judging was made in a batch ahead
  /// (logged in the history then): judgeOnce does not log it again.
  bool judgedAhead = false;

  /// Judges `c` once with the in-flight record around it (`again`: through
  /// PropertyRun::judgeAgain). Never throws: an exception is a CaseFailure.
  std::variant<json, CaseFailure> judgeOnce(const Case& c, const std::string& sampler, const json& extra,
                                            bool again = false);
  /// One judging of a case from an earlier process: its failure (why empty:
  /// it held or was discarded).
  LastFailure judgeFirst(const Case& c, const std::string& sampler, const json& extra);
  /// What `judgeFirst` makes of a judging of `c` (`judgeOnce`'s answer).
  LastFailure failureOf(const Case& c, const std::variant<json, CaseFailure>& judged) const;
  /// The source the search draws from now: "" (the generator) or the
  /// fallback's name.
  std::string sampler() const;
  /// Draws from the fallback from now on; false (fallbackNote says why)
  /// when it has no generator.
  bool useFallback(const std::string& because);
  /// A failure's evidence and kinds copied into out.observations.
  void takeEvidence(const LastFailure& failure);
  /// Whether the run's limit has passed once something was judged or a
  /// failure is being shrunk.
  bool runOver() const;
  /// out with its seconds, after PropertyRun::finish.
  PropertyOutcome finish();
};

/// Source: the fallback drawn from the start (a replay of its key, or
/// another run of these cases fell back); a run retried after CPU ATen
/// ended the process on a schema sample is a skip when it cannot fall back.
/// An outcome ends the run.
std::optional<PropertyOutcome> pickSource(RunState& s);

/// Confirm: a case an earlier target process died on (or lost the device
/// on), judged once in this fresh one (PropertyRun::confirmCrash). An
/// outcome when there was one.
std::optional<PropertyOutcome> confirmCrash(RunState& s);

/// Confirm: a flaky result of an earlier target process, judged first in
/// this fresh one (PropertyRun::confirmFlaky). An outcome when there was one.
std::optional<PropertyOutcome> confirmFresh(RunState& s);

/// Reuse: the example database's stored cases (RunOptions::examples),
/// judged before any case is generated. The first that still fails is the
/// outcome; otherwise `db` gets {"replayed", "fixed", "dropped"} (left
/// empty when nothing is stored).
std::optional<PropertyOutcome> reuse(RunState& s, json& db);

/// One generated case inside RapidCheck's property: the shrink gate, the
/// run's limit, the judging and its verdict (RC_DISCARD / RC_FAIL).
void judgeGenerated(RunState& s);

/// Batch: before the case at hand `c` is judged, the cases the search will
/// draw next (s.ahead) judged together with it through
/// PropertyRun::judgeAhead, each with the in-flight record and history log
/// entry a case gets; a failure that came of the batch itself (the judging
/// was tampered with) as the case at hand's harness error, batching then off
/// for the run. Nothing when s.ahead is off or the case has a result waiting.
std::optional<CaseFailure> judgeAhead(RunState& s, const Case& c);

/// Stops s.ahead and drops the results judged ahead that no attempt took.
void stopAhead(RunState& s);

/// One RapidCheck search over s.generator (with s.replay when replaying).
rc::detail::TestResult searchOnce(RunState& s);

/// What the search phase found: RapidCheck's result and the shrinking of
/// its failure (ShrinkClock::take), and the run key it searched under
/// (md.id: "KEY", "KEY|opinfo", "KEY|explicit:NAME").
struct Found {
  rc::detail::TestResult result;
  json shrink;
  std::string id;
};

struct MoreFailure {
  Found found;
  LastFailure last;
  std::string example;  ///< the explicit example's name
};

/// The prefix of an explicit example's source in a run key: "KEY|explicit:NAME".
constexpr const char* kExplicit = "explicit:";

/// Explicit: every explicit example of the run (PropertyRun::examples),
/// each judged once before the search, under the run's clock; the first
/// that fails is returned, shrunk (its `id` names it), and the examples
/// after it are still judged, a failure of other kinds kept in
/// s.explicitMore for the distinct phase. Sets
/// out.observations.explicit = {"examples", "held", "not_applicable",
/// "failed"?}; the search's own generator and run key are put back.
std::optional<Found> explicitExamples(RunState& s);

/// The case each explicit example of `run` is first judged on, drawn as the
/// explicit phase draws it: the same example list (less skipExamples, at
/// most opts.explicitCases), the same per-example seed from opts.seed and
/// the same RapidCheck parameters, so that the first draw is the very case
/// the phase judges first (a draw the reference rejects is followed by
/// others, which this does not give). With opts.seed 0 (never from
/// `flagprop run`, which fixes one) every run draws a seed of its own, so
/// these are cases of the same kinds, not the same cases. For compiling ahead (precompileCases). Each value is a case's
/// JSON (Case::value), in the examples' order. Empty when the run has no
/// examples or opts.explicitCases is 0; an example whose generator throws
/// is left out. Throws what run.examples() throws.
std::vector<json> explicitFirstDraws(const PropertyRun& run, const RunOptions& opts);

/// Replay: the explicit example a reproduce string names ("KEY|explicit:NAME"),
/// drawn from (generator and run key); false when it names none or the run
/// has no such example (`why` says which).
bool replayExample(RunState& s, std::string& why);

/// Search: generation, falling back to PropertyRun::fallback when the
/// generator gives up. Either what was found, or an outcome that ends the
/// run (CPU ATen takes no sample in the dtype).
std::variant<Found, PropertyOutcome> search(RunState& s);

/// Settle, first half: RapidCheck's result into s.out (and a search the
/// run's limit ended: a pass on what held).
void record(RunState& s, const Found& found);

/// Shrink's note: what shrinking did, on a failing outcome.
void noteShrink(PropertyOutcome& o, const json& shrink);

/// Flaky check: a failing case judged RunOptions::flakyReplays more times;
/// one that passes any of them makes `o` flaky, with the tally.
void confirmByReplays(RunState& s, PropertyOutcome& o, const Case& c, const std::string& sampler);

/// Replay's flaky check: a replayed case that held is judged
/// RunOptions::flakyReplays more times, as the run that found it judged its
/// failure; failing on any of them makes the outcome flaky with its tally.
void replayAgain(RunState& s);

/// Settle, last half: the source's note, retried_after, discarded.
void closeSearch(RunState& s);

/// Distinct: further searches (new seeds) with the kinds found so far
/// counted as passes, each new kind shrunk and confirmed on its own;
/// observations.distinct_failures / flaky_distinct.
void distinct(RunState& s);

}  // namespace flagprop::phases
