#include "suites/property.h"

#include "core/files.h"

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <variant>

namespace flagprop {

void showValue(const Case& c, std::ostream& os) { os << c.value.dump(); }

namespace {

using ReproduceMap = std::unordered_map<std::string, rc::detail::Reproduce>;
const std::string kReproducePrefix = "reproduce=";

// A reproduce string through RapidCheck's public configuration API: the
// value of the `reproduce` key of a configuration string.
std::string encodeReproduce(const std::string& key, const rc::detail::Reproduce& r) {
  rc::detail::Configuration config;
  config.reproduce.emplace(key, r);
  const std::string s = rc::detail::configToMinimalString(config);
  const auto at = s.find(kReproducePrefix);
  if (at == std::string::npos) return "";
  const auto from = at + kReproducePrefix.size();
  return s.substr(from, s.find_first_of(" \t", from) - from);  // the string holds other keys (seed=...) too
}

ReproduceMap decodeReproduce(const std::string& s) {
  if (s.empty() || s.find_first_of(" \t\r\n=") != std::string::npos)
    throw std::invalid_argument("not a reproduce string (it holds spaces or '=')");
  try {
    return rc::detail::configFromString(kReproducePrefix + s).reproduce;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("not a reproduce string (") + e.what() + ")");
  }
}

uint64_t freshSeed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

// The distribution of passing cases by tag, sorted by class, e.g.
// [{"class": "active", "cases": 41}, {"class": "reported-skip", "cases": 50}].
json distribution(const rc::detail::Distribution& d) {
  std::map<std::string, int> byClass;
  for (const auto& [tags, count] : d) {
    std::string k;
    for (auto t : tags) {
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);  // RC_TAG quotes strings
      if (!t.empty()) k += (k.empty() ? "" : ",") + t;
    }
    byClass[k.empty() ? "untagged" : k] += count;
  }
  json out = json::array();
  for (const auto& [k, n] : byClass) out.push_back({{"class", k}, {"cases", n}});
  return out;
}

// What the body recorded on its latest failure: the shrunk counterexample,
// because shrinking ends on the last failing case.
struct LastFailure {
  json caseJson;
  json evidence;
  std::string why;
  json kinds = json::array();  // the verdict's finding kinds, where it gives them
};

}  // namespace

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
  for (const auto& kv : decodeReproduce(s)) keys.push_back(kv.first.substr(0, kv.first.find('|')));
  return keys;
}

namespace {

// Samples the property discarded (the reference rejects their arguments):
// how many, and the first reason.
struct Discards {
  int count = 0;
  std::string first;
};

// The shrinking of one RapidCheck search, and the listener RapidCheck
// tells of each shrink candidate it tried. RapidCheck runs the property
// body again on cases it has judged (the current smallest, to draw its
// shrinks; the final counterexample, once more; a replay's path), so the
// body tracks the current smallest failing case itself (`best`): past the
// budget, that case fails again unjudged and every other candidate is
// discarded, which RapidCheck never accepts as a shrink.
struct ShrinkClock : rc::detail::TestListenerAdapter {
  std::optional<std::chrono::steady_clock::time_point> since;  // the search's first failure
  json best;                                                   // the case of the last failure RapidCheck was told
  std::string bestWhy;
  int tried = 0, accepted = 0, discarded = 0;  // candidates tried, taken, discarded unjudged (the budget)
  bool stopped = false;
  bool byRunTime = false;  // stopped by the run's own limit (RunOptions::runSeconds), not the shrink budget

  void onShrinkTried(const rc::detail::CaseDescription&, bool ok) override {
    ++tried;
    accepted += ok ? 1 : 0;
  }
  // Whether `budget` s (-1: none) have passed since the first failure.
  bool over(int budget) const {
    return since && budget >= 0 && std::chrono::steady_clock::now() - *since >= std::chrono::seconds(budget);
  }
  // The body is about to fail on `c` with `why`.
  void failing(const json& c, const std::string& why) {
    if (!since) since = std::chrono::steady_clock::now();
    best = c;
    bestWhy = why;
  }
  // {"tried", "accepted", "discarded", "seconds", "stopped", "budget_s"} of
  // the search that just ended (null when it found no failure); the clock
  // starts anew.
  json take(int budget) {
    json j;
    if (since) {
      j = {{"tried", tried},
           {"accepted", accepted},
           {"discarded", discarded},
           {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - *since).count()},
           {"stopped", stopped}};
      if (budget >= 0) j["budget_s"] = budget;
      if (byRunTime) j["by"] = "run-time";
    }
    since.reset();
    best = json();
    bestWhy.clear();
    tried = accepted = discarded = 0;
    stopped = byRunTime = false;
    return j;
  }
};

// Puts what shrinking did into a failing outcome; when the budget stopped
// it, the reason says the counterexample may not be the smallest.
void noteShrink(PropertyOutcome& o, const json& shrink) {
  if (shrink.is_null()) return;
  o.observations["shrink"] = shrink;
  if (shrink.value("stopped", false) && shrink.value("by", std::string()) == "run-time")
    o.reason += " (shrinking stopped when the run's --run-time ran out, " +
                std::to_string(shrink.value("accepted", 0)) +
                " smaller failing case(s) found: the counterexample may not be the smallest)";
  else if (shrink.value("stopped", false))
    o.reason += " (shrinking stopped after " + std::to_string(shrink.value("budget_s", 0)) + " s (--shrink-time), " +
                std::to_string(shrink.value("accepted", 0)) +
                " smaller failing case(s) found: the counterexample may not be the smallest)";
}

// A search that the run's own limit (RunOptions::runSeconds) ended before
// it found a failure: a pass on the `held` cases (of `asked`), or a health
// skip when none was judged; observations.run_time says so.
void noteRunTime(PropertyOutcome& o, int held, int asked, int limit, const Discards& discards) {
  o.observations["run_time"] = {{"limit_s", limit}, {"held", held}, {"asked", asked}};
  const std::string why = "the run's --run-time of " + std::to_string(limit) + " s ran out";
  if (held > 0) {
    o.status = "pass";
    o.casesRun = held;
    o.reason = std::to_string(held) + " of the " + std::to_string(asked) + " generated cases asked for held (" + why +
               " before the others ran)";
  } else {
    o.status = "skip";
    o.reason = "health: " + why + " before a case was judged" +
               (discards.count > 0 ? " (" + std::to_string(discards.count) +
                                         " samples discarded: " + discards.first.substr(0, 200) + ")"
                                   : std::string());
  }
}

// Fills `out` from RapidCheck's result.
void record(PropertyOutcome& out, const rc::detail::TestResult& result, const LastFailure& last,
            const Discards& discards, const std::string& id) {
  if (result.template is<rc::detail::SuccessResult>()) {
    const auto& s = result.template get<rc::detail::SuccessResult>();
    out.casesRun = s.numSuccess;
    out.status = s.numSuccess > 0 ? "pass" : "skip";  // nothing judged is no pass
    out.reason = s.numSuccess > 0 ? std::to_string(s.numSuccess) + " generated cases held" : "no case ran";
    if (discards.count > s.numSuccess)  // Hypothesis's "filter too much" health check
      out.reason += "; health: " + std::to_string(discards.count) + " samples discarded (" + discards.first + ")";
    out.observations["distribution"] = distribution(s.distribution);
  } else if (result.template is<rc::detail::FailureResult>()) {
    const auto& f = result.template get<rc::detail::FailureResult>();
    out.casesRun = f.numSuccess + 1;
    out.reason = last.why.empty() ? f.description : last.why;
    out.status = out.reason.rfind("harness error:", 0) == 0 ? "error" : "fail";
    out.counterexample = last.caseJson;
    for (const auto& [type, value] : f.counterExample) out.counterexampleShown += value;
    out.reproduce = encodeReproduce(id, f.reproduce);
    if (last.evidence.is_object())
      for (auto it = last.evidence.begin(); it != last.evidence.end(); ++it) out.observations[it.key()] = it.value();
    if (!last.kinds.empty()) out.observations["kinds"] = last.kinds;  // what told it apart from other failures
  } else if (result.template is<rc::detail::GaveUpResult>()) {
    const auto& g = result.template get<rc::detail::GaveUpResult>();
    out.casesRun = g.numSuccess;
    out.status = "skip";
    out.reason = "health: gave up after " + std::to_string(g.numSuccess) + " cases, " + std::to_string(discards.count) +
                 " samples discarded (" + (discards.first.empty() ? g.description : discards.first) + ")";
  } else if (result.template is<rc::detail::Error>()) {
    out.status = "error";
    out.reason = result.template get<rc::detail::Error>().description;
    if (out.reason.find("Reproduced result is not a failure") != std::string::npos) {
      out.status = "pass";  // a replay of a counterexample that no longer fails: fixed
      out.reason =
          "replayed: the counterexample no longer fails (on this target; a string replays the case of "
          "the run it came from, so give that run's --manifest)";
    }
  }
}

}  // namespace

PropertyOutcome runProperty(const PropertyRun& run, const RunOptions& opts) {
  if (run.precondition)
    if (auto early = run.precondition()) return *early;
  PropertyOutcome out = outcomeFor(run, "", "");
  ReproduceMap replay;
  if (!opts.reproduce.empty()) {
    try {
      replay = decodeReproduce(opts.reproduce);
    } catch (const std::exception& e) {
      return outcomeFor(run, "error", std::string("malformed reproduce string: ") + e.what());
    }
    if (!replay.count(out.key()) && !(run.fallback && replay.count(out.key() + "|" + run.fallback->name))) {
      out = outcomeFor(run, "skip", "not replayed: the reproduce string holds no counterexample for " + out.key());
      out.observations["replayed"] = false;
      return out;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  rc::detail::TestParams params;
  params.maxSuccess = opts.cases > 0 ? opts.cases : run.cases;
  params.maxSize = opts.maxSize;
  params.maxDiscardRatio = run.maxDiscardRatio;
  params.seed = opts.seed ? opts.seed : freshSeed();
  rc::detail::TestMetadata md;
  md.id = out.key();
  md.description = run.title;
  rc::Gen<Case> generator = run.generator;
  // Cases from the fallback: on a replay of its key, where another run of
  // the same cases fell back, or (below) once the generator gives up.
  std::string fallbackNote;
  auto useFallback = [&](const std::string& because) {
    std::string why;
    auto g = run.fallback->make(why);
    if (!g) {
      fallbackNote = "; no fallback: " + why;
      return false;
    }
    generator = *g;
    md.id = out.key() + "|" + run.fallback->name;
    out.observations["sampler"] = run.fallback->name;
    fallbackNote = "; cases from " + run.fallback->describes + because;
    return true;
  };
  if (run.fallback) {
    const bool replayed = !opts.reproduce.empty() && replay.count(out.key() + "|" + run.fallback->name);
    if ((replayed || (opts.reproduce.empty() && run.fallback->first && run.fallback->first())) &&
        !useFallback(replayed                              ? ""
                     : !run.fallback->firstBecause.empty() ? run.fallback->firstBecause
                                                           : " (as in the other runs of these cases)") &&
        replayed)
      return outcomeFor(run, "error", "cannot replay: the string draws from " + run.fallback->describes + fallbackNote);
    if (!run.fallback->retriedAfter.empty() && md.id == out.key()) {  // the schema's samples would crash it again
      out = outcomeFor(run, "skip",
                       "health: CPU ATen (the reference) ended the process (" + run.fallback->retriedAfter +
                           ") on a generated case; the op was not judged" + fallbackNote);
      out.observations["crash_in"] = "reference";
      out.observations["retried_after"] = run.fallback->retriedAfter;
      return out;
    }
  }
  // One case judged, its in-flight record written first and emptied after:
  // the check's result, or why the case failed outside the check.
  struct CaseFailure {
    std::string why;
    json evidence;
    bool sticky = false;  // a StickyFailure: the recorded counterexample stays
  };
  auto judgeOnce = [&](const Case& c, const std::string& sampler, const json& extra,
                       bool again = false) -> std::variant<json, CaseFailure> {
    if (!opts.stagePath.empty()) overwriteFile(opts.stagePath, "");
    if (!opts.inflightPath.empty()) {
      json fly = {{"key", out.key()}, {"case", c.value}};
      if (!sampler.empty()) fly["sampler"] = sampler;
      for (auto it = extra.begin(); it != extra.end(); ++it) fly[it.key()] = it.value();
      overwriteFile(opts.inflightPath, fly.dump());
    }
    // Emptied when the case ends however it ends: a crash or a stall
    // between cases is never put on the last case.
    struct Landed {
      const std::string& path;
      ~Landed() {
        if (!path.empty()) try {
            overwriteFile(path, "");
          } catch (...) {
          }
      }
    } landed{opts.inflightPath};
    try {
      return again && run.judgeAgain ? run.judgeAgain(c) : run.judge(c);
    } catch (const StickyFailure& e) {
      return CaseFailure{e.what(), json::object(), true};
    } catch (const py::error_already_set& e) {
      return CaseFailure{"harness error: " + describe(e), {{"harness_error", e.what()}}};
    } catch (const std::exception& e) {  // e.g. c10::Error from a device copy
      const std::string what = e.what();
      return CaseFailure{"harness error: " + what.substr(0, what.find('\n')), {{"harness_error", what}}};
    }
  };
  auto samplerNow = [&]() { return md.id == out.key() ? std::string() : md.id.substr(md.id.find('|') + 1); };
  // A failing case judged again opts.flakyReplays times: one that passes
  // any of them is flaky, not a failure.
  auto confirm = [&](PropertyOutcome& o, const Case& c, const std::string& sampler) {
    if (o.status != "fail" || opts.flakyReplays <= 0 || !opts.reproduce.empty()) return;
    int failed = 1, of = 1;
    for (int i = 0; i < opts.flakyReplays; ++i, ++of) {
      const auto judged = judgeOnce(c, sampler, {{"confirming", true}}, true);
      if (std::holds_alternative<CaseFailure>(judged)) {
        ++failed;
        continue;
      }
      const json& result = std::get<json>(judged);
      if (!result.contains("discard") && !result.contains("inactive") &&
          !verdictOf(result, run.id).at("pass").get<bool>())
        ++failed;
    }
    o.observations["replays"] = {{"failed", failed}, {"of", of}};
    if (failed == of) return;
    o.status = "flaky";
    o.reason = "flaky: the case failed " + std::to_string(failed) + " of the " + std::to_string(of) +
               " times it was judged (" + o.reason + ")";
  };
  // One judging of a case from an earlier process, the first in this one:
  // its failure (why empty: it held), its evidence copied onto `into`.
  auto judgeFirst = [&](const Case& c, const std::string& sampler, const json& extra) {
    const auto judged = judgeOnce(c, sampler, extra);
    LastFailure failure;
    if (const auto* f = std::get_if<CaseFailure>(&judged)) {
      failure = {c.value, f->evidence, f->why};
    } else {
      const json& result = std::get<json>(judged);
      const json v =
          result.contains("discard") || result.contains("inactive") ? json{{"pass", true}} : verdictOf(result, run.id);
      if (!v.at("pass").get<bool>())
        failure = {c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(),
                   v.value("kinds", json::array())};
    }
    return failure;
  };
  auto takeEvidence = [&](const LastFailure& failure) {
    if (failure.evidence.is_object())
      for (auto it = failure.evidence.begin(); it != failure.evidence.end(); ++it)
        out.observations[it.key()] = it.value();
    if (!failure.kinds.empty()) out.observations["kinds"] = failure.kinds;
  };
  auto finishEarly = [&]() {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run.finish) run.finish(out);
    return out;
  };
  // A case an earlier process died on: once more, in this fresh process.
  if (run.confirmCrash.is_object() && opts.reproduce.empty()) {
    const json before = run.confirmCrash.value("observations", json::object());
    // What happened the first time: the process died ("the target process
    // died with signal 11 (...)"), or the device context was lost.
    const std::string crash = before.contains("crash") ? "the " + before.value("crash", std::string())
                                                       : run.confirmCrash.value("reason", std::string()).substr(0, 300);
    const Case c{run.confirmCrash.at("counterexample")};
    json extra = {{"confirming_crash", crash}};
    if (before.contains("db") && before.at("db").contains("still_failing"))  // a stored example's death: still one
      extra["example"] = before.at("db").at("still_failing").value("file", std::string());
    const LastFailure failure = judgeFirst(c, before.value("sampler", std::string()), extra);
    out.observations = before;
    out.counterexample = c.value;
    out.casesRun = 1;
    // The process did not die on it again; a lost device context lost again is the same fault recurring.
    const bool lostAgain = failure.why.rfind(kDeviceLostReason, 0) == 0;
    out.observations["recurred"] = lostAgain;
    if (lostAgain) {
      out.status = "fail";
      out.reason = "the device context was lost on this case, and again when it was judged in a fresh process: " +
                   failure.why.substr(std::string(kDeviceLostReason).size());
      takeEvidence(LastFailure{failure.caseJson, failure.evidence, failure.why, json::array()});
      out.observations["replays"] = {{"failed", 2}, {"of", 2}};
    } else if (!failure.why.empty()) {
      out.status = failure.why.rfind("harness error:", 0) == 0 ? "error" : "fail";
      out.reason = failure.why + " (" + crash + " on this case first; judged again in a fresh process it " +
                   "failed without that)";
      takeEvidence(failure);
      out.observations["replays"] = {{"failed", 2}, {"of", 2}};
    } else {
      out.status = "flaky";
      out.reason = "flaky: " + crash + " on this case, and it passed when judged again in a fresh process " +
                   "(failed 1 of the 2 times it was judged)";
      out.observations["replays"] = {{"failed", 1}, {"of", 2}};
    }
    return finishEarly();
  }
  // A case found flaky in an earlier process (it failed there, then passed
  // when judged again there): judged first in this fresh process. Failing
  // here is a failure that recurs in every fresh process (a first call, a
  // cold cache): a fail. Holding is flaky, the tally one judging longer.
  if (run.confirmFlaky.is_object() && opts.reproduce.empty()) {
    const json& was = run.confirmFlaky;
    out.status = "flaky";
    out.reason = was.value("reason", std::string());
    out.casesRun = was.value("cases_run", 0);
    out.counterexample = was.at("counterexample");
    out.counterexampleShown = was.value("counterexample_shown", std::string());
    out.reproduce = was.value("reproduce", std::string());
    out.observations = was.value("observations", json::object());
    const json tally = out.observations.value("replays", json::object());
    const int failed = tally.value("failed", 1), of = tally.value("of", 1);
    const std::string earlier = out.reason.rfind("flaky: ", 0) == 0 ? out.reason.substr(7) : out.reason;
    const LastFailure failure = judgeFirst(Case{out.counterexample}, out.observations.value("sampler", std::string()),
                                           {{"confirming_flaky", true}});
    out.casesRun += 1;
    out.observations["fresh"] = {{"failed", !failure.why.empty()}};
    if (!failure.why.empty()) {
      out.status = failure.why.rfind("harness error:", 0) == 0 ? "error" : "fail";
      out.reason = failure.why +
                   " (it failed again when judged first in a fresh process, as it did first in its own: " +
                   "it recurs in every fresh process; " + std::to_string(failed + 1) + " of the " +
                   std::to_string(of + 1) + " judgings failed)";
      takeEvidence(failure);
      out.observations["replays"] = {{"failed", failed + 1}, {"of", of + 1}};
    } else {
      out.reason = "flaky: the case failed " + std::to_string(failed) + " of the " + std::to_string(of + 1) +
                   " times it was judged, the last first in a fresh process (" + earlier + ")";
      out.observations["replays"] = {{"failed", failed}, {"of", of + 1}};
    }
    return finishEarly();
  }
  // Stored examples first: the first that still fails is the outcome.
  json db = json::object();
  if (opts.reproduce.empty() && !opts.examples.empty()) {
    json fixed = json::array(), dropped = json::array();
    int replayed = 0;
    // One judging of a stored case: nullopt when it holds; `rejected` set
    // when it is no case of this run any more (the reference rejects it, or
    // the harness cannot build it although it was stored as a failure).
    auto judgeStored = [&](const Case& c, const std::string& sampler, const json& ex, bool again,
                           std::string& rejected) -> std::optional<LastFailure> {
      const auto judged = judgeOnce(c, sampler, {{"example", ex.value("file", std::string())}}, again);
      if (const auto* f = std::get_if<CaseFailure>(&judged)) {
        if (!f->sticky && f->why.rfind("harness error:", 0) == 0 && ex.value("status", std::string()) != "error") {
          rejected = f->why.substr(0, 300);
          return std::nullopt;
        }
        return LastFailure{c.value, f->evidence, f->why};
      }
      const json& result = std::get<json>(judged);
      for (const char* k : {"discard", "inactive"})
        if (result.contains(k) && result.at(k).is_string()) rejected = result.at(k).get<std::string>().substr(0, 300);
      if (!rejected.empty()) return std::nullopt;
      const json v = verdictOf(result, run.id);
      if (v.at("pass").get<bool>()) return std::nullopt;
      return LastFailure{c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(),
                         v.value("kinds", json::array())};
    };
    for (const auto& ex : opts.examples) {
      ++replayed;
      const Case c{ex.at("case")};
      const std::string sampler = ex.value("sampler", std::string());
      json brief = {{"file", ex.value("file", std::string())},
                    {"stored_at", ex.value("stored_at", std::string())},
                    {"stored_in", ex.value("stored_in", std::string())},
                    {"reason", ex.value("reason", std::string())}};
      // A case of another op or dtype (an edited file) is no case of this run.
      if (!run.op.empty() &&
          (c.value.value("op", json()) != json(run.op) || c.value.value("dtype", json()) != json(run.dtype))) {
        brief["why"] = "its case is not one of " + out.key();
        dropped.push_back(brief);
        continue;
      }
      std::string rejected;
      std::optional<LastFailure> failure = judgeStored(c, sampler, ex, false, rejected);
      if (!rejected.empty()) {
        brief["why"] = rejected;
        dropped.push_back(brief);
        continue;
      }
      int failedOf3 = 0;
      if (!failure) {  // judged twice more before it is called fixed: a fault that comes and goes is flaky
        for (int k = 0; k < 2; ++k) {
          std::string ignored;
          if (auto again = judgeStored(c, sampler, ex, true, ignored)) {
            ++failedOf3;
            if (!failure) failure = again;
          }
        }
        if (!failure) {
          fixed.push_back(brief);
          continue;
        }
      }
      out.status = failure->why.rfind("harness error:", 0) == 0 ? "error" : "fail";
      out.reason = failure->why + " (the stored example of " + brief["stored_at"].get<std::string>() + ", replayed)";
      out.casesRun = replayed;
      out.counterexample = c.value;
      if (failure->evidence.is_object())
        for (auto it = failure->evidence.begin(); it != failure->evidence.end(); ++it)
          out.observations[it.key()] = it.value();
      if (!failure->kinds.empty()) out.observations["kinds"] = failure->kinds;
      if (!sampler.empty()) out.observations["sampler"] = sampler;
      out.observations["db"] = {
          {"replayed", replayed}, {"still_failing", brief}, {"fixed", fixed}, {"dropped", dropped}};
      if (failedOf3 > 0) {  // it passed first, then failed: kept, and flaky
        out.status = "flaky";
        out.observations["replays"] = {{"failed", failedOf3}, {"of", 3}};
        out.reason = "flaky: the stored example failed " + std::to_string(failedOf3) +
                     " of the 3 times it was judged (" + out.reason + ")";
      } else {
        confirm(out, c, sampler);
      }
      out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (run.finish) run.finish(out);
      return out;
    }
    db = {{"replayed", replayed}, {"fixed", fixed}, {"dropped", dropped}};
  }
  LastFailure last;
  Discards discards;
  std::set<std::string> known;  // kinds of the failures already recorded
  int judged = 0;
  // Samples CPU ATen rejected for their dtype ("... not implemented for
  // 'Int'") while none was accepted: after kDtypeRejections of them the
  // run stops judging and ends as "not run in DTYPE" (ATen has no kernel).
  int held = 0, dtypeRejected = 0;
  constexpr int kDtypeRejections = 3;
  auto dtypeRefused = [&]() {
    return held == 0 && dtypeRejected >= kDtypeRejections && dtypeRejected == discards.count;
  };
  // Shrinking: the first failure of a search starts the clock; past
  // opts.shrinkSeconds (ShrinkClock) the smallest failing case so far fails
  // again unjudged and every other candidate is discarded unjudged, which
  // ends the search on that case. A replay runs the cases along its shrink
  // path: no budget there.
  const bool replaying = !opts.reproduce.empty();
  const int shrinkBudget = replaying ? -1 : opts.shrinkSeconds;
  ShrinkClock shrink;
  // The run's own limit (opts.runSeconds): past it, a search with a failure
  // ends as the shrink budget ends it; one without discards every case
  // left unjudged (timeUp), and RapidCheck's give-up is then read as the
  // end of the run's time, not as a health problem.
  bool timeUp = false;
  const auto clockT0 = run.clockStart ? run.clockStart() : t0;
  int judgedHere = 0;  // cases that held or failed in this run (not discards)
  auto runOver = [&]() {
    return !replaying && opts.runSeconds >= 0 && (judgedHere > 0 || shrink.since) &&
           std::chrono::steady_clock::now() - clockT0 >= std::chrono::seconds(opts.runSeconds);
  };
  auto body = [&]() {
    if (dtypeRefused()) RC_DISCARD("CPU ATen takes no " + run.dtype);
    const Case c = *generator;
    const bool shrinkOver = shrink.over(shrinkBudget);
    if (shrinkOver || (shrink.since && runOver())) {
      if (c.value == shrink.best) RC_FAIL(shrink.bestWhy);  // the smallest so far, run again: it failed
      shrink.stopped = true;
      shrink.byRunTime = shrink.byRunTime || !shrinkOver;
      ++shrink.discarded;
      RC_DISCARD("shrink time is up");
    }
    if (timeUp || runOver()) {
      timeUp = true;
      RC_DISCARD("the run's time is up");
    }
    if (opts.progress) opts.progress(judged++);
    const auto judgedCase = judgeOnce(c, samplerNow(), json::object());
    if (const auto* f = std::get_if<CaseFailure>(&judgedCase)) {
      if (!f->sticky) last = {c.value, f->evidence, f->why};
      shrink.failing(c.value, f->why);
      RC_FAIL(f->why);
    }
    const json& result = std::get<json>(judgedCase);
    for (const char* k : {"discard", "inactive"})
      if (result.contains(k)) {
        // CPU ATen's rejection only: the stock path's ("... not implemented
        // for 'Long'" on the device) says nothing of what ATen takes.
        if (const std::string why = result.at(k).get<std::string>();
            why.rfind("CPU ATen rejects", 0) == 0 && isDtypeRejection(why))
          ++dtypeRejected;
        if (discards.count++ == 0) discards.first = result.at(k).get<std::string>();
        RC_DISCARD(result.at(k).get<std::string>());
      }
    ++held;
    ++judgedHere;
    RC_TAG(result.value("tag", std::string()));
    const json v = verdictOf(result, run.id);
    if (!v.at("pass").get<bool>()) {
      const json kinds = v.value("kinds", json::array());
      bool seen = !known.empty() && !kinds.empty();
      for (const auto& k : kinds) seen = seen && known.count(k.get<std::string>()) > 0;
      if (seen) return;  // a failure of a kind already recorded: go on looking for another
      last = {c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(), kinds};
      shrink.failing(c.value, last.why);
      RC_FAIL(last.why);
    }
  };
  auto result = rc::detail::checkProperty(rc::detail::toProperty(body), md, params, shrink, replay);
  json shrinkSeen = shrink.take(shrinkBudget);
  const uint64_t seed = params.seed;
  auto refused = [&]() {  // not a health skip: no sample of another source would help
    PropertyOutcome o =
        outcomeFor(run, "skip",
                   "not run in " + run.dtype + ": CPU ATen takes no " + run.dtype + " for it (it rejected the first " +
                       std::to_string(dtypeRejected) + " samples for their dtype: " + discards.first.substr(0, 200) +
                       ")" + fallbackNote);
    o.observations["discarded"] = discards.count;
    o.observations["dtype_refused"] = true;
    return o;
  };
  if (result.template is<rc::detail::GaveUpResult>() && dtypeRefused() && !run.dtype.empty()) return refused();
  if (result.template is<rc::detail::GaveUpResult>() && run.fallback && opts.reproduce.empty() && md.id == out.key() &&
      !timeUp) {
    PropertyOutcome gaveUp = outcomeFor(run, "", "");
    record(gaveUp, result, last, discards, md.id);
    if (useFallback(" (the schema's samples gave up: " + gaveUp.reason.substr(0, 240) + ")")) {
      out.observations["gave_up_first"] = {{"reason", gaveUp.reason}, {"discarded", discards.count}};
      last = {};
      discards = {};
      held = dtypeRejected = judgedHere = 0;
      result = rc::detail::checkProperty(rc::detail::toProperty(body), md, params, shrink, replay);
      shrinkSeen = shrink.take(shrinkBudget);
      if (result.template is<rc::detail::GaveUpResult>() && dtypeRefused() && !run.dtype.empty()) return refused();
    }
  }
  record(out, result, last, discards, md.id);
  if (timeUp && result.template is<rc::detail::GaveUpResult>())
    noteRunTime(out, held, params.maxSuccess, opts.runSeconds, discards);
  if ((out.status == "fail" || out.status == "error") && !replaying) noteShrink(out, shrinkSeen);
  if (!db.empty()) out.observations["db"] = db;
  if (out.status == "fail" && !last.caseJson.is_null()) confirm(out, Case{last.caseJson}, samplerNow());
  out.reason += fallbackNote;
  if (run.fallback && !run.fallback->retriedAfter.empty())
    out.observations["retried_after"] = run.fallback->retriedAfter;
  out.observations["discarded"] = discards.count;
  // Distinct failures: search again with the kinds found so far counted as passes.
  json distinct = json::array();
  const int distinctMax = opts.distinct > 0 ? std::min(run.distinct, opts.distinct) : run.distinct;
  for (int k = 1; k < distinctMax && out.status == "fail" && opts.reproduce.empty(); ++k) {
    if (last.kinds.empty()) break;
    if (runOver()) {  // no time left for another search
      out.observations["run_time"] = {{"limit_s", opts.runSeconds}, {"distinct_search", "not started"}};
      break;
    }
    for (const auto& x : last.kinds) known.insert(x.get<std::string>());
    last = {};
    params.seed = params.seed * 6364136223846793005ull + 1442695040888963407ull;
    const auto again = rc::detail::checkProperty(rc::detail::toProperty(body), md, params, shrink, replay);
    PropertyOutcome extra = outcomeFor(run, "", "");
    record(extra, again, last, discards, md.id);
    noteShrink(extra, shrink.take(shrinkBudget));
    if (extra.status != "fail" || last.kinds.empty()) break;
    // Judged again as the first failure is: one that passes any replay is
    // flaky, kept apart from the distinct failures (and their reproducers).
    confirm(extra, Case{last.caseJson}, samplerNow());
    if (extra.status == "flaky") {
      out.observations["flaky_distinct"].push_back(
          {{"reason", extra.reason}, {"counterexample", extra.counterexample}});
      continue;
    }
    distinct.push_back({{"reason", extra.reason},
                        {"kinds", last.kinds},
                        {"counterexample", extra.counterexample},
                        {"reproduce", extra.reproduce},
                        {"observations", extra.observations}});
  }
  if (!distinct.empty()) {
    out.observations["distinct_failures"] = distinct;
    out.reason += "; and " + std::to_string(distinct.size()) +
                  " more distinct failure(s), first: " + distinct[0].at("reason").get<std::string>().substr(0, 200);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opts.reproduce.empty())
    out.observations["seed"] = std::to_string(seed);
  else
    out.observations["replayed"] = opts.reproduce;
  if (run.finish) run.finish(out);
  return out;
}

}  // namespace flagprop
