// flagprop command line: parses options, runs targets (each in its own
// process) and writes the report.
#include "catalog/catalog.h"
#include "catalog/schema_ops.h"
#include "core/files.h"
#include "core/tensor_bridge.h"
#include "reports/plots.h"
#include "reports/report.h"
#include "reports/reproducer.h"
#include "runner/runner.h"

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace flagprop;

namespace {

const char* kUsage = R"(flagprop: property-based checks for the Torch-FL x FlagGems stack

usage:
  flagprop run [options]           run every target (default: the built-in fixture
                                   matrix on the CPU) and write a report
  flagprop run-target --manifest M --out FILE [options]
                                   run one target in this process (used by run)
  flagprop ops                     list the hand-written catalog: op, dtypes, ATen schema
  flagprop ops --flaggems          every overload FlagGems registers: how flagprop judges it
                                   (functional, inplace, out, view) or why it is excluded
  flagprop ops NAME...             an ATen overload's schema as flagprop reads it, and its class
  flagprop seed-case               print the published seed case (native_layer_norm) as a case
  flagprop properties              list the properties: id, title, when it holds
  flagprop --help

options:
  --manifest PATH     target (flagprop.target/1) or matrix (flagprop.matrix/1)
                      manifest; repeatable; default fixtures/targets/default.json
  --report-dir DIR    where report.json, report.md, junit/ and reproducers/ go
                      (default ./flagprop-report)
  --property ID       run only this property: P1 .. P6, or P5/OP, P5/OP/DTYPE;
                      repeatable
  --op NAME           P5 / P6: run only this op: a catalog entry or any ATen
                      overload (e.g. add.Tensor, its entry derived from the
                      schema); repeatable
  --dtype D           P5 / P6: run only this dtype (float32, float16, bfloat16,
                      int32); repeatable
  --cases N           generated cases per property run (default: the manifest's
                      cases, 100, for P1-P4 and op_cases, 50, per op and dtype
                      for P5 / P6)
  --seed S            RapidCheck seed (default or 0: random; printed and reported)
  --reproduce STR     replay a RapidCheck reproduce string from a report (give the
                      --manifest of the run it came from)
  --timeout SEC       per-target process time limit (default 1800)
  --no-isolate        run the (one) target in this process (for debugging: code
                      under test that ends the process ends the run, report unwritten)
  --unverified        run targets whose pinned files or versions do not match
                      (normally a target error); every result is marked unverified

exit status: 0 every result as expected (pass, skip, or the manifest's
'expect'); 1 some result unexpected; 2 bad usage.
)";

struct Cli {
  std::string command;
  std::vector<std::string> manifests;
  std::string reportDir = "flagprop-report";
  std::string out, junit, reproDir;  // run-target
  TargetRunOptions target;
  int timeoutSeconds = 1800;
  bool isolate = true;
};

// A decimal number that fits in 64 bits (no sign, no overflow).
bool number(const std::string& s, unsigned long long& out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

// One option with a value; returns "" or the usage error.
std::string applyOption(Cli& cli, const std::string& opt, const std::string& v) {
  unsigned long long n = 0;
  if (opt == "--manifest") cli.manifests.push_back(v);
  else if (opt == "--report-dir") cli.reportDir = v;
  else if (opt == "--property") {
    const std::string why = checkRunKey(v);
    if (!why.empty()) return "--property " + v + ": " + why;
    cli.target.selection.properties.push_back(v);
  } else if (opt == "--op") {
    const auto& fg = flaggemsOverloads();  // an excluded or absent registered overload is a skip with its reason
    if (!findOp(v) && !atenOpSchema(v) && std::find(fg.begin(), fg.end(), v) == fg.end())
      return "--op: no catalog op '" + v + "': " + whyExcluded(v) + " (hand-written entries: " + catalogNames() + ")";
    cli.target.selection.ops.push_back(v);
  } else if (opt == "--dtype") {
    const std::string why = checkCatalogDtype(v);
    if (!why.empty()) return "--dtype: " + why;
    cli.target.selection.dtypes.push_back(v);
  } else if (opt == "--cases") {
    if (!number(v, n) || n == 0 || n > 1000000) return "--cases needs a number from 1 to 1000000";
    cli.target.run.cases = static_cast<int>(n);
  } else if (opt == "--seed") {
    if (!number(v, n)) return "--seed needs an integer from 0 to 2^64 - 1 (0 picks a random seed)";
    cli.target.run.seed = n;
  } else if (opt == "--reproduce") {
    if (v.empty()) return "--reproduce needs a reproduce string (report.json's results[].reproduce)";
    try {
      const auto keys = reproduceKeys(v);
      if (cli.target.selection.properties.empty()) cli.target.selection.properties = keys;  // replay only what it holds
    } catch (const std::exception& e) {
      return std::string("--reproduce: ") + e.what();
    }
    cli.target.run.reproduce = v;
  } else if (opt == "--timeout") {
    if (!number(v, n) || n == 0 || n > 604800) return "--timeout needs a number of seconds from 1 to 604800";
    cli.timeoutSeconds = static_cast<int>(n);
  } else if (opt == "--out" && cli.command == "run-target") cli.out = v;
  else if (opt == "--junit" && cli.command == "run-target") cli.junit = v;
  else if (opt == "--repro-dir" && cli.command == "run-target") cli.reproDir = v;
  else if (opt == "--resume" && cli.command == "run-target") cli.target.resumeFrom = v;
  else return "unknown option '" + opt + "' (try flagprop --help)";
  return "";
}

// Parses argv into `cli`; returns "" or the usage error.
std::string parse(const std::vector<std::string>& args, Cli& cli) {
  cli.command = args[0];
  if (cli.command != "run" && cli.command != "run-target")
    return "unknown command '" + cli.command + "' (try flagprop --help)";
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--no-isolate") {
      cli.isolate = false;
      continue;
    }
    if (args[i] == "--unverified") {
      cli.target.unverified = true;
      continue;
    }
    if (args[i].rfind("--", 0) != 0) return "unexpected argument '" + args[i] + "' (try flagprop --help)";
    if (i + 1 >= args.size()) return args[i] + " needs a value";
    const std::string why = applyOption(cli, args[i], args[i + 1]);
    if (!why.empty()) return why;
    ++i;
  }
  if (cli.command == "run-target" && (cli.manifests.size() != 1 || cli.out.empty()))
    return "run-target needs exactly one --manifest and --out";
  if (!cli.target.run.reproduce.empty() && cli.manifests.empty())
    return "--reproduce needs the --manifest of the run the string came from (report.md prints the whole command)";
  return "";
}

// `flagprop run-target`: one target in this process; its document is
// written after every property, each failure's reproducer as it is found.
int runTargetCommand(const Cli& cli) {
  const std::string reproDir = cli.reproDir;
  const std::string outPath = cli.out;
  ResultSink sink = [reproDir, outPath](const TargetSession& s, const PropertyOutcome& o, json& doc) {
    if (!reproDir.empty() && o.status == "fail") {
      try {
        doc["results"].back()["reproducer"] = writeReproducer(reproDir, doc.at("target"), s.provenance(), o);
        json& result = doc["results"].back();
        json none = json::array();
        json& distinct = result.contains("observations") && result["observations"].is_object() &&
                                 result["observations"].contains("distinct_failures")
                             ? result["observations"]["distinct_failures"]
                             : none;
        for (size_t i = 0; i < distinct.size(); ++i) {  // each distinct failure has its own reproducer
          PropertyOutcome d = o;
          d.reason = distinct[i].at("reason").get<std::string>();
          d.counterexample = distinct[i].at("counterexample");
          d.reproduce = distinct[i].value("reproduce", std::string());
          d.observations = distinct[i].value("observations", json::object());
          distinct[i]["reproducer"] =
              writeReproducer(reproDir, doc.at("target"), s.provenance(), d, "_distinct" + std::to_string(i + 2));
        }
      } catch (const std::exception& e) {
        doc["results"].back()["reproducer_error"] = e.what();
      }
    }
    if (!reproDir.empty() && o.status == "pass" && o.observations.contains("timing")) {
      try {  // the plots go beside the reproducers' folder
        doc["results"].back()["plot"] = writeAbPlot(
            (fs::path(reproDir).parent_path() / "plots").string(), doc.value("name", std::string("target")), o);
      } catch (const std::exception& e) {
        const std::string what = e.what();
        doc["results"].back()["plot_error"] = what.substr(0, what.find('\n'));
      }
    }
    writeText(outPath, jsonText(doc));
  };
  TargetRunOptions opts = cli.target;
  opts.run.inflightPath = outPath + ".inflight";  // the parent reads it when this process dies
  opts.docPath = outPath;
  opts.exitOnDeviceLost = true;
  setenv("FLAGPROP_STAGE_FILE", (outPath + ".stage").c_str(), 1);  // and this (flagprop.ops._stage)
  const json doc = runTarget(cli.manifests[0], cli.junit, opts, sink);
  writeText(outPath, jsonText(doc));
  if (doc.value("status", "") != "ok") return 1;
  for (const auto& r : doc.at("results"))
    if (!resultExpected(doc, r)) return 1;
  return 0;
}

// A report folder is new, empty, or an earlier flagprop report whose results
// are cleared so they cannot be mistaken for this run's. Returns "" or why not.
std::string prepareReportDir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    const bool empty = fs::is_directory(dir, ec) && fs::is_empty(dir, ec);
    bool ours = false;
    try {
      ours = json::parse(readFile((fs::path(dir) / "report.json").string())).value("schema", "") == "flagprop.report/1";
    } catch (const std::exception&) {
    }
    if (!empty && !ours) return "--report-dir " + dir + " exists and holds no flagprop report; choose a new or empty folder";
    if (ours)
      for (const char* sub : {"targets", "junit", "reproducers"}) removeTree((fs::path(dir) / sub).string());
  }
  for (const char* sub : {"targets", "junit", "reproducers"}) fs::create_directories(fs::path(dir) / sub, ec);
  return ec ? "cannot create --report-dir " + dir + ": " + ec.message() : "";
}

std::vector<std::string> childArgs(const Cli& cli, const std::string& self, const std::string& manifest,
                                   const std::string& out, const std::string& junit, const std::string& repro) {
  std::vector<std::string> a = {self, "run-target", "--manifest", manifest, "--out", out, "--junit", junit,
                                "--seed", std::to_string(cli.target.run.seed), "--repro-dir", repro};
  if (cli.target.run.cases) a.insert(a.end(), {"--cases", std::to_string(cli.target.run.cases)});
  if (!cli.target.run.reproduce.empty()) a.insert(a.end(), {"--reproduce", cli.target.run.reproduce});
  for (const auto& p : cli.target.selection.properties) a.insert(a.end(), {"--property", p});
  for (const auto& p : cli.target.selection.ops) a.insert(a.end(), {"--op", p});
  for (const auto& p : cli.target.selection.dtypes) a.insert(a.end(), {"--dtype", p});
  if (cli.target.unverified) a.push_back("--unverified");
  return a;
}

// Expands the manifests into target paths; a manifest that cannot be read
// becomes a target error document.
std::vector<std::string> targetPaths(const std::vector<std::string>& manifests, json& docs) {
  std::vector<std::string> out;
  for (const auto& m : manifests) {
    try {
      for (const auto& p : expandManifest(m)) out.push_back(p);
    } catch (const std::exception& e) {
      std::cout << "error: " << e.what() << std::endl;
      docs.push_back({{"name", fs::path(m).stem().string()}, {"manifest", m}, {"status", "error"},
                      {"error", e.what()}, {"results", json::array()}});
    }
  }
  return out;
}

json runInfo(const Cli& cli, const std::string& self, const std::vector<std::string>& argv, const std::string& dir) {
  json info = {{"seed", std::to_string(cli.target.run.seed)}, {"command", argv}, {"report_dir", dir},
               {"flagprop", self}, {"python", FLAGPROP_PYTHON_EXE}, {"manifests", json::array()}};
  if (!cli.target.run.reproduce.empty()) info["reproduce"] = cli.target.run.reproduce;
  for (const auto& m : cli.manifests) info["manifests"].push_back(fs::absolute(m).string());
  return info;
}

// One target in child processes. A child that dies (a signal, an exit, a
// timeout) while running a case gets that case recorded as a failure with
// its reproducer, and a fresh child goes on with the runs left, at most
// kMaxRestarts times; a child that dies outside a case ends the target.
constexpr int kMaxRestarts = 50;

json runIsolated(const Cli& cli, const std::string& self, const std::string& manifest, const std::string& out,
                 const std::string& junit, const std::string& reproDir) {
  const std::string inflight = out + ".inflight", stage = out + ".stage";
  std::vector<std::string> args = childArgs(cli, self, manifest, out, junit, reproDir);
  json crashes = json::array();
  // A fresh process for the runs left: the document so far is its --resume.
  const auto resumeArgs = [&](int restart) {
    auto a = childArgs(cli, self, manifest, out, junit.substr(0, junit.size() - 4) + "_" + std::to_string(restart + 2) + ".xml",
                       reproDir);
    a.insert(a.end(), {"--resume", out});
    return a;
  };
  for (int restart = 0;; ++restart) {
    std::error_code ec;
    fs::remove(inflight, ec);
    fs::remove(stage, ec);
    const ChildResult r = runChild(args, cli.timeoutSeconds);
    json doc = collectChildDocument(out, manifest, r, cli.timeoutSeconds);
    if (!crashes.empty()) doc["crashes"] = crashes;
    if (!doc.contains("crash")) {
      fs::remove(inflight, ec);
      fs::remove(stage, ec);
      return doc;
    }
    if (r.exitCode == kDeviceLostExit && !r.signal && !r.timedOut && doc.value("status", "") == "ok" &&
        restart < kMaxRestarts) {  // the lost device's result is recorded: a fresh process (and context) goes on
      auto& results = doc["results"];
      if (!results.empty() && results.back().value("key", "") == "process") results.erase(results.end() - 1);
      doc.erase("crash");
      writeText(out, jsonText(doc));
      args = resumeArgs(restart);
      continue;
    }
    const std::string why = doc["crash"].get<std::string>();
    json fly;
    try {
      fly = json::parse(readFile(inflight));
    } catch (const std::exception&) {
    }
    if (!fly.is_object() || doc.value("status", "") != "ok" || restart >= kMaxRestarts) {
      std::cout << "\n[" << doc.value("name", "?") << "] " << why
                << (!fly.is_object() || doc.value("status", "") != "ok" ? " outside a case"
                                                                         : "; " + std::to_string(kMaxRestarts) + " restarts already")
                << "; results written before that are kept" << std::endl;
      return doc;
    }
    std::string where;
    try {
      where = readFile(stage);
    } catch (const std::exception&) {
    }
    PropertyOutcome o = crashOutcome(fly, why);
    o.observations["limit_s"] = std::min(cli.timeoutSeconds, 120);  // the reproducer's time limit
    if (where == "reference") {  // CPU ATen died, not the op under test: nothing judged
      o.status = "skip";
      o.reason = "health: CPU ATen (the reference) ended the process (" + why +
                 ") on a generated case; the op was not judged";
      o.observations["crash_in"] = "reference";
    }
    json& results = doc["results"];
    if (!results.empty() && results.back().value("key", "") == "process") results.erase(results.end() - 1);
    json rj = o.toJson();
    try {
      if (o.status == "fail")
        rj["reproducer"] = writeReproducer(reproDir, doc.at("target"), doc.value("provenance", json::object()), o);
    } catch (const std::exception& e) {
      rj["reproducer_error"] = e.what();
    }
    results.push_back(rj);
    crashes.push_back({{"key", o.key()}, {"why", why}});
    doc["crashes"] = crashes;
    doc.erase("crash");
    writeText(out, jsonText(doc));
    std::cout << "\n[" << doc.value("name", "?") << "] " << o.key() << " ... " << o.status << ": " << o.reason
              << "; a fresh process goes on" << std::endl;
    args = resumeArgs(restart);
  }
}

// `flagprop run`: every target in a child process, one merged report.
int runCommand(Cli cli, const std::string& self, const std::vector<std::string>& argv) {
  if (cli.target.run.seed == 0) cli.target.run.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  if (cli.manifests.empty()) cli.manifests.push_back(defaultManifest());
  json docs = json::array();
  const auto paths = targetPaths(cli.manifests, docs);
  if (!cli.isolate && paths.size() != 1) {
    std::cerr << "flagprop: --no-isolate runs exactly one target; this run has " << paths.size() << std::endl;
    return 2;
  }
  const std::string why = prepareReportDir(cli.reportDir);
  if (!why.empty()) {
    std::cerr << "flagprop: " << why << std::endl;
    return 2;
  }
  const std::string dir = fs::absolute(cli.reportDir).string();
  std::cout << "flagprop: " << paths.size() << " target(s), "
            << (cli.target.run.reproduce.empty() ? "seed " + std::to_string(cli.target.run.seed)
                                                 : std::string("replaying a reproduce string"))
            << ", report in " << dir << std::endl;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string stem = std::to_string(i + 1) + "_" + fs::path(paths[i]).stem().string();
    const std::string out = dir + "/targets/" + stem + ".json", junit = dir + "/junit/" + stem + ".xml";
    std::cout << "== target " << i + 1 << "/" << paths.size() << ": " << paths[i] << std::endl;
    if (!cli.isolate) {
      Cli child = cli;
      child.command = "run-target";
      child.manifests = {paths[i]};
      child.out = out, child.junit = junit, child.reproDir = dir + "/reproducers";
      runTargetCommand(child);
      docs.push_back(json::parse(readFile(out)));
      continue;
    }
    docs.push_back(runIsolated(cli, self, paths[i], out, junit, dir + "/reproducers"));
  }
  const json report = mergeReport(docs, runInfo(cli, self, argv, dir));
  writeText(dir + "/report.json", jsonText(report));
  writeText(dir + "/report.md", renderMarkdown(report));
  printSummary(report, std::cout);
  std::cout << "report: " << dir << "/report.json (and report.md, junit/, reproducers/)" << std::endl;
  size_t results = 0;
  for (const auto& t : docs) results += t.value("results", json::array()).size();
  if (results == 0 && report.at("summary").value("target_errors", 0) == 0) {
    std::cout << "flagprop: nothing ran: --property / --op / --dtype select no run of any target" << std::endl;
    return 2;
  }
  return report.at("summary").at("unexpected").empty() ? 0 : 1;
}

// `flagprop ops` and `flagprop properties`: what a run can select.
int listCommand(const std::string& what) {
  if (what == "ops") {
    ensureInterpreter();
    for (const auto& e : catalog()) {
      std::string dtypes;
      for (const auto& d : e.dtypes) dtypes += (dtypes.empty() ? "" : ",") + d;
      std::cout << e.name << "\t" << dtypes << "\t" << atenSchema(e.name) << "\n";
    }
  } else {
    for (const auto& p : properties()) std::cout << p.id << "\t" << p.title << "\t" << p.holds << "\n";
  }
  return 0;
}

json schemaJson(const OpSchema& s) {
  json j = {{"name", s.name}, {"schema", s.text}, {"cpu_kernel", s.cpuKernel}, {"random", s.randomized},
            {"args", json::array()}, {"returns", json::array()}};
  for (const auto& a : s.args) {
    json x = {{"name", a.name}, {"type", a.type}, {"kwarg_only", a.kwargOnly}, {"out", a.out}, {"written", a.written}};
    if (a.defaultKnown) x["default"] = a.defaultValue;
    j["args"].push_back(x);
  }
  for (const auto& r : s.returns) j["returns"].push_back({{"type", r.type}, {"aliased", r.aliased}, {"written", r.written}});
  return j;
}

// `flagprop ops --flaggems` (every overload FlagGems registers: its class or
// why it is excluded) and `flagprop ops NAME...` (the schema as flagprop
// reads it and the class). Exit 1 when a NAME is no ATen overload here.
int opsCommand(const std::vector<std::string>& names) {
  ensureInterpreter();
  if (names.size() == 1 && names[0] == "--flaggems") {
    std::map<std::string, int> counts;
    for (const auto& n : flaggemsOverloads()) {
      const auto s = atenOpSchema(n);
      const OpClass k = s ? classifyOp(*s) : OpClass{"excluded", whyExcluded(n)};
      const std::string kind = findOp(n) && !s ? "hand-written" : k.kind;
      ++counts[kind];
      std::cout << n << "\t" << kind << "\t" << k.reason << "\n";
    }
    for (const auto& [k, c] : counts) std::cerr << k << ": " << c << "\n";
    return 0;
  }
  int rc = 0;
  for (const auto& n : names) {
    const auto s = atenOpSchema(n);
    if (!s) {
      std::cerr << "flagprop: no ATen overload " << n << " in this LibTorch (" << libtorchVersion() << ")\n";
      rc = 1;
      continue;
    }
    json j = schemaJson(*s);
    const OpClass k = classifyOp(*s);
    j["class"] = k.kind;
    if (!k.reason.empty()) j["excluded_because"] = k.reason;
    std::cout << j.dump(2) << "\n";
  }
  return rc;
}

std::string selfPath(const char* argv0) {
  char buf[4096] = {0};
  const ssize_t len = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return len > 0 ? std::string(buf, static_cast<size_t>(len)) : std::string(argv0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
  if (args[0] == "seed-case" && args.size() == 1) {
    const OpCase seed{"native_layer_norm", "float32", {layerNormSeedCall()}};
    std::cout << toJson(seed).dump() << "\n";
    return 0;
  }
  if (args[0] == "ops" && args.size() > 1) return opsCommand({args.begin() + 1, args.end()});
  if (args[0] == "ops" || args[0] == "properties") {
    if (args.size() == 1) return listCommand(args[0]);
    std::cerr << "flagprop: " << args[0] << " takes no arguments\n";
    return 2;
  }
  Cli cli;
  const std::string why = parse(args, cli);
  if (!why.empty()) {
    std::cerr << "flagprop: " << why << "\n";
    return 2;
  }
  try {
    if (cli.command == "run-target") return runTargetCommand(cli);
    return runCommand(cli, selfPath(argv[0]), std::vector<std::string>(argv, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "flagprop: " << e.what() << "\n";
    return 2;
  }
}
