// flagprop command line: parses options, runs targets (each in its own
// process) and writes the report.
#include "catalog/catalog.h"
#include "core/files.h"
#include "core/tensor_bridge.h"
#include "reports/plots.h"
#include "reports/report.h"
#include "reports/reproducer.h"
#include "runner/runner.h"

#include <cerrno>
#include <cstring>
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
  flagprop ops                     list the catalog: op, dtypes, ATen schema
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
  --op NAME           P5 / P6: run only this catalog op (e.g. add.Tensor); repeatable
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
    if (!findOp(v)) return "--op: no catalog op '" + v + "' (known: " + catalogNames() + ")";
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
  const json doc = runTarget(cli.manifests[0], cli.junit, cli.target, sink);
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
    const auto args = childArgs(cli, self, paths[i], out, junit, dir + "/reproducers");
    if (!cli.isolate) {
      Cli child = cli;
      child.command = "run-target";
      child.manifests = {paths[i]};
      child.out = out, child.junit = junit, child.reproDir = dir + "/reproducers";
      runTargetCommand(child);
      docs.push_back(json::parse(readFile(out)));
      continue;
    }
    const ChildResult r = runChild(args, cli.timeoutSeconds);
    json doc = collectChildDocument(out, paths[i], r, cli.timeoutSeconds);
    if (doc.contains("crash")) std::cout << "[" << doc.value("name", "?") << "] " << doc["crash"].get<std::string>()
                                         << "; results written before that are kept" << std::endl;
    docs.push_back(doc);
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
