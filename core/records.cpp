#include "core/records.h"

#include <algorithm>
#include <utility>

namespace flagprop {

namespace {
// Reads j[key] into `out` when j is an object that has the key, not null
// and of a type that converts to T (nested records convert field by
// field); returns whether it did (else `out` is left as it is).
template <class T>
bool readField(const json& j, const char* key, T& out) {
  if (!j.is_object()) return false;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  try {
    out = it->template get<T>();
    return true;
  } catch (const json::type_error&) {  // another type: the default stands
    return false;
  }
}

template <class T>
void field(const json& j, const char* key, T& out) {
  readField(j, key, out);
}

template <class T>
void field(const json& j, const char* key, std::optional<T>& out) {
  T value{};
  if (readField(j, key, value)) out = std::move(value);
}

const json& objectAt(const json& j, const char* key) {
  static const json empty = json::object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}
}  // namespace

void from_json(const json& j, ShrinkTally& s) {
  field(j, "tried", s.tried);
  field(j, "accepted", s.accepted);
  field(j, "discarded", s.discarded);
  field(j, "seconds", s.seconds);
  field(j, "stopped", s.stopped);
  field(j, "budget_s", s.budget_s);
}

void from_json(const json& j, ReplayTally& r) {
  field(j, "failed", r.failed);
  field(j, "of", r.of);
}

double Observations::shrinkSeconds() const {
  double s = shrink ? shrink->seconds : 0.0;
  for (const auto& d : distinctFailures) s += d.shrink.seconds;
  return s;
}

void from_json(const json& j, DistinctFailure& d) {
  field(j, "reason", d.reason);
  field(j, "reproduce", d.reproduce);
  field(j, "replay", d.replay);
  field(j, "reproducer", d.reproducer);
  field(j, "counterexample", d.counterexample);
  field(j, "kinds", d.kinds);
  d.observations = objectAt(j, "observations");
  field(d.observations, "shrink", d.shrink);
}

void from_json(const json& j, DbNote& d) {
  field(j, "replayed", d.replayed);
  field(j, "still_failing", d.stillFailing);
  field(j, "fixed", d.fixed);
  field(j, "dropped", d.dropped);
}

void from_json(const json& j, Observations& o) {
  if (!j.is_object()) return;
  o.raw = j;
  field(j, "shrink", o.shrink);
  field(j, "replays", o.replays);
  field(j, "db", o.db);
  field(j, "distinct_failures", o.distinctFailures);
  const json& stats = objectAt(j, "stats");
  field(stats, "compilations", o.compilations);
  double cases = 0, usPerCase = 0;
  field(stats, "cases_executed", cases);
  field(stats, "us_per_case", usPerCase);
  const json& share = objectAt(stats, "share");
  for (const auto& [key, seconds] : {std::pair<const char*, double*>{"device_op", &o.opSeconds},
                                     {"reference", &o.referenceSeconds},
                                     {"harness", &o.harnessSeconds}}) {
    double part = 0;
    field(share, key, part);
    *seconds = std::max(0.0, cases * usPerCase * part / 1e6);
  }
  field(j, "discarded", o.discarded);
  field(j, "crash", o.crash);
  field(j, "crash_in", o.crashIn);
  field(j, "sampler", o.sampler);
  o.retried = j.contains("retried_after");
  o.fresh = j.contains("fresh");
  o.recurred = j.contains("recurred");
  o.as = j.contains("as");
}

void from_json(const json& j, ResultRecord& r) {
  field(j, "key", r.key);
  field(j, "property", r.property);
  field(j, "title", r.title);
  field(j, "op", r.op);
  field(j, "dtype", r.dtype);
  field(j, "status", r.status);
  field(j, "reason", r.reason);
  field(j, "cases_run", r.casesRun);
  field(j, "seconds", r.seconds);
  field(j, "counterexample", r.counterexample);
  field(j, "reproduce", r.reproduce);
  field(j, "replay", r.replay);
  field(j, "reproducer", r.reproducer);
  field(j, "plot", r.plot);
  field(j, "reproducer_error", r.reproducerError);
  field(j, "plot_error", r.plotError);
  field(j, "observations", r.observations);
  field(j, "expected", r.expected);
  field(j, "as_expected", r.asExpected);
}

ResultRecord resultRecord(const json& j) { return j.get<ResultRecord>(); }

std::vector<ResultRecord> resultRecords(const json& t) {
  std::vector<ResultRecord> out;
  const auto it = t.find("results");
  if (it == t.end() || !it->is_array()) return out;
  for (const auto& r : *it)
    if (r.is_object()) out.push_back(r.get<ResultRecord>());
  return out;
}

}  // namespace flagprop
