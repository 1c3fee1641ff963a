#include "suites/phases.h"

#include "core/files.h"

#include <rapidcheck/detail/Configuration.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

namespace flagprop::phases {

namespace {

const std::string kReproducePrefix = "reproduce=";

uint64_t freshSeed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

bool isHarnessError(const std::string& why) { return why.rfind("harness error:", 0) == 0; }

// Why a check result is a discard (the reference or the stock path
// rejected the sample) or an inactive case; nullopt when it is neither.
std::optional<std::string> discardOf(const json& result) {
  for (const char* k : {"discard", "inactive"})
    if (result.contains(k)) return result.at(k).get<std::string>();
  return std::nullopt;
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

void copyEvidence(json& observations, const LastFailure& failure) {
  if (failure.evidence.is_object())
    for (auto it = failure.evidence.begin(); it != failure.evidence.end(); ++it) observations[it.key()] = it.value();
  if (!failure.kinds.empty()) observations["kinds"] = failure.kinds;
}

// Fills `out` from RapidCheck's result (the search's last failure, its
// discards, the run key it searched under).
void fillOutcome(PropertyOutcome& out, const rc::detail::TestResult& result, const LastFailure& last,
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
    out.status = isHarnessError(out.reason) ? "error" : "fail";
    out.counterexample = last.caseJson;
    for (const auto& [type, value] : f.counterExample) out.counterexampleShown += value;
    out.reproduce = encodeReproduce(id, f.reproduce);
    copyEvidence(out.observations, last);  // kinds: what told it apart from other failures
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

bool gaveUp(const rc::detail::TestResult& r) { return r.template is<rc::detail::GaveUpResult>(); }

// The run ends "not run in DTYPE": no sample of another source would help.
PropertyOutcome refused(const RunState& s) {
  PropertyOutcome o =
      outcomeFor(s.run, "skip",
                 "not run in " + s.run.dtype + ": CPU ATen takes no " + s.run.dtype +
                     " for it (it rejected the first " + std::to_string(s.tally.dtypeRejected) +
                     " samples for their dtype: " + s.tally.discards.first.substr(0, 200) + ")" + s.fallbackNote);
  o.observations["discarded"] = s.tally.discards.count;
  o.observations["dtype_refused"] = true;
  return o;
}

}  // namespace

ReproduceMap decodeReproduce(const std::string& s) {
  if (s.empty() || s.find_first_of(" \t\r\n=") != std::string::npos)
    throw std::invalid_argument("not a reproduce string (it holds spaces or '=')");
  try {
    return rc::detail::configFromString(kReproducePrefix + s).reproduce;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("not a reproduce string (") + e.what() + ")");
  }
}

// ---- the small objects a run composes ----

InflightRecord::InflightRecord(std::string inflightPath, std::string stagePath)
    : inflightPath_(std::move(inflightPath)), stagePath_(std::move(stagePath)) {}

void InflightRecord::begin(const std::string& key, const json& caseJson, const std::string& sampler,
                           const json& extra) const {
  // Blanks over the whole layout (16 bytes of stage, 24 of compile stamp:
  // flagprop.engine.ops._stage) read as no stage and no stamp, and keep the
  // file's length, so that no case pays a truncate for it.
  if (!stagePath_.empty()) overwriteFile(stagePath_, std::string(16 + 24, ' '));
  if (inflightPath_.empty()) return;
  json fly = {{"key", key}, {"case", caseJson}};
  if (!sampler.empty()) fly["sampler"] = sampler;
  for (auto it = extra.begin(); it != extra.end(); ++it) fly[it.key()] = it.value();
  overwriteFile(inflightPath_, fly.dump());
}

void InflightRecord::end() const noexcept {
  if (inflightPath_.empty()) return;
  try {
    overwriteFile(inflightPath_, "");
  } catch (...) {
  }
}

HistoryLog& HistoryLog::of(const std::string& path) {
  static std::map<std::string, std::unique_ptr<HistoryLog>> logs;
  auto& log = logs[path];
  if (!log) log.reset(new HistoryLog(path));
  return *log;
}

void HistoryLog::append(const std::string& key, const std::string& kind, const json& caseJson, const json& judging) {
  if (broken_ || path_.empty()) return;
  std::ofstream f(path_, started_ ? std::ios::app : std::ios::trunc);
  started_ = true;
  f << json{{"key", key}, {"kind", kind}, {"case", caseJson}, {"judging", judging}}.dump() << "\n";
  f.flush();
  if (!f) {
    broken_ = true;
    return;
  }
  ++calls_;
}

void ShrinkClock::onShrinkTried(const rc::detail::CaseDescription&, bool ok) {
  ++tried;
  accepted += ok ? 1 : 0;
}

bool ShrinkClock::over(int budget) const {
  return since && budget >= 0 && std::chrono::steady_clock::now() - *since >= std::chrono::seconds(budget);
}

void ShrinkClock::failing(const json& c, const std::string& why) {
  if (!since) since = std::chrono::steady_clock::now();
  best = c;
  bestWhy = why;
}

json ShrinkClock::take(int budget) {
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

bool RunClock::past() const {
  return limitSeconds >= 0 && start && std::chrono::steady_clock::now() - *start >= std::chrono::seconds(limitSeconds);
}

bool SearchTally::dtypeRefused() const {
  return held == 0 && dtypeRejected >= kDtypeRejections && dtypeRejected == discards.count;
}

// ---- the run state ----

RunState::RunState(const PropertyRun& r, const RunOptions& o, ReproduceMap rep)
    : run(r),
      opts(o),
      replay(std::move(rep)),
      replaying(!o.reproduce.empty()),
      out(outcomeFor(r, "", "")),
      t0(std::chrono::steady_clock::now()),
      seed(o.seed ? o.seed : freshSeed()),
      generator(r.generator),
      inflight(o.inflightPath, o.stagePath),
      shrinkBudget(replaying ? -1 : o.shrinkSeconds) {
  params.maxSuccess = opts.cases > 0 ? opts.cases : run.cases;
  params.maxSize = opts.maxSize;
  params.maxDiscardRatio = run.maxDiscardRatio;
  params.seed = seed;
  md.id = out.key();
  md.description = run.title;
  clock.limitSeconds = replaying ? -1 : opts.runSeconds;
}

std::variant<json, CaseFailure> RunState::judgeOnce(const Case& c, const std::string& sampler, const json& extra,
                                                    bool again) {
  inflight.begin(out.key(), c.value, sampler, extra);
  if (!opts.historyPath.empty() && run.checkKind == "op" && !judgedAhead)
    HistoryLog::of(opts.historyPath).append(out.key(), run.checkKind, c.value, run.judging);
  judgedAhead = false;
  struct Landed {  // emptied when the case ends however it ends
    const InflightRecord& r;
    ~Landed() { r.end(); }
  } landed{inflight};
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
}

LastFailure RunState::judgeFirst(const Case& c, const std::string& sampler, const json& extra) {
  return failureOf(c, judgeOnce(c, sampler, extra));
}

LastFailure RunState::failureOf(const Case& c, const std::variant<json, CaseFailure>& judged) const {
  if (const auto* f = std::get_if<CaseFailure>(&judged)) return {c.value, f->evidence, f->why};
  const json& result = std::get<json>(judged);
  if (result.contains("discard") || result.contains("inactive")) return {};
  const json v = verdictOf(result, run.id);
  if (v.at("pass").get<bool>()) return {};
  return {c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(),
          v.value("kinds", json::array())};
}

std::string RunState::sampler() const { return md.id == out.key() ? std::string() : md.id.substr(md.id.find('|') + 1); }

bool RunState::useFallback(const std::string& because) {
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
}

void RunState::takeEvidence(const LastFailure& failure) { copyEvidence(out.observations, failure); }

bool RunState::runOver() const { return (tally.judgedHere > 0 || shrink.since) && clock.past(); }

PropertyOutcome RunState::finish() {
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out.status == "fail" && !opts.historyPath.empty() && run.checkKind == "op") {
    // The calls this process judged up to here: what a failure that does
    // not recur alone may need before it (tools/confirm.h).
    const HistoryLog& log = HistoryLog::of(opts.historyPath);
    if (!log.broken()) out.observations["history"] = {{"file", log.path()}, {"calls", log.calls()}};
  }
  if (run.finish) run.finish(out);
  return out;
}

// ---- source ----

std::optional<PropertyOutcome> pickSource(RunState& s) {
  if (!s.run.fallback) return std::nullopt;
  const auto& fb = *s.run.fallback;
  const bool replayed = s.replay.count(s.out.key() + "|" + fb.name) > 0;
  const bool first = replayed || (!s.replaying && fb.first && fb.first());
  const std::string because = replayed                   ? ""
                              : !fb.firstBecause.empty() ? fb.firstBecause
                                                         : " (as in the other runs of these cases)";
  if (first && !s.useFallback(because) && replayed)
    return outcomeFor(s.run, "error", "cannot replay: the string draws from " + fb.describes + s.fallbackNote);
  if (!fb.retriedAfter.empty() && s.md.id == s.out.key()) {  // the schema's samples would crash it again
    PropertyOutcome o = outcomeFor(s.run, "skip",
                                   "health: CPU ATen (the reference) ended the process (" + fb.retriedAfter +
                                       ") on a generated case; the op was not judged" + s.fallbackNote);
    o.observations["crash_in"] = "reference";
    o.observations["retried_after"] = fb.retriedAfter;
    return o;
  }
  return std::nullopt;
}

// ---- confirm: results of an earlier process ----

std::optional<PropertyOutcome> confirmCrash(RunState& s) {
  if (!s.run.confirmCrash.is_object()) return std::nullopt;
  const json& was = s.run.confirmCrash;
  const json before = was.value("observations", json::object());
  // What happened the first time: the process died ("the target process
  // died with signal 11 (...)"), or the device context was lost.
  const std::string crash = before.contains("crash") ? "the " + before.value("crash", std::string())
                                                     : was.value("reason", std::string()).substr(0, 300);
  const Case c{was.at("counterexample")};
  json extra = {{"confirming_crash", crash}};
  if (before.contains("db") && before.at("db").contains("still_failing"))  // a stored example's death: still one
    extra["example"] = before.at("db").at("still_failing").value("file", std::string());
  // A lost device context is the op's only if the stock path does not lose it
  // too where the op ran: a kernel that reads memory it does not own faults
  // or not by what lies there, so the control, run before the op, may return
  // where the same stock kernel in the op's place would not. Judged again,
  // the stock path runs once more in the op's place (docs/control.md).
  const bool lostBefore =
      !before.contains("crash") && was.value("reason", std::string()).rfind(kDeviceLostReason, 0) == 0;
  struct InOpPlace {  // on for this judging only, however it ends
    const PropertyRun& run;
    const bool on;
    InOpPlace(const PropertyRun& r, bool o) : run(r), on(o) {
      if (on) run.stockInOpPlace(true);
    }
    ~InOpPlace() {
      if (on) run.stockInOpPlace(false);
    }
  };
  std::variant<json, CaseFailure> judged;
  {
    const InOpPlace inOpPlace(s.run, lostBefore && static_cast<bool>(s.run.stockInOpPlace));
    judged = s.judgeOnce(c, before.value("sampler", std::string()), extra);
  }
  const json* result = std::get_if<json>(&judged);
  const std::string discard = result ? result->value("discard", std::string()) : "";
  if (lostBefore && discard.rfind(kStockLostReason, 0) == 0) {
    PropertyOutcome& out = s.out;
    out.observations = before;
    // The first judging's: no finding stands, no failing first pass is left
    // to finish, and the stored example is no longer one.
    for (const char* finding :
         {"numerics", "aliasing", "calls", "calls_raised", "kinds", "replays", "shrink", "first_pass", "harness_error"})
      out.observations.erase(finding);
    if (out.observations.contains("db") && out.observations["db"].contains("still_failing")) {
      json& db = out.observations["db"];
      json gone = db["still_failing"];
      gone["why"] = discard;
      db["dropped"].push_back(gone);
      db.erase("still_failing");
    }
    out.observations["lost_case"] = c.value;  // kept for the record; no counterexample: no finding
    out.observations["recurred"] = false;
    out.observations["stock_lost"] = discard;
    out.casesRun = 1;
    out.status = "skip";
    out.reason = "not the op's finding: the device context was lost on this case (" +
                 was.value("reason", std::string()).substr(std::string(kDeviceLostReason).size(), 200) +
                 "); judged again in a fresh process, the stock path first in the control's place and then once " +
                 "more in the op's place: " + discard;
    return s.finish();
  }
  const LastFailure failure = s.failureOf(c, judged);
  PropertyOutcome& out = s.out;
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
    s.takeEvidence(LastFailure{failure.caseJson, failure.evidence, failure.why, json::array()});
    out.observations["replays"] = {{"failed", 2}, {"of", 2}};
  } else if (!failure.why.empty()) {
    out.status = isHarnessError(failure.why) ? "error" : "fail";
    out.reason = failure.why + " (" + crash + " on this case first; judged again in a fresh process it " +
                 "failed without that)";
    s.takeEvidence(failure);
    out.observations["replays"] = {{"failed", 2}, {"of", 2}};
  } else {
    out.status = "flaky";
    out.reason = "flaky: " + crash + " on this case, and it passed when judged again in a fresh process " +
                 "(failed 1 of the 2 times it was judged)";
    out.observations["replays"] = {{"failed", 1}, {"of", 2}};
  }
  return s.finish();
}

namespace {

// Whether a judging of a case found it failing (a discard or an inactive
// case is no failure).
bool judgedFailing(const RunState& s, const std::variant<json, CaseFailure>& judged) {
  if (std::holds_alternative<CaseFailure>(judged)) return true;
  const json& result = std::get<json>(judged);
  return !result.contains("discard") && !result.contains("inactive") &&
         !verdictOf(result, s.run.id).at("pass").get<bool>();
}

}  // namespace

std::optional<PropertyOutcome> confirmFresh(RunState& s) {
  // The case is judged first in this fresh process, then RunOptions::
  // flakyReplays times more. A fail only where both processes show a fault
  // of the first call (a cold cache): it failed first, and only first, in
  // each. Any other pattern is flaky, its tally over both processes (an op
  // wrong on half its calls is flaky however its first judging here went).
  if (!s.run.confirmFlaky.is_object()) return std::nullopt;
  const json& was = s.run.confirmFlaky;
  PropertyOutcome& out = s.out;
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
  const Case c{out.counterexample};
  const std::string sampler = out.observations.value("sampler", std::string());
  const LastFailure failure = s.judgeFirst(c, sampler, {{"confirming_flaky", true}});
  int again = 0, againFailed = 0;
  for (; again < s.opts.flakyReplays; ++again)
    againFailed += judgedFailing(s, s.judgeOnce(c, sampler, {{"confirming_flaky", true}}, true));
  const int allFailed = failed + (failure.why.empty() ? 0 : 1) + againFailed, all = of + 1 + again;
  out.casesRun += 1 + again;
  out.observations["fresh"] = {{"failed", !failure.why.empty()}, {"again_failed", againFailed}, {"again", again}};
  out.observations["replays"] = {{"failed", allFailed}, {"of", all}};
  const bool firstCall = !failure.why.empty() && againFailed == 0 && failed == 1;
  if (firstCall) {
    out.status = isHarnessError(failure.why) ? "error" : "fail";
    out.reason = failure.why + " (it failed when judged first in a fresh process and held on the " +
                 std::to_string(again) + " judgings after, as in its own: a fault of the first call in every " +
                 "process; " + std::to_string(allFailed) + " of the " + std::to_string(all) + " judgings failed)";
    s.takeEvidence(failure);
  } else {
    out.reason = "flaky: the case failed " + std::to_string(allFailed) + " of the " + std::to_string(all) +
                 " times it was judged, " + std::to_string(1 + again) + " of them in a fresh process (" + earlier + ")";
  }
  return s.finish();
}

// ---- reuse: the example database ----

namespace {

// One judging of a stored case: nullopt when it holds; `rejected` set when
// it is no case of this run any more (the reference rejects it, or the
// harness cannot build it although it was stored as a failure).
std::optional<LastFailure> judgeStored(RunState& s, const Case& c, const std::string& sampler, const json& ex,
                                       bool again, std::string& rejected) {
  const auto judged = s.judgeOnce(c, sampler, {{"example", ex.value("file", std::string())}}, again);
  if (const auto* f = std::get_if<CaseFailure>(&judged)) {
    if (!f->sticky && isHarnessError(f->why) && ex.value("status", std::string()) != "error") {
      rejected = f->why.substr(0, 300);
      return std::nullopt;
    }
    return LastFailure{c.value, f->evidence, f->why};
  }
  const json& result = std::get<json>(judged);
  if (const auto why = discardOf(result)) {
    rejected = why->substr(0, 300);
    if (!rejected.empty()) return std::nullopt;
  }
  const json v = verdictOf(result, s.run.id);
  if (v.at("pass").get<bool>()) return std::nullopt;
  return LastFailure{c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(),
                     v.value("kinds", json::array())};
}

// The elements the storages of an op case's tensors hold (each tensor's
// "storage", else its shape's product), summed; 0 for another case.
int64_t storageElements(const json& c) {
  int64_t total = 0;
  if (!c.is_object() || !c.contains("calls") || !c.at("calls").is_array()) return 0;
  for (const auto& call : c.at("calls"))
    for (const auto& t : call.value("tensors", json::array())) {
      int64_t n = 1;
      if (t.contains("storage") && t.at("storage").is_number_integer()) {
        n = t.at("storage").get<int64_t>();
      } else {
        for (const auto& d : t.value("shape", json::array()))
          n = d.is_number_integer() && d.get<int64_t>() > 0
                  ? (n > (int64_t(1) << 62) / d.get<int64_t>() ? int64_t(1) << 62 : n * d.get<int64_t>())
                  : 0;
      }
      total = n > (int64_t(1) << 62) - total ? int64_t(1) << 62 : total + std::max<int64_t>(n, 0);
    }
  return total;
}

// The outcome of a stored example that still fails (`failedOf3` > 0: it
// passed first, then failed on a second try: flaky).
PropertyOutcome stillFailing(RunState& s, const Case& c, const std::string& sampler, const LastFailure& failure,
                             int failedOf3, const json& db) {
  PropertyOutcome& out = s.out;
  const json& brief = db.at("still_failing");
  out.status = isHarnessError(failure.why) ? "error" : "fail";
  out.reason = failure.why + " (the stored example of " + brief["stored_at"].get<std::string>() + ", replayed)";
  out.casesRun = db.at("replayed").get<int>();
  out.counterexample = c.value;
  copyEvidence(out.observations, failure);
  if (!sampler.empty()) out.observations["sampler"] = sampler;
  out.observations["db"] = db;
  if (failedOf3 > 0) {  // it passed first, then failed: kept, and flaky
    out.status = "flaky";
    out.observations["replays"] = {{"failed", failedOf3}, {"of", 3}};
    out.reason = "flaky: the stored example failed " + std::to_string(failedOf3) + " of the 3 times it was judged (" +
                 out.reason + ")";
  } else {
    confirmByReplays(s, out, c, sampler);
  }
  return s.finish();
}

}  // namespace

std::optional<PropertyOutcome> reuse(RunState& s, json& db) {
  if (s.opts.examples.empty()) return std::nullopt;
  json fixed = json::array(), dropped = json::array();
  int replayed = 0;
  for (const auto& ex : s.opts.examples) {
    ++replayed;
    const Case c{ex.at("case")};
    const std::string sampler = ex.value("sampler", std::string());
    json brief = {{"file", ex.value("file", std::string())},
                  {"stored_at", ex.value("stored_at", std::string())},
                  {"stored_in", ex.value("stored_in", std::string())},
                  {"reason", ex.value("reason", std::string())}};
    // A case of another op or dtype (an edited file) is no case of this run.
    if (!s.run.op.empty() &&
        (c.value.value("op", json()) != json(s.run.op) || c.value.value("dtype", json()) != json(s.run.dtype))) {
      brief["why"] = "its case is not one of " + s.out.key();
      dropped.push_back(brief);
      continue;
    }
    // Checked before anything is built: a stored case past the target's
    // limit (an edited file, a limit lowered since) would allocate it all.
    if (const int64_t held = storageElements(c.value); s.run.maxElements > 0 && held > s.run.maxElements) {
      brief["why"] = "its tensors' storages hold " + std::to_string(held) + " elements, past the target's " +
                     "max_elements " + std::to_string(s.run.maxElements) + " (not built)";
      dropped.push_back(brief);
      continue;
    }
    std::string rejected;
    std::optional<LastFailure> failure = judgeStored(s, c, sampler, ex, false, rejected);
    if (!rejected.empty()) {
      brief["why"] = rejected;
      dropped.push_back(brief);
      continue;
    }
    int failedOf3 = 0;
    if (!failure) {  // judged twice more before it is called fixed: a fault that comes and goes is flaky
      for (int k = 0; k < 2; ++k) {
        std::string ignored;
        if (auto again = judgeStored(s, c, sampler, ex, true, ignored)) {
          ++failedOf3;
          if (!failure) failure = again;
        }
      }
      if (!failure) {
        fixed.push_back(brief);
        continue;
      }
    }
    return stillFailing(s, c, sampler, *failure, failedOf3,
                        {{"replayed", replayed}, {"still_failing", brief}, {"fixed", fixed}, {"dropped", dropped}});
  }
  db = {{"replayed", replayed}, {"fixed", fixed}, {"dropped", dropped}};
  return std::nullopt;
}

// ---- the lookahead and batches ----

namespace {

// RapidCheck's size for the search's attempt after `i` successes (sizeFor in
// RapidCheck's src/detail/Testing.cpp): sizes spread evenly over 0..maxSize.
int rcSizeFor(const rc::detail::TestParams& p, int i) {
  const int numSizes = p.maxSize + 1;
  const int numRegular = (p.maxSuccess / numSizes) * numSizes;
  if (i < numRegular) return i % numSizes;
  const int numRest = p.maxSuccess - numRegular;
  if (numRest == 1) return 0;
  return ((i % numSizes) * p.maxSize) / (numRest - 1);
}

}  // namespace

Lookahead::Lookahead(rc::Gen<Case> gen, const rc::detail::TestParams& params)
    : gen_(std::move(gen)), params_(params), random_(params.seed) {}

json Lookahead::drawAt(size_t attempt, int size) {
  while (splits_.size() <= attempt) splits_.push_back(random_.split());
  std::optional<json> drawn;
  const rc::Gen<Case> gen = gen_;
  // As the search's property: the body's first pick is the case.
  const auto property = rc::detail::toProperty([&] { drawn = (*gen).value; });
  property(splits_[attempt], size).value();
  if (!drawn) throw std::runtime_error("the property drew no case");
  return *drawn;
}

std::vector<Case> Lookahead::next(int n) {
  std::vector<Case> out;
  if (!on_) return out;
  const int left = params_.maxSuccess - successes_;
  const size_t want = static_cast<size_t>(std::max(0, std::min(n, left)));
  try {
    while (predicted_.size() < want) {
      const size_t k = predicted_.size();  // attempt attempt_ + k, after k more successes
      const int size = rcSizeFor(params_, successes_ + static_cast<int>(k)) + (k == 0 ? recent_ / 10 : 0);
      predicted_.push_back(drawAt(attempt_ + k, size));
    }
  } catch (const std::exception&) {  // a generator that throws here throws in the search too: judged there
    on_ = false;
    return out;
  }
  for (size_t k = 0; k < want; ++k) out.push_back(Case{predicted_[k]});
  return out;
}

bool Lookahead::at(const json& c) {
  if (!on_ || pending_) return on_ = false;
  const std::vector<Case> first = next(1);
  if (first.empty() || first.front().value != c) return on_ = false;
  pending_ = true;
  return true;
}

void Lookahead::ended(bool passed) {
  if (!on_ || !pending_) {
    on_ = false;
    return;
  }
  pending_ = false;
  ++attempt_;
  if (passed) {
    ++successes_;
    recent_ = 0;
    predicted_.pop_front();
  } else {
    ++recent_;
    predicted_.clear();  // the next attempts draw at other sizes
  }
}

void stopAhead(RunState& s) {
  if (!s.ahead) return;
  s.ahead.reset();
  if (s.run.judgeAhead) s.run.judgeAhead({}, {});
}

std::optional<CaseFailure> judgeAhead(RunState& s, const Case& c) {
  s.judgedAhead = false;
  if (!s.ahead) return std::nullopt;
  if (s.shrink.since || !s.ahead->at(c.value)) {
    stopAhead(s);
    return std::nullopt;
  }
  if (s.run.judgedAhead && s.run.judgedAhead(c)) {
    s.judgedAhead = true;
    return std::nullopt;
  }
  const std::vector<Case> next = s.ahead->next(s.opts.batch);
  if (next.size() < 2) return std::nullopt;
  const std::string sampler = s.sampler();
  const auto before = [&](size_t i) {
    s.inflight.begin(s.out.key(), next[i].value, sampler, json::object());
    if (!s.opts.historyPath.empty() && s.run.checkKind == "op")
      HistoryLog::of(s.opts.historyPath).append(s.out.key(), s.run.checkKind, next[i].value, s.run.judging);
  };
  struct Landed {
    const InflightRecord& r;
    ~Landed() { r.end(); }
  } landed{s.inflight};
  try {
    if (!s.run.judgeAhead(next, before)) s.ahead->off();  // no drawing ahead for batches that will not come
  } catch (const std::exception& e) {
    // Seen after the batch's restore, so not put on one case of it: the case
    // at hand, the batch's first, carries it, and the run goes on one case
    // at a time (a case that does it again is then caught alone).
    stopAhead(s);
    std::string what = e.what();
    if (const auto* py = dynamic_cast<const py::error_already_set*>(&e)) what = describe(*py);
    const std::string why = "harness error: " + what.substr(0, what.find('\n')) + " (after a batch of " +
                            std::to_string(next.size()) + " cases judged together, this one first)";
    return CaseFailure{why, {{"harness_error", e.what()}, {"batch", next.size()}}};
  }
  s.judgedAhead = s.run.judgedAhead && s.run.judgedAhead(c);
  return std::nullopt;
}

// ---- search, and the shrink gate inside it ----

namespace {

// Shrink's part of a case: past the shrink budget (or the run's limit while
// shrinking), the smallest failing case so far fails again unjudged and
// every other candidate is discarded, which ends the search on that case.
void shrinkGate(RunState& s, const Case& c) {
  const bool shrinkOver = s.shrink.over(s.shrinkBudget);
  if (!shrinkOver && !(s.shrink.since && s.runOver())) return;
  if (c.value == s.shrink.best) RC_FAIL(s.shrink.bestWhy);  // the smallest so far, run again: it failed
  s.shrink.stopped = true;
  s.shrink.byRunTime = s.shrink.byRunTime || !shrinkOver;
  ++s.shrink.discarded;
  RC_DISCARD("shrink time is up");
}

// A check result that is a discard: counted (CPU ATen's rejection for the
// dtype apart: the stock path's says nothing of what ATen takes), then
// RC_DISCARD. Returns when it is none.
void discardIfRejected(RunState& s, const json& result) {
  const auto rejected = discardOf(result);
  if (!rejected) return;
  const std::string& why = *rejected;
  if (why.rfind("CPU ATen rejects", 0) == 0 && isDtypeRejection(why)) ++s.tally.dtypeRejected;
  if (s.tally.discards.count++ == 0) s.tally.discards.first = why;
  RC_DISCARD(why);
}

}  // namespace

void judgeGenerated(RunState& s) {
  SearchTally& t = s.tally;
  if (t.dtypeRefused()) RC_DISCARD("CPU ATen takes no " + s.run.dtype);
  const Case c = *s.generator;
  shrinkGate(s, c);
  if (t.timeUp || s.runOver()) {
    t.timeUp = true;
    RC_DISCARD("the run's time is up");
  }
  if (s.opts.progress) s.opts.progress(t.judged);
  ++t.judged;
  t.lastJudged = c.value;
  const std::optional<CaseFailure> batchFailed = judgeAhead(s, c);
  const auto judgedCase =
      batchFailed ? std::variant<json, CaseFailure>(*batchFailed) : s.judgeOnce(c, s.sampler(), json::object());
  if (const auto* f = std::get_if<CaseFailure>(&judgedCase)) {
    stopAhead(s);
    if (!f->sticky) t.last = {c.value, f->evidence, f->why};
    s.shrink.failing(c.value, f->why);
    RC_FAIL(f->why);
  }
  const json& result = std::get<json>(judgedCase);
  if (s.ahead) {
    if (discardOf(result)) s.ahead->ended(false);
    if (!s.ahead->on()) stopAhead(s);
  }
  discardIfRejected(s, result);
  if (s.ahead) s.ahead->ended(true);
  ++t.held;
  ++t.judgedHere;
  RC_TAG(result.value("tag", std::string()));
  const json v = verdictOf(result, s.run.id);
  if (v.at("pass").get<bool>()) return;
  const json kinds = v.value("kinds", json::array());
  bool seen = !t.known.empty() && !kinds.empty();
  for (const auto& k : kinds) seen = seen && t.known.count(k.get<std::string>()) > 0;
  if (seen) return;  // a failure of a kind already recorded: go on looking for another
  t.last = {c.value, result.value("evidence", json::object()), v.at("reason").get<std::string>(), kinds};
  s.shrink.failing(c.value, t.last.why);
  RC_FAIL(t.last.why);
}

rc::detail::TestResult searchOnce(RunState& s) {
  // A search of many cases (not an explicit example's one, not a replay's
  // path) judges ahead in batches where its run can.
  if (s.opts.batch > 1 && s.run.judgeAhead && !s.replaying && s.params.maxSuccess > 1)
    s.ahead.emplace(s.generator, s.params);
  struct Stop {
    RunState& s;
    ~Stop() { stopAhead(s); }
  } stop{s};
  return rc::detail::checkProperty(rc::detail::toProperty([&s] { judgeGenerated(s); }), s.md, s.params, s.shrink,
                                   s.replay);
}

std::variant<Found, PropertyOutcome> search(RunState& s) {
  if (!s.clock.start) s.clock.start = s.run.clockStart ? s.run.clockStart() : s.t0;
  Found found{searchOnce(s), json(), s.md.id};
  found.shrink = s.shrink.take(s.shrinkBudget);
  const bool named = !s.run.dtype.empty();
  if (gaveUp(found.result) && s.tally.dtypeRefused() && named) return refused(s);
  if (!gaveUp(found.result) || !s.run.fallback || s.replaying || s.md.id != s.out.key() || s.tally.timeUp) return found;
  PropertyOutcome gave = outcomeFor(s.run, "", "");
  fillOutcome(gave, found.result, s.tally.last, s.tally.discards, s.md.id);
  if (!s.useFallback(" (the schema's samples gave up: " + gave.reason.substr(0, 240) + ")")) return found;
  s.out.observations["gave_up_first"] = {{"reason", gave.reason}, {"discarded", s.tally.discards.count}};
  s.tally.last = {};
  s.tally.discards = {};
  s.tally.held = s.tally.dtypeRejected = s.tally.judgedHere = 0;
  found = Found{searchOnce(s), json(), s.md.id};
  found.shrink = s.shrink.take(s.shrinkBudget);
  if (gaveUp(found.result) && s.tally.dtypeRefused() && named) return refused(s);
  return found;
}

// ---- explicit examples ----

namespace {

// A seed of its own per example, the same for every run of these cases
// (P5 and P6 judge one observation of each).
uint64_t exampleSeed(uint64_t seed, const std::string& name) {
  return seed ^ (std::hash<std::string>{}(name)*0x9e3779b97f4a7c15ull);
}

// The examples the explicit phase judges: run.examples() less those an
// earlier process's reference crashed on ("*": all), at most `most` (-1: all).
std::vector<PropertyRun::Example> examplesToJudge(const PropertyRun& run, int most, json* crashed) {
  auto examples = run.examples();
  for (const auto& name : run.skipExamples) {
    if (name == "*") {  // none at all
      examples.clear();
      continue;
    }
    if (crashed) crashed->push_back(name);
    examples.erase(
        std::remove_if(examples.begin(), examples.end(), [&](const PropertyRun::Example& x) { return x.name == name; }),
        examples.end());
  }
  if (most >= 0 && static_cast<int>(examples.size()) > most) examples.erase(examples.begin() + most, examples.end());
  return examples;
}

// A RapidCheck listener that hears nothing.
struct Deaf : rc::detail::TestListener {
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

}  // namespace

std::vector<json> explicitFirstDraws(const PropertyRun& run, const RunOptions& opts) {
  std::vector<json> out;
  if (!run.examples || opts.explicitCases == 0) return out;
  const uint64_t seed = opts.seed ? opts.seed : freshSeed();
  for (const auto& ex : examplesToJudge(run, opts.explicitCases, nullptr)) {
    // As the explicit phase's searchOnce: one success, its seed and size
    // bound; the property draws the case first, as judgeGenerated does.
    rc::detail::TestParams params;
    params.maxSuccess = 1;
    params.maxSize = opts.maxSize;
    params.maxDiscardRatio = 3;
    params.seed = exampleSeed(seed, ex.name);
    rc::detail::TestMetadata md;
    md.id = run.id + "|" + kExplicit + ex.name;
    std::optional<json> drawn;
    const rc::Gen<Case> gen = ex.cases;
    Deaf deaf;
    try {
      rc::detail::checkProperty(rc::detail::toProperty([&] {
                                  const Case c = *gen;
                                  if (!drawn) drawn = c.value;
                                }),
                                md, params, deaf);
    } catch (const std::exception&) {  // a generator that cannot draw here: nothing to compile ahead
    }
    if (drawn) out.push_back(std::move(*drawn));
  }
  return out;
}

std::optional<Found> explicitExamples(RunState& s) {
  if (!s.run.examples) return std::nullopt;
  if (!s.clock.start) s.clock.start = s.run.clockStart ? s.run.clockStart() : s.t0;
  json crashed = json::array();
  const auto examples = examplesToJudge(s.run, s.opts.explicitCases, &crashed);
  const rc::Gen<Case> generator = s.generator;
  const std::string id = s.md.id;
  const auto params = s.params;
  int held = 0, notApplicable = 0, judged = 0;
  std::optional<Found> failed;
  std::string failedName;
  LastFailure first;  // the first failure's, which the settle phase records
  for (const auto& ex : examples) {
    if (s.runOver()) break;  // the run's --run-time: the search gets what is left, at least one case
    ++judged;
    s.generator = ex.cases;
    s.md.id = s.out.key() + "|" + kExplicit + ex.name;
    s.params.maxSuccess = 1;
    s.params.maxDiscardRatio = 3;  // a sample the reference rejects: up to three more draws of the example
    s.params.seed = exampleSeed(params.seed, ex.name);
    const int before = s.tally.held;
    Found found{searchOnce(s), json(), s.md.id};
    found.shrink = s.shrink.take(s.shrinkBudget);
    if (found.result.template is<rc::detail::FailureResult>() || found.result.template is<rc::detail::Error>()) {
      for (const auto& k : s.tally.last.kinds) s.tally.known.insert(k.get<std::string>());
      if (failed) {  // another kind: a distinct failure of its own
        s.explicitMore.push_back({std::move(found), s.tally.last, ex.name});
        continue;
      }
      failed = std::move(found);
      failedName = ex.name;
      first = s.tally.last;
      if (first.kinds.empty()) break;  // nothing tells a further failure apart from it
      continue;
    }
    if (s.tally.held > before)
      ++held;
    else
      ++notApplicable;  // every draw discarded: the edge or value does not apply, or the reference rejects it
  }
  s.generator = generator;
  s.md.id = id;
  s.params = params;
  if (failed) s.tally.last = first;
  s.tally.judgedHere = 0;  // the search's own count: every run judges at least one generated case
  json note = {{"examples", examples.size()}, {"judged", judged}, {"held", held}, {"not_applicable", notApplicable}};
  if (failed) note["failed"] = failedName;
  if (!crashed.empty()) note["reference_crashed"] = crashed;
  s.out.observations["explicit"] = note;
  return failed;
}

bool replayExample(RunState& s, std::string& why) {
  const std::string prefix = s.out.key() + "|" + kExplicit;
  for (const auto& [key, r] : s.replay) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string name = key.substr(prefix.size());
    if (!s.run.examples) {
      why = "the run has no explicit examples, the string replays example " + name;
      return false;
    }
    for (const auto& ex : s.run.examples())
      if (ex.name == name) {
        s.generator = ex.cases;
        s.md.id = key;
        s.params.maxSuccess = 1;
        s.params.seed = exampleSeed(s.params.seed, name);
        return true;
      }
    why = "the run has no explicit example named " + name;
    return false;
  }
  return false;
}

// ---- settle ----

void record(RunState& s, const Found& found) {
  fillOutcome(s.out, found.result, s.tally.last, s.tally.discards, found.id.empty() ? s.md.id : found.id);
  if (s.tally.timeUp && gaveUp(found.result))
    noteRunTime(s.out, s.tally.held, s.params.maxSuccess, s.opts.runSeconds, s.tally.discards);
}

void noteShrink(PropertyOutcome& o, const json& shrink) {
  if (shrink.is_null()) return;
  o.observations["shrink"] = shrink;
  if (!shrink.value("stopped", false)) return;
  const std::string found = std::to_string(shrink.value("accepted", 0)) +
                            " smaller failing case(s) found: the counterexample may not be the smallest)";
  if (shrink.value("by", std::string()) == "run-time")
    o.reason += " (shrinking stopped when the run's --run-time ran out, " + found;
  else
    o.reason +=
        " (shrinking stopped after " + std::to_string(shrink.value("budget_s", 0)) + " s (--shrink-time), " + found;
}

void confirmByReplays(RunState& s, PropertyOutcome& o, const Case& c, const std::string& sampler) {
  if (o.status != "fail" || s.opts.flakyReplays <= 0) return;
  int failed = 1, of = 1;
  for (int i = 0; i < s.opts.flakyReplays; ++i, ++of)
    failed += judgedFailing(s, s.judgeOnce(c, sampler, {{"confirming", true}}, true));
  o.observations["replays"] = {{"failed", failed}, {"of", of}};
  if (failed == of) return;
  o.status = "flaky";
  o.reason = "flaky: the case failed " + std::to_string(failed) + " of the " + std::to_string(of) +
             " times it was judged (" + o.reason + ")";
}

void replayAgain(RunState& s) {
  if (s.out.status != "pass" || s.tally.lastJudged.is_null() || s.opts.flakyReplays <= 0) return;
  const Case c{s.tally.lastJudged};
  int failed = 0;
  for (int i = 0; i < s.opts.flakyReplays; ++i)
    failed += judgedFailing(s, s.judgeOnce(c, s.sampler(), {{"confirming", true}}, true));
  s.out.observations["replays"] = {{"failed", failed}, {"of", s.opts.flakyReplays + 1}};
  if (failed == 0) return;
  s.out.status = "flaky";
  s.out.counterexample = c.value;
  s.out.reason = "flaky: the replayed case held, then failed " + std::to_string(failed) + " of the " +
                 std::to_string(s.opts.flakyReplays) + " times it was judged again";
}

void closeSearch(RunState& s) {
  s.out.reason += s.fallbackNote;
  if (s.run.fallback && !s.run.fallback->retriedAfter.empty())
    s.out.observations["retried_after"] = s.run.fallback->retriedAfter;
  s.out.observations["discarded"] = s.tally.discards.count;
}

// ---- distinct ----

namespace {

// One more distinct failure (RapidCheck's `result` under run key `id`, its
// last failure `last`) settled as the first is: filled, its shrinking
// noted, judged again; into `found`, or observations.flaky_distinct when a
// replay passes. Whether it was a failure at all.
bool takeDistinct(RunState& s, const rc::detail::TestResult& result, const json& shrink, const LastFailure& last,
                  const std::string& id, json& found) {
  PropertyOutcome extra = outcomeFor(s.run, "", "");
  fillOutcome(extra, result, last, s.tally.discards, id);
  noteShrink(extra, shrink);
  if (extra.status != "fail" || last.kinds.empty()) return false;
  // Judged again as the first failure is: one that passes any replay is
  // flaky, kept apart from the distinct failures (and their reproducers).
  confirmByReplays(s, extra, Case{last.caseJson}, s.sampler());
  if (extra.status == "flaky") {
    s.out.observations["flaky_distinct"].push_back(
        {{"reason", extra.reason}, {"counterexample", extra.counterexample}});
    return true;
  }
  found.push_back({{"reason", extra.reason},
                   {"kinds", last.kinds},
                   {"counterexample", extra.counterexample},
                   {"reproduce", extra.reproduce},
                   {"observations", extra.observations}});
  return true;
}

}  // namespace

void distinct(RunState& s) {
  PropertyOutcome& out = s.out;
  json found = json::array();
  const int most = s.opts.distinct > 0 ? std::min(s.run.distinct, s.opts.distinct) : s.run.distinct;
  int k = 1;
  for (const auto& m : s.explicitMore) {  // the explicit examples' further failures first
    if (k >= most || out.status != "fail") break;
    if (takeDistinct(s, m.found.result, m.found.shrink, m.last, m.found.id, found)) {
      found.back()["observations"]["explicit"] = {{"failed", m.example}};
      ++k;
    }
  }
  for (; k < most && out.status == "fail"; ++k) {
    if (s.tally.last.kinds.empty()) break;
    if (s.runOver()) {  // no time left for another search
      out.observations["run_time"] = {{"limit_s", s.opts.runSeconds}, {"distinct_search", "not started"}};
      break;
    }
    for (const auto& x : s.tally.last.kinds) s.tally.known.insert(x.get<std::string>());
    s.tally.last = {};
    s.params.seed = s.params.seed * 6364136223846793005ull + 1442695040888963407ull;
    const auto again = searchOnce(s);
    const json shrink = s.shrink.take(s.shrinkBudget);
    if (!takeDistinct(s, again, shrink, s.tally.last, s.md.id, found)) break;
  }
  if (found.empty()) return;
  out.observations["distinct_failures"] = found;
  out.reason += "; and " + std::to_string(found.size()) +
                " more distinct failure(s), first: " + found[0].at("reason").get<std::string>().substr(0, 200);
}

}  // namespace flagprop::phases
