// Typed records of report.json's results (schemas/report.schema.json): what
// the C++ readers of a result take from it (the renderers in
// reports/report.cpp, the example database, a resumed target process), read
// once by from_json instead of a key lookup at each use. In core/: results
// cross every layer above it. The writer's
// side is PropertyOutcome::toJson (suites/property.h) and the Python
// observers; a test round-trips the two (Records.*).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// How a failure was shrunk (observations.shrink, written by
/// suites/property.cpp): candidates tried, accepted (smaller and still
/// failing) and discarded unjudged past the budget; seconds spent; whether
/// the --shrink-time budget (budget_s, s; -1 none) stopped it.
struct ShrinkTally {
  int tried = 0, accepted = 0, discarded = 0;
  double seconds = 0.0;
  bool stopped = false;
  double budget_s = -1.0;
};

/// A failing case judged again (observations.replays): failed `failed` of
/// `of` judgings.
struct ReplayTally {
  int failed = 0, of = 0;
};

/// One distinct failure after a result's first (observations.distinct_failures[]).
struct DistinctFailure {
  std::string reason, reproduce, replay, reproducer;
  json counterexample;
  json kinds = json::array();          ///< the verdict's failure kinds
  json observations = json::object();  ///< its own evidence, as written
  ShrinkTally shrink;                  ///< its observations.shrink
};

/// What the example database said of a run (observations.db): how many
/// stored examples it replayed, the one still failing (null: none), those
/// that pass now (fixed) and those no longer a case (dropped), each
/// {stored_at, stored_in, file, reason | why}.
struct DbNote {
  int replayed = 0;
  json stillFailing;  ///< {stored_at, file, ...} or null
  std::vector<json> fixed, dropped;
};

/// The observations of a result that flagprop's C++ half reads. The rest
/// (the property's own evidence: numerics, calls, kernels, timing, ...) is
/// in `raw`, the object as written.
struct Observations {
  json raw = json::object();
  std::optional<ShrinkTally> shrink;
  std::optional<ReplayTally> replays;
  std::optional<DbNote> db;
  std::vector<DistinctFailure> distinctFailures;
  long compilations = 0;  ///< Triton compilations (observations.stats.compilations)
  /// The seconds its executed cases spent in the op under test (its calls,
  /// Triton compiling included, and the copies of its outputs), in CPU
  /// ATen's reference and in flagprop itself: cases_executed x us_per_case x
  /// share of observations.stats; 0 where a result has no stats.
  double opSeconds = 0, referenceSeconds = 0, harnessSeconds = 0;
  int discarded = 0;  ///< drawn cases the reference rejected
  /// How the target process died on the case (observations.crash: "target
  /// process died with signal 11 ...", "... timed out ..."); nullopt: it did not.
  std::optional<std::string> crash;
  std::string
      crashIn;  ///< where it died: "reference" (CPU ATen), "control" (the stock path) or the op (observations.crash_in)
  std::string sampler;    ///< the source of the case when not the schema's ("opinfo")
  bool retried = false;   ///< its runs went again from the fallback (observations.retried_after)
  bool fresh = false;     ///< judged again first in a fresh process
  bool recurred = false;  ///< a crash or lost device that recurred in a fresh process
  bool as = false;        ///< judged as another property's result (observations.as), not on its own
  /// The shrinking of the result and of its distinct failures, s.
  double shrinkSeconds() const;
};

/// One entry of targets[].results[]: as PropertyOutcome::toJson writes it,
/// with what mergeReport and the supervisor add (expected, as_expected,
/// replay, reproducer, plot and their errors).
struct ResultRecord {
  std::string key, property, title, op, dtype, status, reason;
  int casesRun = 0;
  double seconds = 0.0;  ///< the run's wall time, s
  json counterexample;   ///< the shrunk case, or null
  std::string reproduce, replay, reproducer, plot, reproducerError, plotError;
  Observations observations;
  std::optional<std::string> expected;  ///< mergeReport's: a status or "pass or skip"
  std::optional<bool> asExpected;       ///< mergeReport's
  bool hasOp() const { return !op.empty(); }
  bool failed() const { return status == "fail" || status == "flaky" || status == "error"; }
  /// The run key --property takes to replay it (key, else property).
  std::string replayId() const { return key.empty() ? property : key; }
};

/// nlohmann's from_json for each record, written by hand for leniency:
/// `j` is read field by field, and a key that is absent, null or of a type
/// that does not convert to the field's keeps the field's default, so that
/// one odd value in a result never costs a run its report.
void from_json(const json& j, ShrinkTally& s);
void from_json(const json& j, ReplayTally& r);
void from_json(const json& j, DistinctFailure& d);
void from_json(const json& j, DbNote& d);
void from_json(const json& j, Observations& o);
void from_json(const json& j, ResultRecord& r);

/// `j` as a ResultRecord (j.get<ResultRecord>()).
ResultRecord resultRecord(const json& j);

/// The results of target document `t` (its `results`, none when absent) as
/// records, in order; entries that are not objects are left out.
std::vector<ResultRecord> resultRecords(const json& t);

}  // namespace flagprop
