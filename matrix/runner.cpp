#include "matrix/runner.h"

#include "ops/op_run.h"
#include "reports/report.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace flagprop {

namespace {

std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

std::string ident(std::string s) {
  for (auto& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// One property run (P1..P4, or P5 / P6 for one op and dtype) as a GoogleTest test.
class PropertyTest : public testing::Test {
 public:
  PropertyTest(std::string label, std::function<PropertyOutcome()> run, TargetSession* session, json* doc,
               std::string outPath)
      : label_(std::move(label)), run_(std::move(run)), session_(session), doc_(doc), outPath_(std::move(outPath)) {}
  void TestBody() override {
    std::cout << "[" << session_->target().name << "] " << label_ << " ..." << std::flush;
    PropertyOutcome o = run_();
    const json r = o.toJson();
    (*doc_)["results"].push_back(r);
    writeText(outPath_, doc_->dump(2));
    std::cout << " " << o.status << " (" << o.casesRun << " cases, " << static_cast<int>(o.seconds * 1000) << " ms)";
    if (o.status != "pass") std::cout << ": " << o.reason;
    std::cout << std::endl;
    EXPECT_TRUE(resultExpected(*doc_, r)) << label_ << " on " << session_->target().name << " was " << o.status
                                          << ", expected otherwise: " << o.reason;
  }

 private:
  std::string label_;
  std::function<PropertyOutcome()> run_;
  TargetSession* session_;
  json* doc_;
  std::string outPath_;
};

// Whether a --property filter entry selects this run: "P5", "P5/op" or
// "P5/op/dtype" (the last two are what a P5 / P6 reproduce string holds).
bool selected(const std::vector<std::string>& filter, const std::string& id, const std::string& op = "",
              const std::string& dtype = "") {
  if (filter.empty()) return true;
  for (const auto& f : filter)
    if (f == id || (!op.empty() && (f == id + "/" + op || f == id + "/" + op + "/" + dtype))) return true;
  return false;
}

bool listed(const std::vector<std::string>& filter, const std::string& v) {
  return filter.empty() || std::find(filter.begin(), filter.end(), v) != filter.end();
}

}  // namespace

int runTarget(const std::string& manifest, const std::string& outPath, const std::string& junitPath,
              const CliOptions& opts) {
  json doc = {{"manifest", manifest}, {"name", stem(manifest)}, {"status", "ok"}, {"results", json::array()}};
  std::unique_ptr<TargetSession> session;
  try {
    Target t = loadTarget(manifest);
    doc["name"] = t.name;
    doc["description"] = t.description;
    doc["expect"] = t.expect;
    doc["labels"] = t.labels;
    doc["target"] = t.toJson();
    session = std::make_unique<TargetSession>(t);
    doc["provenance"] = session->provenance();
  } catch (const std::exception& e) {
    doc["status"] = "error";
    doc["error"] = e.what();
    doc["complete"] = true;
    writeText(outPath, doc.dump(2));
    std::cout << "[" << doc["name"].get<std::string>() << "] error: " << e.what() << std::endl;
    return 1;
  }
  writeText(outPath, doc.dump(2));
  std::vector<std::string> gtestArgs = {"flagprop"};
  if (!junitPath.empty()) gtestArgs.push_back("--gtest_output=xml:" + junitPath);
  gtestArgs.push_back("--gtest_brief=1");
  std::vector<char*> argv;
  for (auto& a : gtestArgs) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  testing::InitGoogleTest(&argc, argv.data());
  RunOptions ropts = opts.run;
  const std::string name = session->target().name;
  const auto& wanted = session->target().properties;
  TargetSession* s = session.get();
  json* dp = &doc;
  auto add = [&](const std::string& testName, const std::string& label, std::function<PropertyOutcome()> fn) {
    testing::RegisterTest(ident(name).c_str(), ident(testName).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [label, fn, s, dp, outPath]() -> testing::Test* {
                            return new PropertyTest(label, fn, s, dp, outPath);
                          });
  };
  for (const auto& def : properties()) {
    if (std::find(wanted.begin(), wanted.end(), def.id) == wanted.end() || !selected(opts.properties, def.id)) continue;
    const PropertyDef* d = &def;
    add(std::string(def.id) + "_" + def.title, std::string(def.id) + " " + def.title,
        [d, s, &ropts]() { return d->run(*s, ropts); });
  }
  const bool opProps = std::count(wanted.begin(), wanted.end(), "P5") + std::count(wanted.begin(), wanted.end(), "P6");
  if (opProps) {
    try {
      doc["op_setup"] = setupOps(*session);
    } catch (const std::exception& e) {
      doc["status"] = "error";
      doc["error"] = e.what();
      doc["complete"] = true;
      writeText(outPath, doc.dump(2));
      std::cout << "[" << name << "] error: " << e.what() << std::endl;
      return 1;
    }
    // P5 then P6 for each op and dtype, so a run cut short by its time
    // limit keeps both properties of the ops it finished.
    for (const auto& [entry, dtype] : opRuns(session->target())) {
      for (const char* id : {"P5", "P6"}) {
        if (std::find(wanted.begin(), wanted.end(), id) == wanted.end()) continue;
        if (!selected(opts.properties, id, entry->name, dtype) || !listed(opts.ops, entry->name) ||
            !listed(opts.dtypes, dtype))
          continue;
        const OpEntry* e = entry;
        const std::string dt = dtype;
        const bool p5 = std::string(id) == "P5";
        add(std::string(id) + "_" + entry->name + "_" + dtype,
            std::string(id) + (p5 ? " numerics " : " aliasing ") + entry->name + " " + dtype,
            [p5, e, dt, s, &ropts]() { return p5 ? runP5(*s, ropts, *e, dt) : runP6(*s, ropts, *e, dt); });
      }
    }
  }
  const int rc = RUN_ALL_TESTS();
  doc["complete"] = true;  // the parent tells a finished target from one that died
  writeText(outPath, doc.dump(2));
  return rc == 0 ? 0 : 1;
}

namespace {

struct ChildResult {
  int exitCode = -1;
  int signal = 0;
  bool timedOut = false;
};

ChildResult spawnAndWait(const std::vector<std::string>& args, int timeoutSeconds) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  ChildResult r;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
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

json readDoc(const std::string& path) {
  try {
    return json::parse(readFile(path));
  } catch (const std::exception&) {
    return json();
  }
}

}  // namespace

int runMatrix(const CliOptions& optsIn, const std::string& selfExe, const std::vector<std::string>& argvForLog) {
  CliOptions opts = optsIn;
  if (opts.run.seed == 0) opts.run.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  // A report folder is either new, empty, or an earlier flagprop report whose
  // results are cleared so they cannot be mistaken for this run's. Anything
  // else is refused rather than overwritten.
  std::error_code ec;
  if (fs::exists(opts.reportDir, ec)) {
    const bool empty = fs::is_directory(opts.reportDir, ec) && fs::is_empty(opts.reportDir, ec);
    bool ours = false;
    try {
      ours = json::parse(readFile((fs::path(opts.reportDir) / "report.json").string())).value("schema", "") ==
             "flagprop.report/1";
    } catch (const std::exception&) {
    }
    if (!empty && !ours) {
      std::cerr << "flagprop: --report-dir " << opts.reportDir
                << " exists and holds no flagprop report; choose a new or empty folder" << std::endl;
      return 2;
    }
    if (ours)
      for (const char* sub : {"targets", "junit", "reproducers"}) fs::remove_all(fs::path(opts.reportDir) / sub);
  }
  fs::create_directories(opts.reportDir);
  fs::create_directories(fs::path(opts.reportDir) / "targets");
  fs::create_directories(fs::path(opts.reportDir) / "junit");
  fs::create_directories(fs::path(opts.reportDir) / "reproducers");
  const std::string reportDir = fs::absolute(opts.reportDir).string();

  std::vector<std::string> manifests = opts.manifests;
  if (manifests.empty()) manifests.push_back(defaultManifest());
  json targets = json::array();
  std::vector<std::string> targetPaths;
  for (const auto& m : manifests) {
    try {
      for (const auto& p : expandManifest(m)) targetPaths.push_back(p);
    } catch (const std::exception& e) {
      std::cout << "error: " << e.what() << std::endl;
      targets.push_back({{"name", stem(m)}, {"manifest", m}, {"status", "error"}, {"error", e.what()}, {"results", json::array()}});
    }
  }
  std::cout << "flagprop: " << targetPaths.size() << " target(s)";
  if (!targets.empty()) std::cout << " (+" << targets.size() << " manifest error(s))";
  if (opts.run.reproduce.empty())
    std::cout << ", seed " << opts.run.seed;
  else
    std::cout << ", replaying a reproduce string";
  std::cout << ", report in " << reportDir << std::endl;
  int index = 0;
  for (const auto& path : targetPaths) {
    ++index;
    std::string name = stem(path);
    const std::string out = (fs::path(reportDir) / "targets" / (std::to_string(index) + "_" + name + ".json")).string();
    const std::string junit = (fs::path(reportDir) / "junit" / (std::to_string(index) + "_" + name + ".xml")).string();
    std::cout << "== target " << index << "/" << targetPaths.size() << ": " << path << std::endl;
    if (!opts.isolate) {
      if (targetPaths.size() != 1) {
        std::cerr << "flagprop: --no-isolate runs exactly one target; this run has " << targetPaths.size() << std::endl;
        return 2;
      }
      runTarget(path, out, junit, opts);
    } else {
      std::vector<std::string> args = {selfExe, "run-target", "--manifest", path, "--out", out, "--junit", junit,
                                       "--seed", std::to_string(opts.run.seed), "--repro-dir",
                                       (fs::path(reportDir) / "reproducers").string()};
      if (opts.run.cases) args.insert(args.end(), {"--cases", std::to_string(opts.run.cases)});
      if (!opts.run.reproduce.empty()) args.insert(args.end(), {"--reproduce", opts.run.reproduce});
      for (const auto& p : opts.properties) args.insert(args.end(), {"--property", p});
      for (const auto& p : opts.ops) args.insert(args.end(), {"--op", p});
      for (const auto& p : opts.dtypes) args.insert(args.end(), {"--dtype", p});
      const ChildResult r = spawnAndWait(args, opts.timeoutSeconds);
      json doc = readDoc(out);
      if (doc.is_null()) doc = {{"name", name}, {"manifest", path}, {"status", "error"}, {"results", json::array()}};
      const bool finished = doc.value("complete", false);
      if (r.timedOut || r.signal || (r.exitCode != 0 && r.exitCode != 1) || !finished) {
        std::string why = r.timedOut ? "target process timed out after " + std::to_string(opts.timeoutSeconds) + " s"
                          : r.signal ? std::string("target process died with signal ") + std::to_string(r.signal) + " (" +
                                           strsignal(r.signal) + ")"
                          : finished ? "target process exited with code " + std::to_string(r.exitCode)
                                     : "target process exited (code " + std::to_string(r.exitCode) +
                                           ") before finishing its properties";
        std::cout << "[" << name << "] " << why << "; results written before that are kept" << std::endl;
        doc["crash"] = why;
        if (doc.value("status", "") == "error" && doc.value("error", std::string()).empty()) doc["error"] = why;
        if (doc.value("status", "") != "error") {
          doc["status"] = "ok";
          doc["results"].push_back({{"property", "process"}, {"title", "target process"}, {"status", "error"}, {"reason", why}});
        }
      }
      targets.push_back(doc);
      continue;
    }
    targets.push_back(readDoc(out));
  }
  json runInfo = {{"seed", opts.run.seed}, {"command", argvForLog}, {"report_dir", reportDir}, {"flagprop", selfExe}};
  if (!opts.run.reproduce.empty()) runInfo["reproduce"] = opts.run.reproduce;
  json manifestList = json::array();
  for (const auto& m : manifests) manifestList.push_back(fs::absolute(m).string());
  runInfo["manifests"] = manifestList;
  runInfo["python"] = FLAGPROP_PYTHON_EXE;
  const json report = mergeReport(targets, runInfo);
  size_t results = 0, errors = 0;
  for (const auto& t : targets) {
    results += t.value("results", json::array()).size();
    errors += t.value("status", "") != "ok";
  }
  writeText((fs::path(reportDir) / "report.json").string(), report.dump(2));
  writeText((fs::path(reportDir) / "report.md").string(), renderMarkdown(report));
  printSummary(report, std::cout);
  std::cout << "report: " << reportDir << "/report.json (and report.md, junit/, reproducers/)" << std::endl;
  if (results == 0 && errors == 0) {
    std::cout << "flagprop: nothing ran: --property / --op / --dtype select no run of any target's properties, "
                 "catalog and dtypes" << std::endl;
    return 2;
  }
  return report.at("summary").at("unexpected").empty() ? 0 : 1;
}

}  // namespace flagprop
