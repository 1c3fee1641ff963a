#include "tools/confirm.h"

#include "core/files.h"
#include "reports/reproducer.h"
#include "runner/runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace flagprop {

std::vector<size_t> ddmin(const std::vector<size_t>& items,
                          const std::function<bool(const std::vector<size_t>&)>& fails, int maxTests) {
  std::vector<size_t> c = items;
  size_t n = 2;
  int tests = 0;
  const auto test = [&](const std::vector<size_t>& s) { return ++tests <= maxTests && fails(s); };
  while (c.size() >= 2 && tests < maxTests) {
    const size_t chunk = (c.size() + n - 1) / n;
    std::vector<std::vector<size_t>> parts;
    for (size_t i = 0; i < c.size(); i += chunk)
      parts.emplace_back(c.begin() + static_cast<long>(i),
                         c.begin() + static_cast<long>(std::min(c.size(), i + chunk)));
    bool reduced = false;
    for (const auto& p : parts)  // a part alone
      if (test(p)) {
        c = p, n = 2, reduced = true;
        break;
      }
    if (!reduced && parts.size() > 2)
      for (size_t i = 0; i < parts.size() && !reduced; ++i) {  // all parts but one
        std::vector<size_t> rest;
        for (size_t j = 0; j < parts.size(); ++j)
          if (j != i) rest.insert(rest.end(), parts[j].begin(), parts[j].end());
        if (test(rest)) c = rest, n = std::max<size_t>(n - 1, 2), reduced = true;
      }
    if (!reduced) {
      if (n >= c.size()) break;  // 1-minimal
      n = std::min(c.size(), 2 * n);
    }
  }
  return c;
}

namespace {

using Clock = std::chrono::steady_clock;

// One failure to confirm: a result, or a distinct failure of one.
struct Failure {
  json* entry;
  std::string key;
  bool top;  // the result itself (its status can change), not a distinct failure
};

class Confirmer {
 public:
  Confirmer(const ConfirmOptions& o, std::ostream& log)
      : o_(o), log_(log), end_(Clock::now() + std::chrono::seconds(o.seconds)) {}

  void confirm(Failure& f, const json& history, const std::string& manifest, const std::string& scratch) {
    json& e = *f.entry;
    manifest_ = manifest, scratch_ = scratch, key_ = f.key, case_ = e.at("counterexample");
    const int alone = run(nullptr);
    if (alone == 1) {
      e["observations"]["alone"] = {{"reproduced", true}};
      return;
    }
    if (alone != 0) return noVerdict(e, why_);
    if (!f.top) {  // a run's further failures: judged alone, their history not searched
      e["observations"]["alone"] = {{"reproduced", false}, {"searched", false}};
      e["reason"] = "not reproduced alone in a fresh process (history-dependent or flaky; only a run's first " +
                    std::string("failure has its history searched): ") + e.value("reason", std::string());
      return;
    }
    const std::vector<json> calls = readHistory(history);
    if (calls.empty())
      return flaky(f, "it passed alone in a fresh process, and its process recorded no call before it" + note_);
    std::vector<size_t> all(calls.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    // A process that gave no verdict (the --confirm-time ran out, it died or
    // hung) tells nothing: it is never counted as a pass, which would make a
    // failure that recurs flaky. ddmin takes it as "does not fail" (it then
    // keeps the larger prefix, one known to fail); any other step ends
    // without a verdict, the result as it was.
    bool unjudged = false;
    const auto verdict = [&](const json* prefix) {
      const int r = run(prefix);
      unjudged |= r < 0;
      return r;
    };
    const auto fails = [&](const std::vector<size_t>& pick) {
      json prefix = json::array();
      for (size_t i : pick) prefix.push_back(calls[i]);
      return verdict(&prefix) == 1;
    };
    if (!fails(all)) {
      if (unjudged) return noVerdict(e, why_);
      return flaky(f, "it passed alone in a fresh process and after the " + std::to_string(calls.size()) +
                          " calls its process judged before it" + note_);
    }
    const std::vector<size_t> least = ddmin(all, fails, 48);
    json prefix = json::array();
    for (size_t i : least) prefix.push_back(calls[i]);
    // The same in o_.tries fresh processes each way before it is called
    // history-dependent: a fault that comes and goes is flaky.
    // A failure alone, or a pass after the calls, is flakiness shown
    // whatever an unjudged process would have said; short of that, an
    // unjudged process leaves it undecided.
    int aloneFailed = 0, aloneJudged = 1, withFailed = 0, withJudged = 0;  // the first alone run passed
    unjudged = false;
    for (int k = 1; k < o_.tries; ++k) {
      const int r = verdict(nullptr);
      aloneFailed += r == 1, aloneJudged += r >= 0;
    }
    for (int k = 0; k < o_.tries; ++k) {
      const int r = verdict(&prefix);
      withFailed += r == 1, withJudged += r >= 0;
    }
    if (aloneFailed > 0 || withFailed < withJudged)
      return flaky(f, "alone it failed " + std::to_string(aloneFailed) + " of " + std::to_string(aloneJudged) +
                          " fresh processes, after the calls before it " + std::to_string(withFailed) + " of " +
                          std::to_string(withJudged));
    if (unjudged) return noVerdict(e, why_);
    historyDependent(f, prefix, calls.size());
  }

  bool timeLeft() const { return Clock::now() < end_; }
  int processes() const { return processes_; }

 private:
  // 1 when the case fails judged (after `prefix`, when given) in a fresh
  // target process, 0 when it passes; -1 with why_ set when it gave no
  // verdict.
  int run(const json* prefix) {
    const long left = std::chrono::duration_cast<std::chrono::seconds>(end_ - Clock::now()).count();
    if (left <= 0) {
      why_ = "the --confirm-time ran out", note_ = " (the --confirm-time ran out before the search ended)";
      return -1;
    }
    const std::string ask = scratch_ + ".confirm.json", out = scratch_ + ".confirm.out.json";
    writeText(ask, json{{"key", key_}, {"case", case_}, {"prefix", prefix ? *prefix : json::array()}}.dump());
    std::vector<std::string> argv = o_.command;
    argv.insert(argv.end(), {"--manifest", manifest_, "--out", out, "--confirm", ask});
    ++processes_;
    const ChildResult r =
        runChild(argv, static_cast<int>(std::min<long>(left, o_.processSeconds)), scratch_ + ".confirm.log", o_.env);
    json got;
    try {
      got = json::parse(readFile(out)).at("confirm");
    } catch (const std::exception&) {
    }
    std::error_code ec;
    for (const auto& p : {ask, out, scratch_ + ".confirm.log", out + ".inflight", out + ".stage"}) fs::remove(p, ec);
    if (r.timedOut || r.signal || !got.is_object() || !got.value("judged", false)) {
      why_ = r.timedOut ? "its confirming process did not finish within " + std::to_string(o_.processSeconds) + " s"
             : r.signal ? "its confirming process " + childEnd(r, false, o_.processSeconds)
             : got.is_object()
                 ? got.value("why", std::string("no verdict"))
                 : "its confirming process wrote no verdict (" + childEnd(r, false, o_.processSeconds) + ")";
      return -1;
    }
    return got.value("failed", false) ? 1 : 0;
  }

  std::vector<json> readHistory(const json& history) {
    std::vector<json> calls;
    const std::string file = history.value("file", std::string());
    const size_t before = history.value("calls", size_t(0));
    std::ifstream in(file);
    std::string line;
    for (size_t i = 0; i < before && std::getline(in, line); ++i) try {
        calls.push_back(json::parse(line));
      } catch (const std::exception&) {
        break;
      }
    if (calls.size() > o_.maxPrefix) {
      calls.erase(calls.begin(), calls.end() - static_cast<long>(o_.maxPrefix));
      note_ = " (the last " + std::to_string(o_.maxPrefix) + " of them searched)";
    }
    return calls;
  }

  void noVerdict(json& e, const std::string& why) { e["observations"]["alone"] = {{"judged", false}, {"why", why}}; }

  void flaky(Failure& f, const std::string& how) {
    json& e = *f.entry;
    e["observations"]["alone"] = {{"reproduced", false}};
    const std::string was = e.value("reason", std::string());
    e["reason"] = "flaky: it failed in its own process but does not fail alone: " + how + " (" + was + ")";
    if (f.top) e["status"] = "flaky";
  }

  void historyDependent(Failure& f, const json& prefix, size_t searched) {
    json& e = *f.entry;
    std::string keys;
    json listed = json::array();
    for (const auto& c : prefix) {
      keys += (keys.empty() ? "" : ", ") + c.value("key", std::string());
      listed.push_back(c.value("key", std::string()));
    }
    e["observations"]["alone"] = {{"reproduced", false},
                                  {"history_dependent", true},
                                  {"prefix", listed},
                                  {"calls_searched", searched},
                                  {"prefix_cases", prefix}};
    e["reason"] = "history-dependent: it passes alone in a fresh process and fails after " +
                  std::to_string(prefix.size()) + " earlier call(s) of its process (" + keys + "; of the " +
                  std::to_string(searched) +
                  " before it), which its reproducer runs first: " + e.value("reason", std::string());
    if (e.contains("reproducer"))
      setReproducerPrefix(e.at("reproducer").get<std::string>(), prefix, e["reason"].get<std::string>());
  }

  const ConfirmOptions& o_;
  std::ostream& log_;
  const Clock::time_point end_;
  int processes_ = 0;
  std::string why_, note_;
  std::string manifest_, scratch_, key_;
  json case_;
};

}  // namespace

void confirmAlone(json& doc, const std::string& outPath, const ConfirmOptions& o, std::ostream& log) {
  std::set<std::string> files;
  std::vector<std::pair<Failure, json>> todo;  // each failure and its process's history
  for (auto& r : doc["results"]) {
    if (!r.is_object() || !r.contains("observations") || !r["observations"].is_object()) continue;
    json& obs = r["observations"];
    if (obs.contains("history")) files.insert(obs["history"].value("file", std::string()));
    if (r.value("status", "") != "fail" || !obs.contains("history") || obs.contains("crash") || obs.contains("alone"))
      continue;
    const json history = obs["history"];
    todo.push_back({{&r, r.value("key", std::string()), true}, history});
    if (obs.contains("distinct_failures") && obs["distinct_failures"].is_array())
      for (auto& d : obs["distinct_failures"]) todo.push_back({{&d, r.value("key", std::string()), false}, history});
  }
  if (!todo.empty() && o.seconds > 0) {
    Confirmer c(o, log);
    size_t dependent = 0, flaky = 0, unjudged = 0, unsearched = 0;
    for (auto& [f, history] : todo) {
      if (!c.timeLeft()) {
        f.entry->operator[]("observations")["alone"] = {{"judged", false}, {"why", "the --confirm-time ran out"}};
        ++unjudged;
        continue;
      }
      try {
        c.confirm(f, history, doc.value("manifest", std::string()), outPath);
      } catch (const std::exception& e) {  // a file that cannot be written: no verdict
        f.entry->operator[]("observations")["alone"] = {{"judged", false}, {"why", e.what()}};
      }
      const json& alone = f.entry->at("observations").at("alone");
      dependent += alone.value("history_dependent", false);
      unsearched += alone.value("searched", true) == false;
      flaky += alone.value("reproduced", true) == false && !alone.value("history_dependent", false) &&
               alone.value("searched", true);
      unjudged += alone.value("judged", true) == false;
    }
    const size_t reproduced = todo.size() - dependent - flaky - unjudged - unsearched;
    if (reproduced < todo.size())  // a line only where a failure did not simply recur alone
      log << "[" << doc.value("name", "?") << "] " << todo.size()
          << " failure(s) judged alone in fresh processes: " << reproduced << " recurred, " << dependent
          << " history-dependent, " << flaky << " flaky, " << unsearched << " further failure(s) did not recur, "
          << unjudged << " without a verdict (" << c.processes() << " processes)" << std::endl;
  }
  // Every process's log of this target (those with no failure too).
  std::error_code ec;
  const fs::path out(outPath);
  const std::string stem = out.filename().string() + ".history.";
  for (const auto& f : fs::directory_iterator(out.has_parent_path() ? out.parent_path() : fs::path("."), ec))
    if (f.path().filename().string().rfind(stem, 0) == 0) files.insert(f.path().string());
  for (const auto& f : files)
    if (!f.empty()) fs::remove(f, ec);
  for (auto& r : doc["results"])  // the file is gone: its name and count are of no use in the report
    if (r.is_object() && r.contains("observations") && r["observations"].is_object())
      r["observations"].erase("history");
}

}  // namespace flagprop
