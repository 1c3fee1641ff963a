#include "runner/runner.h"

#include "catalog/catalog.h"
#include "core/files.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <memory>
#include <thread>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace flagprop {

namespace {

std::string ident(std::string s) {
  for (auto& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// One property run as a GoogleTest test.
class PropertyTest : public testing::Test {
 public:
  PropertyTest(const PropertyRun* run, TargetSession* session, json* doc, const TargetRunOptions* opts,
               const ResultSink* sink)
      : run_(run), session_(session), doc_(doc), opts_(opts), sink_(sink) {}

  void TestBody() override {
    const Target& t = session_->target();
    const std::string label = run_->id + " " + run_->title + (run_->op.empty() ? "" : " " + run_->op + " " + run_->dtype);
    // An excluded op's skip is a line in the report, not on the console.
    const bool quiet = run_->quiet;
    if (!quiet) std::cout << "[" << t.name << "] " << label << " ..." << std::flush;
    const PropertyOutcome o = runProperty(*run_, opts_->run);
    json r = o.toJson();
    if (!session_->unverified().empty()) r["unverified"] = true;  // a pinned hash or version did not match
    (*doc_)["results"].push_back(r);
    if (*sink_) (*sink_)(*session_, o, *doc_);
    if (!quiet) {
      std::cout << " " << o.status << " (" << o.casesRun << " cases, " << static_cast<int>(o.seconds * 1000) << " ms)";
      if (o.status != "pass") std::cout << ": " << o.reason;
      std::cout << std::endl;
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
  const PropertyRun* run_;
  TargetSession* session_;
  json* doc_;
  const TargetRunOptions* opts_;
  const ResultSink* sink_;
};

json targetError(json doc, const std::string& why) {
  doc["status"] = "error";
  doc["error"] = why;
  doc["complete"] = true;
  return doc;
}

int runAsTests(const std::vector<PropertyRun>& runs, TargetSession& session, json& doc, const std::string& junitPath,
               const TargetRunOptions& opts, const ResultSink& sink) {
  std::vector<std::string> gtestArgs = {"flagprop", "--gtest_brief=1"};
  if (!junitPath.empty()) gtestArgs.push_back("--gtest_output=xml:" + junitPath);
  std::vector<char*> argv;
  for (auto& a : gtestArgs) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  testing::InitGoogleTest(&argc, argv.data());
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
  return RUN_ALL_TESTS();
}

std::string runKey(const PropertyRun& r) { return r.op.empty() ? r.id : r.id + "/" + r.op + "/" + r.dtype; }

// Keeps the results of an earlier process of this target and drops their
// runs; the op runs of an op and dtype that crashed there get the crash.
void resume(const std::string& path, std::vector<PropertyRun>& runs, json& doc) {
  json before;
  try {
    before = json::parse(readFile(path));
  } catch (const std::exception&) {
    return;  // nothing was written: run everything
  }
  std::set<std::string> done;
  std::map<std::string, json> crashed;  // "op/dtype" -> the crash result
  for (const auto& r : before.value("results", json::array())) {
    if (r.value("key", std::string()) == "process") continue;
    doc["results"].push_back(r);
    done.insert(r.value("key", std::string()));
    if (r.contains("observations") && r["observations"].contains("crash"))
      crashed[r.value("op", std::string()) + "/" + r.value("dtype", std::string())] = r;
  }
  std::vector<PropertyRun> left;
  for (auto& run : runs) {
    if (done.count(runKey(run))) continue;
    const auto c = crashed.find(run.op + "/" + run.dtype);
    if (c != crashed.end() && run.checkKind == "op") {
      json r = c->second;
      r["property"] = run.id;
      r["title"] = run.title;
      r["key"] = runKey(run);
      r["reason"] = "(as " + c->second.value("property", std::string()) + ") " + c->second.value("reason", std::string());
      doc["results"].push_back(r);
      continue;
    }
    left.push_back(std::move(run));
  }
  runs = std::move(left);
}

}  // namespace

std::string childEnd(const ChildResult& r, bool finished, int timeoutSeconds) {
  if (!r.timedOut && !r.signal && (r.exitCode == 0 || r.exitCode == 1) && finished) return "";
  return r.timedOut ? "target process timed out after " + std::to_string(timeoutSeconds) + " s"
         : r.signal ? "target process died with signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")"
         : finished ? "target process exited with code " + std::to_string(r.exitCode)
                    : "target process exited (code " + std::to_string(r.exitCode) + ") before finishing its properties";
}

PropertyOutcome crashOutcome(const json& inflight, const std::string& why) {
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
    if (const OpEntry* e = findOp(o.op)) o.judging = e->judging;
  }
  o.status = "fail";
  o.reason = "the " + why + " on this case (kept unshrunk: the process that would shrink it is gone)";
  o.casesRun = 1;
  o.counterexample = inflight.value("case", json());
  o.checkKind = def->checkKind;
  o.observations = {{"crash", why}};
  return o;
}

json runTarget(const std::string& manifest, const std::string& junitPath, const TargetRunOptions& opts,
               const ResultSink& sink) {
  json doc = {{"manifest", manifest}, {"name", fs::path(manifest).stem().string()}, {"status", "ok"},
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
  if (!opts.resumeFrom.empty()) resume(opts.resumeFrom, runs, doc);
  if (!opts.docPath.empty()) writeText(opts.docPath, jsonText(doc));
  runAsTests(runs, *session, doc, junitPath, opts, sink);
  doc["complete"] = true;  // the parent tells a finished target from one that died
  return doc;
}

ChildResult runChild(const std::vector<std::string>& args, int timeoutSeconds) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  ChildResult r;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

json collectChildDocument(const std::string& outPath, const std::string& manifest, const ChildResult& r,
                          int timeoutSeconds) {
  json doc;
  try {
    doc = json::parse(readFile(outPath));
  } catch (const std::exception&) {
    doc = {{"name", fs::path(manifest).stem().string()}, {"manifest", manifest}, {"status", "error"},
           {"results", json::array()}};
  }
  const std::string why = childEnd(r, doc.value("complete", false), timeoutSeconds);
  if (why.empty()) return doc;
  doc["crash"] = why;
  if (doc.value("status", "") == "error") {
    if (doc.value("error", std::string()).empty()) doc["error"] = why;
  } else {
    doc["results"].push_back({{"property", "process"}, {"title", "target process"}, {"key", "process"},
                              {"status", "error"}, {"reason", why}});
  }
  return doc;
}

}  // namespace flagprop
