#include "suites/property.h"

#include "suites/phases.h"

#include <stdexcept>
#include <variant>

namespace flagprop {

void showValue(const Case& c, std::ostream& os) { os << c.value.dump(); }

std::string PropertyOutcome::key() const { return op.empty() ? property : property + "/" + op + "/" + dtype; }

json PropertyOutcome::toJson() const {
  json j = {{"property", property},
            {"title", title},
            {"key", key()},
            {"status", status},
            {"reason", reason},
            {"cases_run", casesRun},
            {"seconds", seconds},
            {"counterexample", counterexample},
            {"counterexample_shown", counterexampleShown},
            {"reproduce", reproduce},
            {"observations", observations}};
  if (!op.empty()) {
    j["op"] = op;
    j["dtype"] = dtype;
  }
  return j;
}

bool wantsFreshJudging(const ResultRecord& result) {
  if (result.status != "flaky" || result.counterexample.is_null()) return false;
  const Observations& obs = result.observations;
  return obs.replays && !obs.crash && !obs.recurred && !obs.fresh && result.reason.rfind(kDeviceLostReason, 0) != 0;
}

bool wantsFreshJudging(const json& result) { return wantsFreshJudging(resultRecord(result)); }

bool isDtypeRejection(const std::string& why) {
  static const char* const kMarks[] = {
      "not implemented for '",
      "Expected a floating point or complex tensor as input",
      "isComplexType(typeMetaToScalarType(dtype()))",
      "self.scalar_type() == at::kBool",
      "but the operation's result requires dtype",
      "expect weight to be kByte",
  };
  for (const char* m : kMarks)
    if (why.find(m) != std::string::npos) return true;
  return false;
}

json verdictOf(const json& result, const std::string& id) {
  if (result.contains("verdicts")) return result.at("verdicts").at(id);
  return {{"pass", result.at("pass")}, {"reason", result.at("reason")}};
}

PropertyOutcome outcomeFor(const PropertyRun& run, const std::string& status, const std::string& reason) {
  PropertyOutcome out;
  out.property = run.id;
  out.title = run.title;
  out.op = run.op;
  out.dtype = run.dtype;
  out.status = status;
  out.reason = reason;
  out.checkKind = run.checkKind;
  out.judging = run.judging;
  out.observations = json::object();
  return out;
}

std::vector<std::string> reproduceKeys(const std::string& s) {
  std::vector<std::string> keys;
  for (const auto& kv : phases::decodeReproduce(s)) keys.push_back(kv.first.substr(0, kv.first.find('|')));
  return keys;
}

namespace {

// A replay: the path of a reproduce string's counterexample, run with no
// shrink budget, no run limit, no flaky replays and no further search.
PropertyOutcome replayProperty(const PropertyRun& run, const RunOptions& opts) {
  phases::ReproduceMap replay;
  try {
    replay = phases::decodeReproduce(opts.reproduce);
  } catch (const std::exception& e) {
    return outcomeFor(run, "error", std::string("malformed reproduce string: ") + e.what());
  }
  const std::string key = outcomeFor(run, "", "").key();
  bool anExample = false;
  for (const auto& kv : replay) anExample |= kv.first.rfind(key + "|" + phases::kExplicit, 0) == 0;
  if (!replay.count(key) && !(run.fallback && replay.count(key + "|" + run.fallback->name)) && !anExample) {
    PropertyOutcome out =
        outcomeFor(run, "skip", "not replayed: the reproduce string holds no counterexample for " + key);
    out.observations["replayed"] = false;
    return out;
  }
  phases::RunState s(run, opts, std::move(replay));
  if (auto early = phases::pickSource(s)) return *early;
  std::string why;
  if (anExample && !phases::replayExample(s, why)) return outcomeFor(run, "error", "cannot replay: " + why);
  auto searched = phases::search(s);
  if (auto* ended = std::get_if<PropertyOutcome>(&searched)) return *ended;
  phases::record(s, std::get<phases::Found>(searched));
  // Judged as many times as the run judged it: a flaky failure replayed is
  // flaky again, not "no longer fails" on one lucky judging.
  if (s.out.status == "fail" && !s.tally.last.caseJson.is_null())
    phases::confirmByReplays(s, s.out, Case{s.tally.last.caseJson}, s.sampler());
  phases::replayAgain(s);
  phases::closeSearch(s);
  s.out.observations["replayed"] = opts.reproduce;
  return s.finish();
}

}  // namespace

// The phases in order (suites/phases.h): each may end the run with its
// outcome; what the search found is settled, then searched for more.
PropertyOutcome runProperty(const PropertyRun& run, const RunOptions& opts) {
  if (run.precondition)
    if (auto early = run.precondition()) return *early;
  if (!opts.reproduce.empty()) return replayProperty(run, opts);
  phases::RunState s(run, opts);
  if (auto early = phases::pickSource(s)) return *early;  // the fallback first, or a retried crash's skip
  if (auto done = phases::confirmCrash(s)) return *done;  // a case an earlier process died on
  if (auto done = phases::confirmFresh(s)) return *done;  // a flaky result of an earlier process
  json db = json::object();
  if (auto done = phases::reuse(s, db)) return *done;  // the example database
  // The explicit examples, then (none failing) generation; shrinking is inside RapidCheck.
  const std::optional<phases::Found> byExample = phases::explicitExamples(s);
  auto searched = byExample ? std::variant<phases::Found, PropertyOutcome>(*byExample) : phases::search(s);
  if (auto* ended = std::get_if<PropertyOutcome>(&searched)) return *ended;
  const phases::Found& found = std::get<phases::Found>(searched);
  phases::record(s, found);
  if (s.out.status == "fail" || s.out.status == "error") phases::noteShrink(s.out, found.shrink);
  if (!db.empty()) s.out.observations["db"] = db;
  if (s.out.status == "fail" && !s.tally.last.caseJson.is_null())
    phases::confirmByReplays(s, s.out, Case{s.tally.last.caseJson}, s.sampler());
  phases::closeSearch(s);
  if (byExample && (s.out.status == "fail" || s.out.status == "flaky" || s.out.status == "error"))
    s.out.reason += "; found by the explicit example " + s.out.observations["explicit"].value("failed", std::string());
  phases::distinct(s);
  s.out.observations["seed"] = std::to_string(s.seed);
  return s.finish();
}

}  // namespace flagprop
