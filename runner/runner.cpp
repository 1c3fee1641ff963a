#include "runner/runner.h"

#include "catalog/catalog.h"
#include "catalog/families.h"
#include "core/files.h"
#include "suites/registry.h"
#include "runner/example_db.h"
#include "runner/precompile.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <algorithm>
#include <tuple>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <memory>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace flagprop {

namespace {

std::string runKey(const PropertyRun& r);

std::string ident(std::string s) {
  for (auto& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// One property run as a GoogleTest test.
class PropertyTest : public testing::Test {
 public:
  // `pass`: the main one; the runs of heavy ops this process left for want
  // of a slot (--heavy-jobs); the second pass of a budgeted run.
  enum class Pass { kMain, kLeft, kDeepen };
  PropertyTest(const PropertyRun* run, TargetSession* session, json* doc, const TargetRunOptions* opts,
               const ResultSink* sink, Pass pass = Pass::kMain)
      : run_(run),
        session_(session),
        doc_(doc),
        opts_(opts),
        sink_(sink),
        deepen_(pass == Pass::kDeepen),
        left_(pass == Pass::kLeft) {}

  void TestBody() override {
    const Target& t = session_->target();
    // Under --jobs: an op another process of this target claimed is its run, not this one's.
    if (!opts_->claimDir.empty() && !run_->op.empty() && !takeOp()) return;
    // The second pass of a budgeted run: only a run whose first pass failed.
    long at = -1;  // where its first result was, for the second
    if (deepen_ && (at = takeFirstPassFailure()) < 0) return;
    const std::string label =
        run_->id + " " + run_->title + (run_->op.empty() ? "" : " " + run_->op + " " + run_->dtype);
    // An excluded op's skip is a line in the report, not on the console.
    const bool quiet = run_->quiet;
    const bool print = !quiet && opts_->verbose;
    if (print) std::cout << "[" << t.name << "] " << label << " ..." << std::flush;
    const size_t leftBefore = session_->leftRunning().size();
    RunOptions ro = opts_->run;
    if (opts_->progressFd >= 0) {
      const int fd = opts_->progressFd;
      const std::string key = opts_->progressKey;
      const auto t0 = std::chrono::steady_clock::now();
      auto last = std::make_shared<std::chrono::steady_clock::time_point>();
      const std::string what = "[" + t.name + "] " + label;
      ro.progress = [fd, key, t0, last, what](int cases) {
        const auto now = std::chrono::steady_clock::now();
        if (now - *last < std::chrono::milliseconds(200)) return;
        *last = now;
        const double s = std::chrono::duration<double>(now - t0).count();
        writeConsoleFrame(fd, key, 'P',
                          what.substr(0, 90) + ": " + std::to_string(cases) + " cases, " +
                              std::to_string(static_cast<int>(s)) + " s");
      };
    }
    if (!opts_->exampleDb.empty() && ro.reproduce.empty())
      ro.examples = loadExamples(exampleFolder(opts_->exampleDb, t.name, t.device), runKey(*run_), t.name);
    const bool first = opts_->firstPass && !deepen_ && !run_->op.empty();
    if (first) ro.shrinkSeconds = 0, ro.distinct = 1, ro.flakyReplays = 0;
    PropertyOutcome o = runProperty(*run_, ro);
    if (slotted_) {  // which of the --heavy-jobs slots it ran in, and how long it waited for one
      o.observations["heavy_slot"] = {
          {"slot", heavy().slot.held()}, {"left_first", left_}, {"waited_s", heavy().waitedSeconds}};
    }
    if (first && o.status == "fail") {
      o.observations["first_pass"] = true;
      o.reason += " [first pass of a budgeted run: not yet shrunk or judged again]";
    }
    if (o.observations.contains("db"))  // what passes now, or is no longer a valid case, is not kept
      for (const char* k : {"fixed", "dropped"})
        for (const auto& ex : o.observations.at("db").value(k, json::array()))
          forgetExample(ex.value("file", std::string()));
    json r = o.toJson();
    const json& left = session_->leftRunning();
    if (left.size() > leftBefore) {  // started during this run and never ended: reported, not ignored
      r["left_running"] = json(std::vector<json>(left.begin() + static_cast<long>(leftBefore), left.end()));
      (*doc_)["left_running"] = left;
    }
    if (!session_->unverified().empty()) r["unverified"] = true;  // a pinned hash or version did not match
    (*doc_)["results"].push_back(r);
    if (*sink_) (*sink_)(*session_, o, *doc_);
    if (at >= 0) {  // the second pass's result where the first was (the sink wrote it last)
      json& results = (*doc_)["results"];
      json moved = results.back();
      results.erase(results.end() - 1);
      results.insert(results.begin() + std::min<long>(at, static_cast<long>(results.size())), std::move(moved));
      const std::string kept = results.at(std::min<size_t>(at, results.size() - 1)).dump();
      std::error_code ec;
      for (const auto& old : oldReproducers_)  // the first pass's files the second pass's result does not name
        if (!old.empty() && kept.find(json(old).dump()) == std::string::npos) fs::remove(old, ec);
    }
    if (print) {
      std::cout << " " << o.status << " (" << o.casesRun << " cases, " << static_cast<int>(o.seconds * 1000) << " ms)";
      if (o.status != "pass") std::cout << ": " << o.reason;
      std::cout << std::endl;
      for (const auto& l : r.value("left_running", json::array()))
        std::cout << "[" << t.name << "] " << label << ": the code under test left a " << l.value("kind", "")
                  << " running: " << (l.value("kind", "") == "thread" ? l.value("name", "") : l.value("command", ""))
                  << std::endl;
    }
    if (opts_->exitOnDeviceLost && !session_->deviceLost.empty()) {
      std::cout << "[" << t.name << "] " << session_->deviceLost << "; going on in a fresh process" << std::endl;
      std::_Exit(kDeviceLostExit);  // the document is written (sink); no destructor may touch the broken context
    }
    const std::string want = t.expectedStatus(o.property, o.op, o.dtype);
    EXPECT_TRUE(t.statusExpected(o.status, o.property, o.op, o.dtype))
        << label << " on " << t.name << " was " << o.status << ", expected " << (want.empty() ? "pass or skip" : want)
        << ": " << o.reason;
  }

 private:
  // Removes this run's failing first-pass result from the document (and
  // its reproducers' files), to be replaced by the second pass's; its
  // index, or -1 when there is none (it passed, or another process ran it).
  long takeFirstPassFailure() {
    json& results = (*doc_)["results"];
    const std::string key = runKey(*run_);
    for (auto it = results.begin(); it != results.end(); ++it) {
      if (it->value("key", std::string()) != key) continue;
      const json obs = it->value("observations", json::object());
      if (it->value("status", std::string()) != "fail" || !obs.value("first_pass", false)) return -1;
      oldReproducers_ = {it->value("reproducer", std::string())};  // removed once the second pass has its own
      for (const auto& d : obs.value("distinct_failures", json::array()))
        oldReproducers_.push_back(d.value("reproducer", std::string()));
      const long at = it - results.begin();
      results.erase(it);
      return at;
    }
    return -1;
  }

 public:
  // What this process holds under --heavy-jobs: the slot and the op it
  // holds it for, and the heavy ops it left unclaimed for want of one.
  struct Heavy {
    HeavySlot slot;
    std::string op;
    double waitedSeconds = 0;
    std::set<std::string> left;
  };
  static Heavy& heavy() {
    static Heavy h;
    return h;
  }

 private:
  // Claims this run's op (claimOp) and, for an op that autotunes heavily
  // under --heavy-jobs, a slot first: in the main pass only a free one (none
  // free: the op is left, unclaimed, for this process's pass over the runs
  // it left, or for another process), in that later pass the first to come
  // free. A slot is kept through the op's runs and freed when a run of
  // another op starts. The second pass of a budgeted run takes no slot:
  // its kernels were compiled and tuned in the first. Returns whether the
  // run is this process's to run now.
  bool takeOp() {
    Heavy& h = heavy();
    const std::string& dir = opts_->claimDir;
    const std::string& op = run_->op;
    if (h.op != op) {
      h.slot.release();
      h.op.clear();
      h.waitedSeconds = 0;
    }
    const bool capped = opts_->heavySlots > 0 && !deepen_ && opAutotunesHeavily(op);
    slotted_ = false;
    if (left_ && !h.left.count(op)) return false;
    if (!capped) return claimOp(dir, op, opts_->shardIndex);
    if (!left_ && h.left.count(op)) return false;  // an op's runs stay together: all in the later pass
    const int holder = claimHolder(dir, op);
    if (holder >= 0 && holder != opts_->shardIndex) return false;  // another process's
    if (h.slot.held() < 0) {
      const auto t0 = std::chrono::steady_clock::now();
      const int k = left_ ? h.slot.take(dir, opts_->heavySlots) : h.slot.tryTake(dir, opts_->heavySlots);
      if (k < 0) {
        h.left.insert(op);
        return false;
      }
      h.op = op;
      h.waitedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (claimOp(dir, op, opts_->shardIndex)) return slotted_ = true;
    h.slot.release();  // another process claimed it meanwhile
    h.op.clear();
    return false;
  }

  const PropertyRun* run_;
  TargetSession* session_;
  json* doc_;
  const TargetRunOptions* opts_;
  const ResultSink* sink_;
  bool deepen_;
  bool left_;
  bool slotted_ = false;  // this run holds a --heavy-jobs slot (takeOp)
  std::vector<std::string> oldReproducers_;
};

json targetError(json doc, const std::string& why) {
  doc["status"] = "error";
  doc["error"] = why;
  doc["complete"] = true;
  return doc;
}

int runAsTests(const std::vector<PropertyRun>& runs, TargetSession& session, json& doc, const TargetRunOptions& opts,
               const ResultSink& sink) {
  std::vector<std::string> gtestArgs = {"flagprop"};
  std::vector<char*> argv;
  for (auto& a : gtestArgs) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  testing::InitGoogleTest(&argc, argv.data());
  // flagprop prints its own lines and writes its own JUnit (from the report).
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  const std::string suite = ident(session.target().name);
  for (const auto& run : runs) {
    const PropertyRun* r = &run;
    TargetSession* s = &session;
    json* d = &doc;
    const TargetRunOptions* o = &opts;
    const ResultSink* k = &sink;
    const std::string name = ident(run.id + "_" + run.title + (run.op.empty() ? "" : "_" + run.op + "_" + run.dtype));
    testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [r, s, d, o, k]() -> testing::Test* { return new PropertyTest(r, s, d, o, k); });
  }
  // A later pass over some runs, each a test named `prefix` + its key, after the main ones.
  auto later = [&](const char* prefix, PropertyTest::Pass pass, const std::function<bool(const PropertyRun&)>& takes) {
    for (const auto& run : runs) {
      if (run.op.empty() || !takes(run)) continue;
      const PropertyRun* r = &run;
      TargetSession* s = &session;
      json* d = &doc;
      const TargetRunOptions* o = &opts;
      const ResultSink* k = &sink;
      const std::string name = ident(prefix + run.id + "_" + run.op + "_" + run.dtype);
      testing::RegisterTest(
          suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
          [r, s, d, o, k, pass]() -> testing::Test* { return new PropertyTest(r, s, d, o, k, pass); });
    }
  };
  if (opts.heavySlots > 0 && !opts.claimDir.empty())  // --heavy-jobs: the heavy ops left for want of a slot
    later("left_", PropertyTest::Pass::kLeft, [](const PropertyRun& r) { return opAutotunesHeavily(r.op); });
  if (opts.firstPass)  // coverage before depth: the failures of the first pass, once every run had it
    later("deepen_", PropertyTest::Pass::kDeepen, [](const PropertyRun&) { return true; });
  const int failed = RUN_ALL_TESTS();
  PropertyTest::heavy().slot.release();  // other processes of the target may be waiting for it
  return failed;
}

std::string runKey(const PropertyRun& r) { return r.op.empty() ? r.id : r.id + "/" + r.op + "/" + r.dtype; }

// The installer runs first, then the op runs costliest family first
// (opCostRank); an op's runs stay together and in their order.
void takeCostliestFirst(std::vector<PropertyRun>& runs) {
  std::stable_sort(runs.begin(), runs.end(), [](const PropertyRun& a, const PropertyRun& b) {
    const int ra = a.op.empty() ? -1 : opCostRank(a.op), rb = b.op.empty() ? -1 : opCostRank(b.op);
    return ra < rb;
  });
}

// What an earlier process of this target left, sorted: the results kept,
// and the runs to judge again in this fresh process and how.
struct Earlier {
  std::set<std::string> done;                // run keys whose results are kept
  std::map<std::string, json> crashed;       // "op/dtype" -> the crash result
  std::map<std::string, json> confirm;       // run key -> a crash to judge once more, in this fresh process
  std::map<std::string, json> flaky;         // run key -> a flaky result to judge once more, in this fresh process
  std::map<std::string, std::string> retry;  // "op/dtype" -> why its runs start from their fallback
  std::map<std::string, json> retried;       // "op/dtype" -> that crash's result (a run without a fallback keeps it)
  // "op/dtype" -> explicit examples CPU ATen died on: its runs go again without them
  std::map<std::string, std::vector<std::string>> skipExamples;
};

// Sorts the results of `before` into `e`; the kept ones go into doc.results.
void sortEarlier(const json& before, Earlier& e, json& doc) {
  for (const auto& r : before.value("results", json::array())) {
    const ResultRecord rec = resultRecord(r);
    const Observations& obs = rec.observations;
    if (rec.key == "process") continue;
    if (obs.crashIn == "reference" && obs.sampler.rfind("explicit:", 0) == 0) {
      // CPU ATen died on an explicit example: the op's runs go again without
      // explicit examples (an edge that kills it once would kill it again on
      // the next), kept in the document for every later process.
      doc["explicit_skipped"].push_back({{"op", rec.op},
                                         {"dtype", rec.dtype},
                                         {"example", obs.sampler.substr(9)},
                                         {"crash", obs.crash.value_or("")}});
      e.skipExamples[rec.op + "/" + rec.dtype] = {"*", obs.sampler.substr(9)};
      continue;
    }
    if (obs.crashIn == "reference" && obs.sampler.empty() && !obs.retried) {
      // CPU ATen died on a schema sample: the op's runs go again from the
      // fallback's valid samples (a second crash there is kept).
      e.retry[rec.op + "/" + rec.dtype] = obs.crash.value_or("");
      e.retried[rec.op + "/" + rec.dtype] = r;
      continue;
    }
    const bool died = obs.crash.has_value();
    if (died) e.crashed[rec.op + "/" + rec.dtype] = r;
    // A death (not a hang: judging it again costs its time limit again) or a
    // lost device context not yet judged again: once more in this process,
    // which is a fresh one.
    const bool lost = rec.reason.rfind(kDeviceLostReason, 0) == 0;
    // (A death in CPU ATen or the stock path is a skip, no finding to confirm.)
    if ((died || lost) && !obs.recurred && !obs.as && obs.crash.value_or("").find("timed out") == std::string::npos &&
        obs.crashIn.empty() && !rec.counterexample.is_null()) {
      e.confirm[rec.key] = r;
      continue;
    }
    if (wantsFreshJudging(rec)) {
      e.flaky[rec.key] = r;
      continue;
    }
    doc["results"].push_back(r);
    e.done.insert(rec.key);
  }
}

// Sets `run` up to judge again what the earlier process left of it (a
// retry from the fallback, a crash or a flaky result to confirm); whether
// there was any.
bool judgeAgain(PropertyRun& run, Earlier& e) {
  if (const auto skip = e.skipExamples.find(run.op + "/" + run.dtype); skip != e.skipExamples.end())
    run.skipExamples.insert(run.skipExamples.end(), skip->second.begin(), skip->second.end());
  if (const auto again = e.retry.find(run.op + "/" + run.dtype); again != e.retry.end() && run.fallback) {
    const std::string why = again->second;
    run.fallback->first = []() { return true; };
    run.fallback->firstBecause = " (CPU ATen ended the process on a schema sample: " + why + ")";
    run.fallback->retriedAfter = why;
    return true;
  }
  if (const auto again = e.confirm.find(runKey(run)); again != e.confirm.end()) {
    run.confirmCrash = again->second;
    return true;
  }
  if (const auto again = e.flaky.find(runKey(run)); again != e.flaky.end()) {
    run.confirmFlaky = again->second;
    e.flaky.erase(again);
    return true;
  }
  return false;
}

// The crash of `run`'s op and dtype as `run`'s result ("(as P5) ..."), not
// judged again on its own.
json asCrashed(const PropertyRun& run, const json& crash) {
  json r = crash;
  r["property"] = run.id;
  r["title"] = run.title;
  r["key"] = runKey(run);
  r["reason"] = "(as " + crash.value("property", std::string()) + ") " + crash.value("reason", std::string());
  r["observations"]["as"] = crash.value("property", std::string());
  return r;
}

// Keeps the results of an earlier process of this target and drops their
// runs; the op runs of an op and dtype that crashed there get the crash.
// Returns "" or why the document cannot be resumed from.
std::string resume(const std::string& path, std::vector<PropertyRun>& runs, json& doc, const std::string& key) {
  json before;
  try {
    before = json::parse(readFile(path));
  } catch (const std::exception&) {
    return "";  // nothing was written: run everything
  }
  if (!takeDocumentMac(before, key))
    return "the document to resume from (" + path +
           ") was changed by something other than flagprop (its MAC does not match)";
  if (before.contains("precompile")) doc["precompile"] = before.at("precompile");  // the first process's workers
  Earlier e;
  for (const auto& x : before.value("explicit_skipped", json::array())) {  // from the processes before that one
    doc["explicit_skipped"].push_back(x);
    e.skipExamples[x.value("op", "") + "/" + x.value("dtype", "")] = {"*", x.value("example", "")};
  }
  sortEarlier(before, e, doc);
  std::vector<PropertyRun> left;
  std::set<std::string> crashedBefore;  // "op/dtype" whose crashed run comes before the one at hand
  for (auto& run : runs) {
    const std::string opDtype = run.op + "/" + run.dtype;
    const auto c = e.crashed.find(opDtype);
    if (c != e.crashed.end() && c->second.value("key", std::string()) == runKey(run)) crashedBefore.insert(opDtype);
    if (e.done.count(runKey(run))) continue;
    if (const auto r = e.retried.find(opDtype); r != e.retried.end() && !run.fallback && run.checkKind == "op") {
      // CPU ATen died on a case of a run with no fallback to draw from
      // (P10): the same search would die the same way; its health skip stands.
      doc["results"].push_back(r->second.value("key", std::string()) == runKey(run) ? r->second
                                                                                    : asCrashed(run, r->second));
      continue;
    }
    if (judgeAgain(run, e)) {
      left.push_back(std::move(run));
      continue;
    }
    // The crash stands for the runs of its op and dtype after it (they would
    // judge the same cases); one before it whose result was not yet written
    // (the document is written at most once a second between passes) is
    // judged again.
    if (c != e.crashed.end() && run.checkKind == "op" && crashedBefore.count(opDtype)) {
      if (e.confirm.count(c->second.value("key", std::string()))) {
        // The crash is judged again in this process: this run judges the same
        // case then (from the same observation), so that it ends as that
        // judging says, not as the first process's crash.
        run.confirmCrash = c->second;
        left.push_back(std::move(run));
        continue;
      }
      doc["results"].push_back(asCrashed(run, c->second));
      continue;
    }
    left.push_back(std::move(run));
  }
  for (auto& [k, r] : e.flaky) {  // no run of this process: kept as it was, and not sent again
    r["observations"]["fresh"] = {{"judged", false}};
    doc["results"].push_back(r);
  }
  runs = std::move(left);
  return "";
}

}  // namespace

std::string childEnd(const ChildResult& r, bool finished, int timeoutSeconds) {
  if (!r.timedOut && !r.stopped && !r.signal && (r.exitCode == 0 || r.exitCode == 1) && finished) return "";
  if (r.stopped) return "target process stopped (the run was interrupted)";
  if (r.referenceTimedOut)
    return "target process timed out on one case (CPU ATen computed its reference longer than " +
           std::to_string(r.referenceSeconds) + " s)";
  if (r.caseTimedOut) return "target process timed out on one case (it ran longer than --case-timeout)";
  return r.timedOut ? "target process timed out after " + std::to_string(timeoutSeconds) + " s"
         : r.signal ? "target process died with signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")"
         : finished ? "target process exited with code " + std::to_string(r.exitCode)
                    : "target process exited (code " + std::to_string(r.exitCode) + ") before finishing its properties";
}

json confirmInProcess(const std::vector<PropertyRun>& runs, const json& ask) {
  const auto find = [&](const std::string& key) -> const PropertyRun* {
    for (const auto& r : runs)
      if (runKey(r) == key) return &r;
    return nullptr;
  };
  for (const auto& call : ask.value("prefix", json::array()))  // the earlier calls: their verdicts do not matter
    if (const PropertyRun* r = find(call.value("key", std::string())); r && r->judge) try {
        r->judge(Case{call.at("case")});
      } catch (const std::exception&) {
      }
  const std::string key = ask.value("key", std::string());
  const PropertyRun* run = find(key);
  if (!run || !run->judge) return {{"judged", false}, {"why", "no run " + key + " in this target"}};
  try {
    const json result = run->judge(Case{ask.at("case")});
    if (result.contains("discard") || result.contains("inactive"))
      return {{"judged", false}, {"why", "the case was not judged here (discarded or inactive)"}};
    const json v = verdictOf(result, run->id);
    return {{"judged", true}, {"failed", !v.at("pass").get<bool>()}, {"why", v.value("reason", std::string())}};
  } catch (const std::exception& e) {  // a harness error (py::error_already_set, c10::Error, a tampered judging)
    return {{"judged", false}, {"why", std::string("harness error: ") + e.what()}};
  }
}

PropertyOutcome crashOutcome(const json& inflight, const std::string& why, const Target& t) {
  const std::string key = inflight.value("key", std::string());
  const auto a = key.find('/'), b = key.find('/', a == std::string::npos ? a : a + 1);
  const PropertyDef* def = findProperty(key.substr(0, a));
  if (!def) throw std::invalid_argument("the in-flight record names no run: " + key);
  PropertyOutcome o;
  o.property = def->id;
  o.title = def->title;
  if (a != std::string::npos && b != std::string::npos) {
    o.op = key.substr(a + 1, b - a - 1);
    o.dtype = key.substr(b + 1);
    // The entry the run used: where a hand-written entry lacks the dtype, a
    // target calling ATen runs the schema-derived one (findOp would give the
    // hand-written entry, and the reproducer would judge without the schema).
    if (const OpEntry* e = targetEntry(t, o.op, o.dtype)) o.judging = e->judging;
  }
  o.status = "fail";
  o.reason = "the " + why + " on this case (kept unshrunk: the process that would shrink it is gone)";
  o.casesRun = 1;
  o.counterexample = inflight.value("case", json());
  o.checkKind = def->checkKind;
  o.observations = {{"crash", why}};
  if (inflight.contains("sampler")) o.observations["sampler"] = inflight.at("sampler");
  if (inflight.contains("example"))  // a stored example, judged first: it is in the database already
    o.observations["db"] = {{"replayed", 1}, {"still_failing", {{"file", inflight.at("example")}}}};
  if (inflight.value("confirming", false))
    o.reason = "the " + why + " on this case, judged again after it had failed (kept unshrunk)";
  if (inflight.value("confirming_flaky", false))  // flaky in its first process; died when judged first in this one
    o.reason = "the " + why + " on this case, when it was judged first in a fresh process after it had failed, " +
               "then passed, in an earlier one (kept unshrunk)";
  if (inflight.contains("confirming_crash")) {  // it had ended a process before: the same death twice
    o.reason = "the " + why + " on this case, and again when it was judged in a fresh process (kept unshrunk)";
    o.observations["recurred"] = true;
    o.observations["replays"] = {{"failed", 2}, {"of", 2}};
  }
  return o;
}

json runTarget(const std::string& manifest, const TargetRunOptions& opts, const ResultSink& sink) {
  json doc = {{"manifest", manifest},
              {"name", fs::path(manifest).stem().string()},
              {"status", "ok"},
              {"results", json::array()}};
  std::unique_ptr<TargetSession> session;
  std::vector<PropertyRun> runs;
  try {
    Target t = loadTarget(manifest);
    targetProperties(t);  // the registry's checks of the manifest
    doc["name"] = t.name;
    doc["description"] = t.description;
    doc["expect"] = t.expect;
    doc["labels"] = t.labels;
    doc["target"] = t.toJson();
    session = std::make_unique<TargetSession>(t, opts.unverified);
    doc["provenance"] = session->provenance();
    if (!session->unverified().empty()) {
      doc["unverified"] = session->unverified();
      for (const auto& m : session->unverified())
        std::cout << "[" << t.name << "] unverified: " << m << "; every result is marked unverified" << std::endl;
    }
    runs = planRuns(*session, opts.selection);
  } catch (const std::exception& e) {
    std::cout << "[" << doc["name"].get<std::string>() << "] error: " << e.what() << std::endl;
    return targetError(doc, e.what());
  }
  if (!opts.confirmFile.empty()) {  // one failure confirmed in this fresh process, no runs
    try {
      doc["confirm"] = confirmInProcess(runs, json::parse(readFile(opts.confirmFile)));
    } catch (const std::exception& e) {
      doc["confirm"] = {{"judged", false}, {"why", e.what()}};
    }
    doc["complete"] = true;
    return doc;
  }
  if (!opts.resumeFrom.empty()) {
    const std::string why = resume(opts.resumeFrom, runs, doc, opts.docKey);
    if (!why.empty()) return targetError(doc, why);
  }
  if (!opts.docPath.empty()) writeTargetDocument(opts.docPath, doc, opts.docKey);
  std::vector<PropertyRun> precompiled;  // this shard's share of the ops to compile ahead (all runs without claims)
  if (!opts.claimDir.empty()) {
    takeCostliestFirst(runs);
    std::map<std::string, size_t> index;  // op -> its place among the ops
    for (const auto& r : runs)
      if (!r.op.empty() && index.emplace(r.op, index.size()).second &&
          static_cast<int>(index.size() - 1) % std::max(opts.shardCount, 1) == opts.shardIndex)
        for (const auto& q : runs)
          if (q.op == r.op) precompiled.push_back(q);
  }
  // Not again in a process resumed after a crash: the first one's workers filled the cache.
  if (opts.precompileWorkers > 0 && opts.resumeFrom.empty()) {
    if (opts.progressFd >= 0) {
      writeConsoleFrame(opts.progressFd, opts.progressKey, 'P',
                        "[" + doc["name"].get<std::string>() + "] compiling ahead in " +
                            std::to_string(opts.precompileWorkers) + " processes");
    }
    const json pre = precompile(*session, opts.claimDir.empty() ? runs : precompiled,
                                {opts.precompileWorkers, opts.precompileCaseSeconds, opts.precompileSeconds, opts.run});
    if (!pre.is_null()) {
      doc["precompile"] = pre;
      if (opts.verbose)
        std::cout << "[" << doc["name"].get<std::string>() << "] compiled ahead: " << pre.value("ran", 0) << " of "
                  << pre.value("cases", 0) << " calls in " << pre.value("workers", 0) << " processes, "
                  << static_cast<int>(pre.value("seconds", 0.0)) << " s" << std::endl;
      if (!opts.docPath.empty()) writeTargetDocument(opts.docPath, doc, opts.docKey);
    }
  }
  runAsTests(runs, *session, doc, opts, sink);
  if (opts.progressFd >= 0) writeConsoleFrame(opts.progressFd, opts.progressKey, 'P', "");
  doc["complete"] = true;  // the parent tells a finished target from one that died
  return doc;
}

namespace {
volatile sig_atomic_t gStop = 0;
}  // namespace

std::string consoleMac(const std::string& key, uint64_t seq, char kind, std::string_view text) {
  char head[24];
  std::snprintf(head, sizeof head, "%016llx%c", static_cast<unsigned long long>(seq), kind);
  return hmacSha256Hex(key, std::string(head) + std::string(text)).substr(0, 32);
}

std::string consoleText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += '?';  // a C1 control (U+0080..U+009F: CSI among them)
      ++i;
      continue;
    }
    out += c < 0x20 || c == 0x7f ? '?' : text[i];
  }
  return out;
}

namespace {
std::atomic<uint64_t> gConsoleSeq{0};  // this process's last frame number
}  // namespace

void writeConsoleFrame(int fd, const std::string& key, char kind, std::string_view text) {
  if (fd < 0) return;
  text = text.substr(0, text.find('\n'));
  const uint64_t seq = ++gConsoleSeq;
  char number[20];
  std::snprintf(number, sizeof number, "%016llx", static_cast<unsigned long long>(seq));
  // A line end first: a line the code under test left unfinished on the
  // descriptor ends there (and is foreign), never swallowing this frame.
  std::string frame = "\n";
  frame += number;
  frame += consoleMac(key, seq, kind, text);
  frame += kind;
  frame.append(text);
  frame += '\n';
  [[maybe_unused]] const auto n = write(fd, frame.data(), frame.size());
}

ConsoleFrames::int_type ConsoleFrames::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::streamsize ConsoleFrames::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) {
    if (s[i] != '\n') {
      line_ += s[i];
      continue;
    }
    writeConsoleFrame(fd_, key_, 'L', line_);
    line_.clear();
  }
  return n;
}

int ConsoleFrames::sync() {
  if (!line_.empty()) writeConsoleFrame(fd_, key_, 'T', line_);
  line_.clear();
  return 0;
}

void requestStop() { gStop = 1; }
bool stopRequested() { return gStop != 0; }

namespace {

// Starts one child as runChild describes; its pid, or 0 when it could not start.
// `console` (when >= 0) is the write end of the pipe that becomes the
// child's fd 3; `secret` the read end of the one that becomes its fd 4.
pid_t spawnChild(const ChildSpec& c, int console, int secret, int& error) {
  std::vector<char*> argv;
  for (const auto& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);  // never the terminal
  if (console >= 0) posix_spawn_file_actions_adddup2(&fa, console, 3);            // the progress line, relayed
  if (secret >= 0) posix_spawn_file_actions_adddup2(&fa, secret, 4);
  if (!c.capturePath.empty()) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, c.capturePath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  std::vector<std::string> envStore;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool overridden = false;
    for (const auto& o : c.env) overridden |= kv.compare(0, o.find('=') + 1, o, 0, o.find('=') + 1) == 0;
    if (!overridden) envStore.push_back(kv);
  }
  for (const auto& o : c.env) envStore.push_back(o);
  std::vector<char*> envp;
  for (auto& e : envStore) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // SIGINT blocked from the first instruction of the child: Ctrl-C reaches
  // the whole foreground process group, but a child is stopped by this
  // process alone (or, finishOnStop, finishes). A `flagprop run-target` then
  // ignores SIGINT and unblocks it (a pending one is dropped); a child that
  // leaves it blocked is never interrupted by it.
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  posix_spawnattr_setsigmask(&attr, &blocked);
  short flags = POSIX_SPAWN_SETSIGMASK;
  if (c.ownGroup) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  const int spawned = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  error = spawned;
  return spawned == 0 ? pid : 0;
}

}  // namespace

ChildResult runChild(const std::vector<std::string>& args, int timeoutSeconds, const std::string& capturePath,
                     const std::vector<std::string>& env, const CaseWatch& watch) {
  return runChildren({ChildSpec{args, capturePath, env, watch}}, timeoutSeconds).at(0);
}

namespace {

// The children of one runChildren call while they run: each one's process,
// its console relay, its capture and the watch on its case in flight.
class Children {
 public:
  Children(const std::vector<ChildSpec>& specs, int timeoutSeconds)
      : specs_(specs),
        results_(specs.size()),
        run_(specs.size()),
        relay_(specs.size(), -1),
        pending_(specs.size()),
        lastFrame_(specs.size(), 0),
        start_(std::chrono::steady_clock::now()),
        deadline_(start_ + std::chrono::seconds(timeoutSeconds)) {
    for (size_t i = 0; i < specs_.size(); ++i) start(i);
  }

  // Looks at every child once; whether any is still running.
  bool look() {
    bool left = false;
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < specs_.size(); ++i)
      if (!run_[i].done) left = lookAt(i, now) || left;
    return left;
  }

  // Relays, caps and reads the status of every child, once all have ended.
  std::vector<ChildResult> finish() {
    for (size_t i = 0; i < specs_.size(); ++i) {
      pump(i, true);  // what it wrote last; then the pipe is closed: a descendant left behind writes nowhere
      if (relay_[i] >= 0) close(relay_[i]);
      cap(i);
      if (run_[i].dropped > 0) {
        std::ofstream note(specs_[i].capturePath, std::ios::app);
        note << "\nflagprop: " << run_[i].dropped << " bytes of this process's output were cut (the capture keeps "
             << (kCaptureCapBytes >> 20) << " MiB and what came after its last cut)\n";
      }
      if (run_[i].pid == 0) continue;
      if (WIFEXITED(run_[i].status)) results_[i].exitCode = WEXITSTATUS(run_[i].status);
      if (WIFSIGNALED(run_[i].status)) results_[i].signal = WTERMSIG(run_[i].status);
    }
    return results_;
  }

 private:
  struct Running {
    pid_t pid = 0;
    int status = 0;
    bool done = false;
    std::string lastCase;  // the in-flight case seen last, and since when
    std::chrono::steady_clock::time_point caseSince, lastLook;
    std::string stage;  // its stage seen last, and since when
    std::chrono::steady_clock::time_point stageSince;
    std::chrono::steady_clock::time_point lastCap;  // when its capture file's size was looked at last
    uint64_t dropped = 0;                           // bytes of its capture cut off past kCaptureCapBytes
  };

  void start(size_t i) {
    const ChildSpec& spec = specs_[i];
    int console[2] = {-1, -1}, secret[2] = {-1, -1};
    // A console only for a child with a key: its frames' MACs (consoleMac) are what the code under test cannot write.
    if (!spec.capturePath.empty() && !spec.secret.empty() && pipe2(console, O_CLOEXEC) == 0)
      fcntl(console[0], F_SETFL, O_NONBLOCK);
    if (!spec.secret.empty() && pipe2(secret, O_CLOEXEC) != 0) secret[0] = secret[1] = -1;
    int error = 0;
    if (!spec.secret.empty() && secret[0] < 0) error = errno;
    run_[i].pid = error == 0 ? spawnChild(spec, console[1], secret[0], error) : 0;
    if (run_[i].pid == 0) results_[i].spawnError = std::strerror(error ? error : EAGAIN);
    if (console[1] >= 0) close(console[1]);
    if (secret[0] >= 0) {
      close(secret[0]);
      // Fits the pipe's buffer (PIPE_BUF): the write never waits for the
      // child. None when no child started: nobody would read it (and the
      // write would raise SIGPIPE).
      if (run_[i].pid != 0) [[maybe_unused]]
        const auto n = write(secret[1], spec.secret.data(), spec.secret.size());
      close(secret[1]);
    }
    relay_[i] = console[0];
    run_[i].done = run_[i].pid == 0;
    run_[i].caseSince = run_[i].lastLook = start_;
  }

  // Cuts a child's capture file back to kCaptureCapBytes (the child appends,
  // O_APPEND: it goes on writing at the cut).
  void cap(size_t i) {
    struct stat st {};
    const std::string& path = specs_[i].capturePath;
    if (!path.empty() && ::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) > kCaptureCapBytes &&
        ::truncate(path.c_str(), static_cast<off_t>(kCaptureCapBytes)) == 0)
      run_[i].dropped += static_cast<uint64_t>(st.st_size) - kCaptureCapBytes;
  }

  // Relays the frames a child wrote to its fd 3 (consoleMac) to this
  // process's stdout; a line that is no frame of its goes to its capture
  // file. `last`: the child has ended: all it wrote is read (up to
  // kDrainBytes: a descendant left behind may write for ever) and a line
  // without its end is taken whole.
  void pump(size_t i, bool last = false) {
    if (relay_[i] < 0) return;
    char buf[4096];
    ssize_t n = 0;
    std::string& pending = pending_[i];
    size_t got = 0;
    for (int k = 0; (last ? got < kDrainBytes : k < 16) && (n = read(relay_[i], buf, sizeof buf)) > 0; ++k) {
      pending.append(buf, static_cast<size_t>(n));  // at most 64 KiB a look while it runs
      got += static_cast<size_t>(n);
      if (pending.size() > 4 * kMaxFrameBytes) relayLines(i, false);  // a flood is handled as it comes
    }
    relayLines(i, last);
  }

  // The whole lines of pending_[i] (all of it with `last`): frames to
  // stdout, anything else to the capture file.
  void relayLines(size_t i, bool last) {
    std::string& pending = pending_[i];
    std::string out, foreign;
    size_t at = 0;
    while (at < pending.size()) {
      size_t end = pending.find('\n', at), next = 0;
      if (end != std::string::npos && end - at <= kMaxFrameBytes)
        next = end + 1;
      else if (pending.size() - at > kMaxFrameBytes)  // a line too long for a frame: foreign, cut
        next = end = at + kMaxFrameBytes;
      else if (last)
        next = end = pending.size();
      else
        break;  // the rest of a line still being written
      const std::string_view line(pending.data() + at, end - at);
      at = next;
      if (line.empty()) continue;  // (each frame starts with a line end)
      const char* kind = frameKind(i, line);
      if (kind == nullptr) {
        foreign += "flagprop: the code under test wrote to flagprop's console descriptor: " +
                   consoleText(line.substr(0, 200)) + (line.size() > 200 ? " [...]" : "") + "\n";
        continue;
      }
      const std::string text = consoleText(line.substr(kFrameHead + 1));
      if (*kind == 'P') out += "\r\033[K" + text.substr(0, 200);
      if (*kind == 'T' || *kind == 'L') out += text;
      if (*kind == 'L') out += '\n';
    }
    pending.erase(0, at);
    if (!out.empty()) {
      std::cout.flush();
      [[maybe_unused]] const auto w = write(STDOUT_FILENO, out.data(), out.size());
    }
    if (!foreign.empty() && !specs_[i].capturePath.empty()) {
      std::ofstream capture(specs_[i].capturePath, std::ios::app);
      capture << foreign;
    }
  }

  // The kind byte of `line` when it is a frame of child i's (its MAC checks
  // under the child's key and its number is past the last one taken), else
  // null.
  const char* frameKind(size_t i, std::string_view line) {
    if (line.size() <= kFrameHead || specs_[i].secret.empty()) return nullptr;
    const std::string number(line.substr(0, 16));
    if (number.find_first_not_of("0123456789abcdef") != std::string::npos) return nullptr;
    const uint64_t seq = std::stoull(number, nullptr, 16);
    if (seq <= lastFrame_[i]) return nullptr;  // a frame seen before, sent again
    const std::string_view text = line.substr(kFrameHead + 1);
    if (line.substr(16, 32) != consoleMac(specs_[i].secret, seq, line[kFrameHead], text)) return nullptr;
    lastFrame_[i] = seq;
    return line.data() + kFrameHead;
  }

  // Whether child i has ended (then reaped, its group killed where it has one).
  bool ended(size_t i) {
    Running& c = run_[i];
    if (specs_[i].ownGroup) {  // not reaped yet: its pid, its group's id, cannot be reused before the group is killed
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != c.pid)
        return false;
      kill(-c.pid, SIGKILL);  // what it left running in its group
      waitpid(c.pid, &c.status, 0);
    } else if (waitpid(c.pid, &c.status, WNOHANG) != c.pid) {
      return false;
    }
    c.done = true;
    return true;
  }

  void stop(size_t i, bool& why) {
    Running& c = run_[i];
    kill(specs_[i].ownGroup ? -c.pid : c.pid, SIGKILL);
    waitpid(c.pid, &c.status, 0);
    c.done = why = true;
  }

  // One look at a running child; whether it is still running.
  bool lookAt(size_t i, std::chrono::steady_clock::time_point now) {
    pump(i);
    if (ended(i)) return false;
    if (now > deadline_) {
      stop(i, results_[i].timedOut);
      return false;
    }
    if (gStop && !specs_[i].finishOnStop) {
      stop(i, results_[i].stopped);
      return false;
    }
    if (!specs_[i].capturePath.empty() && now - run_[i].lastCap > std::chrono::milliseconds(500)) {
      run_[i].lastCap = now;
      cap(i);
    }
    return watchCase(i, now);
  }

  // The case watch (ChildSpec::watch): a case past its limit, or a
  // reference stage past its own, is a hang; past the limit, a case still
  // compiling (a compilation ended within the window) is given up to the
  // limit again. Whether the child is still running.
  bool watchCase(size_t i, std::chrono::steady_clock::time_point now) {
    Running& c = run_[i];
    const CaseWatch& watch = specs_[i].watch;
    if (watch.caseSeconds <= 0 || now - c.lastLook <= std::chrono::milliseconds(500)) return true;
    c.lastLook = now;
    std::string fly;
    try {
      fly = readFile(watch.inflightPath);
    } catch (const std::exception&) {
    }
    const std::string stage = readStage(watch.stagePath);
    if (fly != c.lastCase) {
      c.lastCase = fly;
      c.caseSince = now;
      c.stage.clear();
    }
    if (stage != c.stage) {
      c.stage = stage;
      c.stageSince = now;
    }
    const bool referenceHangs = !fly.empty() && watch.referenceSeconds > 0 && stage == "reference" &&
                                now - c.stageSince > std::chrono::seconds(watch.referenceSeconds);
    const bool past = !fly.empty() && now - c.caseSince > std::chrono::seconds(watch.caseSeconds);
    const double window = stillCompilingWindow(watch.caseSeconds);
    const double compiledAgo = past && stage == "device" ? stageCompileAge(watch.stagePath) : -1;
    const bool compiling = compiledAgo >= 0 && compiledAgo < window;
    if (past && compiling && now - c.caseSince <= std::chrono::seconds(2 * watch.caseSeconds)) return true;
    if (!referenceHangs && !past) return true;
    ChildResult& r = results_[i];
    r.caseTimedOut = true;
    r.stillCompiling = !referenceHangs && compiling;
    r.referenceTimedOut = referenceHangs;
    r.referenceSeconds = watch.referenceSeconds;
    stop(i, r.timedOut);
    return false;
  }

  const std::vector<ChildSpec>& specs_;
  std::vector<ChildResult> results_;
  std::vector<Running> run_;
  std::vector<int> relay_;            // read ends of the children's console pipes
  std::vector<std::string> pending_;  // what came after each console's last whole line
  std::vector<uint64_t> lastFrame_;   // each console's last frame number taken
  static constexpr size_t kMaxFrameBytes = 1 << 16;
  static constexpr size_t kFrameHead = 16 + 32;  // a frame's number and MAC, before its kind byte
  static constexpr size_t kDrainBytes = 64 << 20;
  const std::chrono::steady_clock::time_point start_, deadline_;
};

}  // namespace

std::vector<ChildResult> runChildren(const std::vector<ChildSpec>& children, int timeoutSeconds) {
  Children all(children, timeoutSeconds);
  while (all.look()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return all.finish();
}

std::string readStage(const std::string& path) {
  if (path.empty()) return "";
  std::string stage;
  try {
    stage = readFile(path);
  } catch (const std::exception&) {
    return "";
  }
  stage = stage.substr(0, 16);  // written fixed-width, never truncated; a compile stamp follows
  stage.erase(stage.find_last_not_of(std::string(" \n\0", 3)) + 1);
  return stage;
}

double stageCompileAge(const std::string& path) {
  if (path.empty()) return -1;
  std::string text;
  try {
    text = readFile(path, 4096);
  } catch (const std::exception&) {
    return -1;
  }
  if (text.size() <= 16) return -1;
  char* end = nullptr;
  const std::string stamp = text.substr(16, 24);
  const double at = std::strtod(stamp.c_str(), &end);
  if (end == stamp.c_str() || !(at > 0)) return -1;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  // A stamp a moment ahead of `now` was written a moment ago: its text is
  // rounded (an older writer rounds to the ms), so a stamp read within that
  // rounding of its write reads as the future. Taking it for "no stamp"
  // stopped a case that was still compiling as a hang in about 1 run in 60
  // (Cli.ACaseStillCompilingAtItsTimeLimitIsNoHang). Only a stamp further
  // ahead than kStampSlackSeconds is not this clock's.
  if (at > now + kStampSlackSeconds) return -1;
  return std::max(0.0, now - at);
}

json capturedOutput(const std::string& path, size_t keep) {
  return capturedOutput(std::vector<std::string>{path}, keep);
}

namespace {

// `line` without the time stamp and thread id of a glog line (LibTorch's
// C++ warnings: "W1201 21:35:07.123456 12345 Resize.cpp:17] ..." becomes
// "W Resize.cpp:17] ..."), so that one warning printed at many times is one
// distinct line; other lines unchanged.
std::string withoutLogStamp(const std::string& line) {
  static const std::regex stamp(R"(^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ (.*)$)");
  std::smatch m;
  return std::regex_match(line, m, stamp) ? m[1].str() + " " + m[2].str() : line;
}

}  // namespace

json capturedOutput(const std::vector<std::string>& paths, size_t keep) {
  json out = {{"lines", 0}, {"distinct", json::array()}, {"tail", json::array()}};
  std::map<std::string, std::pair<size_t, size_t>> seen;  // text -> (count, first line)
  std::vector<std::string> tail;
  size_t n = 0;
  for (const auto& path : paths) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty()) continue;
      if (line.size() > 300) line = line.substr(0, 297) + "...";
      auto& s = seen[withoutLogStamp(line)];
      if (s.first++ == 0) s.second = n;
      ++n;
      tail.push_back(line);
      if (tail.size() > 12) tail.erase(tail.begin());
    }
  }
  std::vector<std::tuple<size_t, size_t, std::string>> order;  // (-count, first, text)
  for (const auto& [text, s] : seen) order.emplace_back(SIZE_MAX - s.first, s.second, text);
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size() && i < keep; ++i)
    out["distinct"].push_back({{"text", std::get<2>(order[i])}, {"count", SIZE_MAX - std::get<0>(order[i])}});
  out["lines"] = n;
  out["distinct_lines"] = seen.size();
  out["tail"] = tail;
  return out;
}

void writeTargetDocument(const std::string& path, json doc, const std::string& key) {
  doc.erase("mac");
  if (!key.empty()) doc["mac"] = hmacSha256Hex(key, jsonText(doc));
  writeText(path, jsonText(doc));
}

bool takeDocumentMac(json& doc, const std::string& key) {
  const json mac = doc.is_object() && doc.contains("mac") ? doc.at("mac") : json();
  if (doc.is_object()) doc.erase("mac");
  if (key.empty()) return true;
  return mac.is_string() && mac.get<std::string>() == hmacSha256Hex(key, jsonText(doc));
}

namespace {

// The claim file of op `op` in `dir`: its name with bytes other than
// [A-Za-z0-9._-] as %XX.
std::string claimPath(const std::string& dir, const std::string& op) {
  std::string name;
  for (const unsigned char c : op) {
    if (isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      name += hex;
    }
  }
  return (fs::path(dir) / (name.empty() ? "%" : name)).string();
}

}  // namespace

int claimHolder(const std::string& dir, const std::string& op) {
  try {
    const std::string who = readFile(claimPath(dir, op), 64);
    if (who.empty() || who.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(who);
  } catch (const std::exception&) {
    return -1;
  }
}

bool claimOp(const std::string& dir, const std::string& op, int shard) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError(dir + ": cannot make the claims folder: " + ec.message());
  const std::string path = claimPath(dir, op);
  const std::string mine = std::to_string(shard);
  // Written whole under a name of this process's own, then linked to the
  // claim's name: a claim is never seen (or left) half-written.
  const std::string draft = path + ".draft." + std::to_string(getpid());
  const int fd = open(draft.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw FileError(draft + ": cannot write a claim: " + std::strerror(errno));
  const bool written = write(fd, mine.data(), mine.size()) == static_cast<ssize_t>(mine.size());
  close(fd);
  const int linked = written ? link(draft.c_str(), path.c_str()) : -1;
  const int err = errno;
  unlink(draft.c_str());
  if (!written) throw FileError(draft + ": cannot write the claim");
  if (linked == 0) return true;
  if (err != EEXIST) throw FileError(path + ": cannot claim: " + std::strerror(err));
  try {
    return readFile(path, 64) == mine;
  } catch (const FileError&) {
    return false;
  }
}

HeavySlot::~HeavySlot() { release(); }

void HeavySlot::release() {
  if (fd_ >= 0) close(fd_);  // closing a descriptor of the file drops this process's lock on it
  fd_ = index_ = -1;
}

int HeavySlot::tryTake(const std::string& dir, int count) {
  release();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError(dir + ": cannot make the claims folder: " + ec.message());
  for (int k = 0; k < count; ++k) {
    const std::string path = (fs::path(dir) / (".heavy-slot-" + std::to_string(k))).string();
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw FileError(path + ": cannot open a slot: " + std::strerror(errno));
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;  // the whole file (l_start 0, l_len 0)
    if (fcntl(fd, F_SETLK, &lock) == 0) {
      fd_ = fd;
      index_ = k;
      return k;
    }
    close(fd);
  }
  return -1;
}

int HeavySlot::take(const std::string& dir, int count) {
  int k;
  while ((k = tryTake(dir, count)) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return k;
}

bool checkAgainstPlan(json& doc, const std::vector<std::string>& planned, const std::string& why) {
  const std::set<std::string> want(planned.begin(), planned.end());
  std::set<std::string> seen;
  json kept = json::array(), missing = json::array(), unexpected = json::array();
  for (const auto& r : doc.value("results", json::array())) {
    const std::string key = r.is_object() ? r.value("key", std::string()) : std::string();
    if (key == "process" || (want.count(key) && seen.insert(key).second))
      kept.push_back(r);
    else
      unexpected.push_back(key);
  }
  for (const auto& key : planned) {
    if (seen.count(key)) continue;
    missing.push_back(key);
    const auto a = key.find('/'), b = a == std::string::npos ? a : key.find('/', a + 1);
    const PropertyDef* def = findProperty(key.substr(0, a));
    json r = {{"property", key.substr(0, a)},
              {"title", def ? def->title : std::string()},
              {"key", key},
              {"status", "error"},
              {"cases_run", 0},
              {"reason", !why.empty() ? why
                                      : "no result: the target process finished without one for this run (its document "
                                        "does not hold it; the code under test may have rewritten the document)"}};
    if (b != std::string::npos) {
      r["op"] = key.substr(a + 1, b - a - 1);
      r["dtype"] = key.substr(b + 1);
    }
    kept.push_back(r);
  }
  if (missing.empty() && unexpected.empty()) return true;
  doc["results"] = kept;
  doc["plan_mismatch"] = {{"missing", missing}, {"unexpected", unexpected}};
  return false;
}

json collectChildDocument(const std::string& outPath, const std::string& manifest, const ChildResult& r,
                          int timeoutSeconds, const std::string& key) {
  json doc;
  const json unread = {{"name", fs::path(manifest).stem().string()},
                       {"manifest", manifest},
                       {"status", "error"},
                       {"results", json::array()}};
  try {
    doc = json::parse(readFile(outPath));
  } catch (const std::exception&) {
    doc = unread;
  }
  const bool trusted = doc != unread && takeDocumentMac(doc, key);
  if (!r.spawnError.empty()) {  // nothing ran: a target error that keeps what earlier processes wrote
    if (!trusted) doc = unread;
    doc["status"] = "error";
    doc["error"] = "cannot start the target process (" + r.spawnError + ")";
    doc["complete"] = true;
    return doc;
  }
  if (doc != unread && !trusted) {
    doc = unread;
    doc["error"] = "the target document " + outPath +
                   " was not written by the target process flagprop launched (its MAC does not match): the code "
                   "under test changed or replaced it, so none of its results is kept";
    doc["complete"] = true;
    return doc;
  }
  const std::string why = childEnd(r, doc.value("complete", false), timeoutSeconds);
  if (why.empty()) return doc;
  doc["crash"] = why;
  if (doc.value("status", "") == "error") {
    if (doc.value("error", std::string()).empty()) doc["error"] = why;
  } else {
    doc["results"].push_back({{"property", "process"},
                              {"title", "target process"},
                              {"key", "process"},
                              {"status", "error"},
                              {"reason", why}});
  }
  return doc;
}

}  // namespace flagprop
