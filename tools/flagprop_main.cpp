// flagprop command line: parses options, runs targets (each in its own
// process) and writes the report.
#include "catalog/catalog.h"
#include "catalog/schema_ops.h"
#include "core/dtypes.h"
#include "core/files.h"
#include "core/tensor_bridge.h"
#include "reports/plots.h"
#include "reports/renderers.h"
#include "reports/report.h"
#include "reports/reproducer.h"
#include "runner/example_db.h"
#include "runner/runner.h"
#include "runner/supervisor.h"

#include "core/python.h"
#include "suites/registry.h"
#include "targets/manifest.h"
#include "tools/confirm.h"
#include "tools/merge.h"
#include "tools/options.h"

#include <fnmatch.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <map>
#include <optional>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include <csignal>
#include <cstdio>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace flagprop;

namespace {

const char* kUsageHead = R"(flagprop: property-based checks for the Torch-FL x FlagGems stack

usage:
  flagprop run [options]        run every target (default: the built-in fixture
                                matrix on the CPU) and write a report
  flagprop drafts REPORT_DIR    write a bug-report draft per distinct failure of a
                                report (REPORT_DIR/drafts/); `run` writes them too
  flagprop html REPORT_DIR      write REPORT_DIR/report.html from its report.json
  flagprop merge DIR... [--report-dir OUT]
                                one report of a run split with --shard I/N (each part's
                                report folder): every result once, with its part and host;
                                exit 1 when a part is missing or was stopped
  flagprop diff OLD NEW         what changed between two runs' report folders (or
                                REPORT_DIR --pins OLD_PIN NEW_PIN: two pins of one
                                matrix run): new failures, fixed, changed, coverage
                                gained or lost; diff.md/.html/.json in --out DIR;
                                exit 1 when NEW has a failure OLD did not
  flagprop ops                  the hand-written catalog: op, dtypes, ATen schema
  flagprop ops --flaggems       every overload FlagGems registers: how flagprop judges
                                it (functional, inplace, out, view) or why it is excluded
  flagprop ops NAME...          an ATen overload's schema as flagprop reads it, and its class
  flagprop properties           the properties: id, title, when it holds
  flagprop options              the run options as a Markdown table (docs/cli.md's)
  flagprop seed-case            the published seed case (native_layer_norm) as a case
  flagprop run-target --manifest M --out FILE [options]
                                one target in this process (what `run` starts per target)
  flagprop --version | --help | COMMAND --help
)";

// What --help prints after the run options (the options come from the
// option table, tools/options.h).
const char* kRunFooter = R"(
What the code under test prints (warnings, log records, prints) is captured per
target and listed in report.md, not shown on the console.

exit status: 0 every result as expected (pass, skip, or the manifest's
'expect'); 1 some result unexpected, a target error, or not every run ran
(--budget); 2 bad usage (an unknown option or command, a missing manifest
file, a selection that selects nothing, a --report-dir in use by another run);
4 the report is incomplete (a report file could not be written: the summary
above says which and why); 130 interrupted (Ctrl-C or SIGTERM: the target
processes are stopped and the report of what ran is written).
)";

std::string runOptionsText() { return optionsHelp() + kRunFooter; }

// The key the parent hands over on `fd` (read before any code under test
// loads; then the descriptor is gone); "" when there is none.
std::string readKey(int fd) {
  std::string key;
  if (fd < 0) return key;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    key.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return key;
}

// The reproducer of a failing or flaky result (the last of doc.results),
// and one per distinct failure; a file that cannot be written is the
// result's reproducer_error.
void writeReproducers(const std::string& reproDir, const TargetSession& s, const PropertyOutcome& o, json& doc) {
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

// What run-target does with each result: its reproducers (a failure) or its
// A/B plot (a timing pass), then the document. The document is written
// after a result that is not a pass, after one that lost the device (the
// process ends next) or was retried from the fallback after a crash, and
// else at most once a second: it holds every result so far, so writing it
// after each of thousands of results costs time quadratic in their number
// (a 2.4 MB document 2,154 times over every overload on the CPU). A process
// that dies loses at most the last second's passes besides the case in
// flight, and the fresh process judges those again.
ResultSink targetSink(const std::string& reproDir, const std::string& outPath, const std::string& key) {
  auto lastWrite = std::make_shared<std::chrono::steady_clock::time_point>();
  return [reproDir, outPath, key, lastWrite](const TargetSession& s, const PropertyOutcome& o, json& doc) {
    if (!reproDir.empty() && (o.status == "fail" || o.status == "flaky")) writeReproducers(reproDir, s, o, doc);
    if (!reproDir.empty() && o.status == "pass" && o.observations.contains("timing")) {
      try {  // the plots go beside the reproducers' folder
        doc["results"].back()["plot"] = writeAbPlot((fs::path(reproDir).parent_path() / "plots").string(),
                                                    doc.value("name", std::string("target")), o);
      } catch (const std::exception& e) {
        const std::string what = e.what();
        doc["results"].back()["plot_error"] = what.substr(0, what.find('\n'));
      }
    }
    const auto now = std::chrono::steady_clock::now();
    // (A pass after a retry from the fallback is written at once: the crash
    // that started the retry is no longer in the document, so a pass lost
    // with it would send a fresh process back to the crashing samples.)
    if (o.status != "pass" || !s.deviceLost.empty() || o.observations.contains("retried_after") ||
        now - *lastWrite >= std::chrono::seconds(1)) {
      writeTargetDocument(outPath, doc, key);
      *lastWrite = now;
    }
  };
}

// `flagprop run-target`: one target in this process; its document is
// written after every property, each failure's reproducer as it is found.
int runTargetCommand(const Cli& cli) {
  if (cli.parentPid > 0) {  // dies with the run that launched it (also after a kill -9 of that run)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != static_cast<pid_t>(cli.parentPid)) return 1;  // it died before the line above
  }
  const std::string key = readKey(cli.keyFd);
  const std::string outPath = cli.out;
  const ResultSink sink = targetSink(cli.reproDir, outPath, key);
  TargetRunOptions opts = cli.target;
  opts.docKey = key;
  opts.exampleDb = cli.db;
  opts.precompileCaseSeconds = cli.caseTimeoutSeconds;
  opts.precompileSeconds = std::max(1, cli.timeoutSeconds / 4);  // the parent passes this process's --timeout
  if (cli.consoleFd >= 0) {  // stdout and stderr are the parent's capture of what the code under test prints
    // Never destroyed: std::cout is flushed through it at exit, after static destructors.
    static auto* console = new ConsoleFrames(cli.consoleFd, key);
    std::cout.rdbuf(console);
    opts.verbose = cli.verbose;
    opts.progressFd = cli.progress ? cli.consoleFd : -1;
    opts.progressKey = key;
  }
  opts.run.inflightPath = outPath + ".inflight";  // the parent reads it when this process dies
  // The op calls this process judges, for a failure that does not recur alone (tools/confirm.h).
  opts.run.historyPath = outPath + ".history." + std::to_string(getpid()) + ".jsonl";
  opts.docPath = outPath;
  opts.exitOnDeviceLost = true;
  opts.run.stagePath = outPath + ".stage";  // and this (flagprop.engine.ops._stage), blanked as each case starts
  setenv("FLAGPROP_STAGE_FILE", opts.run.stagePath.c_str(), 1);
  const json doc = runTarget(cli.manifests[0], opts, sink);
  writeTargetDocument(outPath, doc, key);
  if (doc.value("status", "") != "ok") return 1;
  for (const auto& r : doc.at("results"))
    if (!resultExpected(doc, r)) return 1;
  return 0;
}

// The marker a report folder gets before anything else is written to it
// (so that a run interrupted before its report.json is still recognised)
// and the file the run holds an exclusive lock on while it runs.
constexpr const char* kReportMarker = ".flagprop-report";

// flagprop run's exit status when a report file could not be written.
constexpr int kReportIncomplete = 4;

// A report folder is new, empty, or an earlier flagprop report (its marker,
// or a report.json of flagprop's schema beside a targets/ folder) whose
// results are cleared so they cannot be mistaken for this run's; it is
// locked for the whole run (`lockFd`, held until this process exits), so
// that a second run into it is refused. Returns "" or why not.
std::string prepareReportDir(const std::string& dir, int& lockFd) {
  std::error_code ec;
  static const char* kSubs[] = {"targets", "junit", "reproducers", "drafts", "plots"};
  const fs::path marker = fs::path(dir) / kReportMarker;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return "--report-dir " + dir + " is a file, not a folder; choose a folder";
    const bool empty = fs::is_empty(dir, ec);
    bool ours = fs::is_regular_file(marker, ec);
    try {
      ours = ours || (json::parse(readFile((fs::path(dir) / "report.json").string())).value("schema", "") ==
                          "flagprop.report/1" &&
                      fs::is_directory(fs::path(dir) / "targets", ec));
    } catch (const std::exception&) {
    }
    if (!empty && !ours)
      return "--report-dir " + dir + " exists and holds no flagprop report; choose a new or empty folder";
  }
  fs::create_directories(dir, ec);
  if (ec) return "cannot create --report-dir " + dir + ": " + ec.message();
  // The lock is on the folder itself (its inode cannot be swapped for
  // another while the run holds it); the marker holds the holder's pid.
  lockFd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lockFd < 0) return "cannot open --report-dir " + dir + ": " + std::strerror(errno);
  if (flock(lockFd, LOCK_EX | LOCK_NB) != 0) {
    close(lockFd);
    lockFd = -1;
    std::string who;
    try {
      who = readFile(marker.string(), 64);
    } catch (const std::exception&) {
    }
    who.erase(who.find_last_not_of(" \n") + 1);
    return "--report-dir " + dir + " is in use by another flagprop run" + (who.empty() ? "" : " (pid " + who + ")") +
           "; choose another folder, or wait for that run to end";
  }
  try {
    writeText(marker.string(), std::to_string(getpid()) + "\n");
  } catch (const std::exception& e) {
    return e.what();
  }
  for (const char* sub : kSubs) removeTree((fs::path(dir) / sub).string());
  for (const char* f : {"report.html", "report.json", "report.md"}) fs::remove(fs::path(dir) / f, ec);
  for (const char* sub : {"targets", "junit", "reproducers"}) fs::create_directories(fs::path(dir) / sub, ec);
  return ec ? "cannot create --report-dir " + dir + ": " + ec.message() : "";
}

// What is left of `s` for a file name: at most `n` bytes (names are bounded
// by 255 bytes, and a report file adds a prefix and a suffix to it).
std::string bounded(std::string s, size_t n = 80) { return s.size() > n ? s.substr(0, n) : s; }

// A target to run: its manifest path, its name (from the manifest; the file
// name without .json where it cannot be read) and, when it could not be
// loaded, why (a target error in the report).
struct Planned {
  std::string path, name, error;
  bool missingPath = false;  ///< error: its code under test is not where it says (MissingPathError)
  std::unique_ptr<Target> target;
};

// The properties of `t` that `sel` takes and the ops they would run
// (checked before a process is started for it). Conservative: an op
// property is taken when some op of the target's catalog and some dtype
// (its own list, or any) is.
std::pair<std::vector<std::string>, size_t> selectedRuns(const Target& t, const Selection& sel) {
  const std::vector<std::string> ops = targetOpNames(t);
  // A target without dtypes runs each op's own list: any dtype flagprop knows may be among them.
  std::vector<std::string> dtypes = t.dtypes;
  if (dtypes.empty())
    for (const auto& d : flagprop::dtypes()) dtypes.push_back(d.name);
  std::vector<std::string> props;
  std::set<std::string> opsTaken;
  for (const auto& id : targetProperties(t)) {
    const PropertyDef* d = findProperty(id);
    if (!d) continue;
    if (d->scope != PropertyDef::Scope::Op) {
      if (sel.takes(id) && sel.inPart(t.name)) props.push_back(id);
      continue;
    }
    bool any = false;
    for (const auto& op : ops)
      for (const auto& dt : dtypes)
        if (sel.takes(id, op, dt) && sel.inPart(t.name, op, dt)) {
          any = true;
          opsTaken.insert(op);
          break;
        }
    if (any) props.push_back(id);
  }
  return {props, opsTaken.size()};
}

bool mayRun(const Target& t, const Selection& sel) { return !selectedRuns(t, sel).first.empty(); }

// Expands the manifests into targets; a manifest that cannot be read or a
// target that cannot be loaded becomes a target error document.
std::vector<Planned> planTargets(const std::vector<std::string>& manifests, json& docs) {
  std::vector<Planned> out;
  for (const auto& m : manifests) {
    std::vector<std::string> paths;
    try {
      paths = expandManifest(m);
    } catch (const std::exception& e) {
      std::string name = fs::path(m).stem().string();
      docs.push_back({{"name", name},
                      {"manifest", fs::absolute(m).string()},
                      {"status", "error"},
                      {"error", e.what()},
                      {"results", json::array()}});
      continue;
    }
    for (const auto& p : paths) {
      Planned t;
      t.path = p;
      t.name = fs::path(p).stem().string();
      try {
        t.target = std::make_unique<Target>(loadTarget(p));
        t.name = t.target->name;
      } catch (const std::exception& e) {
        t.missingPath = dynamic_cast<const MissingPathError*>(&e) != nullptr;
        try {  // the manifest's own name where it has one
          t.name = json::parse(readFile(p)).value("name", t.name);
        } catch (const std::exception&) {
        }
        t.error = e.what();
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

// A manifest given with --manifest that cannot be read or loaded (not
// JSON, not a manifest, an unknown field or catalog op, a matrix that
// cannot be read) is bad input, like a missing one: one line each on
// stderr, before any report folder is made. A target a readable matrix
// lists that cannot be loaded stays a target error in the report: the
// matrix runs the rest; so does a well-formed one whose code under test is
// not where it says (MissingPathError: a finding about this machine, which
// the report states). Returns how many were printed.
int badManifests(const std::vector<std::string>& given, const json& errors, const std::vector<Planned>& planned) {
  std::set<std::string> direct;
  for (const auto& m : given) direct.insert(fs::absolute(m).lexically_normal().string());
  int n = 0;
  for (const auto& d : errors) {
    std::cerr << "flagprop: " << d.value("error", std::string("cannot read ") + d.value("manifest", "")) << "\n";
    ++n;
  }
  for (const auto& t : planned)
    if (!t.error.empty() && !t.missingPath && direct.count(fs::absolute(t.path).lexically_normal().string())) {
      std::cerr << "flagprop: " << t.error << "\n";
      ++n;
    }
  return n;
}

bool matchesAny(const std::vector<std::string>& patterns, const Planned& t) {
  if (patterns.empty()) return true;
  const std::string stem = fs::path(t.path).stem().string();
  for (const auto& p : patterns)
    if (fnmatch(p.c_str(), t.name.c_str(), 0) == 0 || fnmatch(p.c_str(), stem.c_str(), 0) == 0) return true;
  return false;
}

// The command that runs this run again (argv: the whole command line, the
// program first): its options as given, paths made absolute, with the seed
// it drew and a report folder of its own; --continue left out (the rerun
// is whole). Every option that shapes the results (--cases, --distinct,
// --shrink-time, --run-time, --op, ...) is kept.
std::string rerunCommand(const Cli& cli, const std::string& self, const std::vector<std::string>& argv) {
  std::string out = shellQuote(self) + " run";
  for (size_t i = 2; i < argv.size(); ++i) {
    std::string opt = argv[i], value;
    const bool inlined = opt.rfind("--", 0) == 0 && opt.find('=') != std::string::npos;
    if (inlined) {
      value = opt.substr(opt.find('=') + 1);
      opt = opt.substr(0, opt.find('='));
    } else if (takesValue(opt) && i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      out += " " + shellQuote(opt);
      continue;
    }
    const OptionSpec* spec = findOption(opt);
    if (spec && !spec->rerun) continue;
    if (spec && spec->path) value = fs::absolute(value).string();
    out += " " + opt + " " + shellQuote(value);
  }
  return out + " --seed " + std::to_string(cli.target.run.seed) + " --report-dir flagprop-rerun";
}

json runInfo(const Cli& cli, const std::string& self, const std::vector<std::string>& argv, const std::string& dir) {
  json info = {{"seed", std::to_string(cli.target.run.seed)},
               {"command", argv},
               {"rerun", rerunCommand(cli, self, argv)},
               {"report_dir", dir},
               {"flagprop", self},
               {"python", FLAGPROP_PYTHON_EXE},
               {"manifests", json::array()}};
  if (!cli.target.run.reproduce.empty()) info["reproduce"] = cli.target.run.reproduce;
  for (const auto& m : cli.manifests) info["manifests"].push_back(fs::absolute(m).string());
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) info["host"] = std::string(host);
  const Selection& sel = cli.target.selection;
  if (sel.parts > 1) info["shard"] = {{"index", sel.part + 1}, {"count", sel.parts}};
  return info;
}

// `flagprop run`: every target in a child process, one merged report.
// Why nothing is selected (usage error, exit 2): --op names no target has
// among them. `planned`: every target of the run.
int nothingToRun(const Cli& cli, const std::vector<Planned>& planned) {
  std::cerr << "flagprop: nothing to run: --target / --property / --op / --dtype select no run of any of the "
            << planned.size() << " target(s)";
  std::string absent;  // --op names no target has: --op narrows a target's catalog, it adds nothing to it
  for (const auto& op : cli.target.selection.ops) {
    bool had = false;
    for (const auto& t : planned)
      if (t.target) {
        const auto names = targetOpNames(*t.target);
        had |= std::find(names.begin(), names.end(), op) != names.end();
      }
    if (!had) absent += (absent.empty() ? "" : ", ") + op;
  }
  if (!absent.empty())
    std::cerr << "; no target's catalog has " << absent
              << " (--op selects among a target's ops; name an op in a manifest's \"catalog\" to run it)";
  std::cerr << "\n";
  return 2;
}

// `flagprop run --list`: each chosen target, its device, the properties
// and the number of ops it would run, one line each; target errors after.
int listTargets(const Cli& cli, const std::vector<Planned>& chosen, const json& errors, size_t unselected) {
  for (const auto& t : chosen) {
    std::cout << t.name << "\t" << t.path;
    if (!t.target) {
      std::cout << "\ttarget error: " << t.error << "\n";
      continue;
    }
    const auto [selected, ops] = selectedRuns(*t.target, cli.target.selection);
    std::string props;
    for (const auto& p : selected) props += (props.empty() ? "" : ",") + p;
    std::cout << "\t" << t.target->device << "\t" << props;
    if (ops) std::cout << "\t" << ops << " ops";
    std::cout << "\n";
  }
  for (const auto& d : errors)
    std::cout << d.value("name", "?") << "\t" << d.value("manifest", "") << "\ttarget error: " << d.value("error", "")
              << "\n";
  if (unselected) std::cout << "(" << unselected << " target(s) with nothing selected are left out)\n";
  return 0;
}

// Adds what `endOrphans` ended after target `doc`'s processes to its
// left_running (marking an entry its process saw as outlived), one console
// line each.
void recordOrphans(json& doc) {
  for (const auto& o : endOrphans()) {
    bool listed = false;  // seen by its target process in a case: the same entry, now known to have outlived it
    for (auto& l : doc["left_running"])
      if (l.value("kind", "") == "process" && l.value("pid", 0) == o.at("pid").get<int>()) {
        l["outlived"] = true;
        listed = true;
      }
    if (!listed) doc["left_running"].push_back(o);
    std::cout << "[" << doc.value("name", "?") << "] the code under test left a process running after its "
              << "target process ended (ended now): pid " << o.at("pid") << " " << o.at("command").get<std::string>()
              << std::endl;
  }
}

// One chosen target's document, its processes written under `out`
// (report folder `dir`): a target error as it is, --no-isolate in this
// process, else through the supervisor.
json runChosen(const Cli& cli, const SupervisorOptions& supervise, const Planned& t, const std::string& out,
               const std::string& dir) {
  if (!t.error.empty())
    return {
        {"name", t.name}, {"manifest", t.path}, {"status", "error"}, {"error", t.error}, {"results", json::array()}};
  if (!cli.isolate) {
    Cli child = cli;
    child.command = "run-target";
    child.manifests = {t.path};
    child.out = out, child.reproDir = dir + "/reproducers";
    runTargetCommand(child);
    return json::parse(readFile(out));
  }
  json doc = superviseTarget(supervise, *t.target, t.path, out, dir + "/reproducers");
  if (doc.value("name", "") == fs::path(t.path).stem().string()) doc["name"] = t.name;
  recordOrphans(doc);
  return doc;
}

// report.json, report.md, report.html, the drafts and the JUnit files of
// the target documents `docs` into `dir` (every format of
// reports/renderers.h), the summary on the console; returns the merged
// report. What could not be written is added to `notWritten`.
json writeReport(const Cli& cli, const json& docs, const json& info, const std::string& dir,
                 std::vector<std::string>& notWritten) {
  for (const auto& t : docs)  // a reproducer or plot the target process could not write is a report file missing
    for (const auto& r : resultRecords(t))
      for (const std::string* e : {&r.reproducerError, &r.plotError})
        if (!e->empty()) notWritten.push_back(t.value("name", std::string("?")) + " " + r.key + ": " + *e);
  const json report = mergeReport(docs, info);
  RenderOptions options;
  options.drafts = cli.target.run.reproduce.empty();
  for (auto& line : renderReport(report, dir, options, std::cout)) notWritten.push_back(std::move(line));
  return report;
}

// How far a budgeted run got (coverage before depth): op runs judged in
// their first pass, failures shrunk and judged again by the second, and the
// targets the budget cut short. Nothing for a run without --budget (a
// merge of parts: where a result had its first pass).
void printFirstPass(const json& docs, bool budgeted) {
  size_t judged = 0, failed = 0, unshrunk = 0, cut = 0;
  for (const auto& t : docs) {
    cut += t.contains("stopped");
    for (const auto& r : t.value("results", json::array())) {
      const json obs = r.value("observations", json::object());
      if (!r.contains("op")) continue;
      ++judged;
      failed += r.value("status", std::string()) == "fail";
      unshrunk += obs.value("first_pass", false);
      budgeted |= t.contains("stopped") || obs.value("first_pass", false);
    }
  }
  if (!budgeted) return;
  std::cout << "coverage before depth: " << judged << " op runs judged; of their " << failed << " failures "
            << failed - unshrunk << " shrunk and judged again in the time left, " << unshrunk << " as first found"
            << (cut ? "; " + std::to_string(cut) + " target(s) cut short by the budget (runs not reached: not_run)"
                    : std::string())
            << std::endl;
}

// The exit status of a run whose report is written (see kRunFooter).
int runExitStatus(const json& report, const json& docs, bool budgeted = false) {
  size_t results = 0;
  bool stopped = false;
  for (const auto& t : docs) {
    results += t.value("results", json::array()).size();
    stopped |= t.contains("stopped");
  }
  if (results == 0 && !stopped && report.at("summary").value("target_errors", 0) == 0) {
    std::cerr << "flagprop: nothing ran: --property / --op / --dtype select no run of any target" << std::endl;
    return 2;
  }
  // The verdict again, last.
  if (stopRequested()) {
    std::cout << "verdict: interrupted (exit 130)" << std::endl;
    return 130;
  }
  const size_t unexpected = report.at("summary").at("unexpected").size();
  printFirstPass(docs, budgeted);
  if (stopped)
    std::cout << "verdict: not every run ran (--budget or an interruption): exit 1" << std::endl;
  else if (unexpected)
    std::cout << "verdict: " << unexpected << " unexpected result(s), listed above: exit 1" << std::endl;
  else
    std::cout << "verdict: every result as the manifests expect: exit 0" << std::endl;
  return unexpected == 0 && !stopped ? 0 : 1;
}

// The targets of a run, one after another, into report folder `dir`:
// each one's document stored (example database), its JUnit file written
// and its console lines printed as it ends. `errors`: the manifests that could not be read,
// reported first. Returns the documents in run order.
json runTargets(const Cli& cli, const std::string& self, std::vector<Planned>& chosen, const json& errors,
                const json& info, const std::string& dir) {
  const SupervisorOptions supervise = supervisorOptions(cli, self);
  const size_t total = chosen.size() + errors.size();
  json docs = json::array();
  ConfirmOptions confirm;
  confirm.command = {supervise.self, "run-target"};
  if (supervise.optionArgs)
    for (auto& a : supervise.optionArgs(supervise)) confirm.command.push_back(std::move(a));
  confirm.processSeconds = std::min(cli.timeoutSeconds, 600);
  confirm.seconds = cli.target.run.reproduce.empty() ? cli.confirmSeconds : 0;
  confirm.env = cacheEnv(cli.tritonCache);
  const auto finish = [&](json doc, double seconds) {  // one target's JUnit file and console lines
    if (!cli.db.empty() && cli.target.run.reproduce.empty() && doc.value("status", "") == "ok") {
      try {  // its failures are judged first the next time it runs
        doc["db"] = {{"dir", cli.db}, {"stored", storeExamples(cli.db, doc, dir)}};
      } catch (const std::exception& e) {
        doc["db"] = {{"dir", cli.db}, {"stored", 0}, {"error", e.what()}};
      }
    }
    writeTargetJunit(dir, docs.size(), doc, info);  // again with the rest at the end; a failure is reported there
    printTargetResult(doc, info, docs.size() + 1, total, seconds, std::cout, 3, cli.verbose);
    docs.push_back(std::move(doc));
  };
  for (const auto& d : errors) finish(d, 0.0);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string stem = std::to_string(docs.size() + 1) + "_" + bounded(fs::path(chosen[i].path).stem().string());
    const std::string out = dir + "/targets/" + stem + ".json";
    json doc = runChosen(cli, supervise, chosen[i], out, dir);
    ConfirmOptions now = confirm;  // within what is left of the run's --budget
    if (supervise.budgetEnd != std::chrono::steady_clock::time_point::max())
      now.seconds = static_cast<int>(std::clamp<long>(
          std::chrono::duration_cast<std::chrono::seconds>(supervise.budgetEnd - std::chrono::steady_clock::now())
              .count(),
          0, confirm.seconds));
    if (!stopRequested()) confirmAlone(doc, out, now, std::cout);  // every failure, alone in a fresh process
    finish(std::move(doc), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (stopRequested()) {
      std::cout << "flagprop: interrupted; the report holds the targets run so far (" << chosen.size() - i - 1
                << " not started)" << std::endl;
      break;
    }
  }
  return docs;
}

int runCommand(Cli cli, const std::string& self, const std::vector<std::string>& argv) {
  if (cli.target.run.seed == 0) cli.target.run.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  if (cli.manifests.empty()) cli.manifests.push_back(defaultManifest());
  json errors = json::array();  // manifests that could not be read
  auto planned = planTargets(cli.manifests, errors);
  if (const int bad = badManifests(cli.manifests, errors, planned); bad > 0) return 2;
  std::vector<Planned> chosen;
  size_t unselected = 0;
  for (auto& t : planned) {
    const bool selected = matchesAny(cli.targetPatterns, t) && (!t.target || mayRun(*t.target, cli.target.selection));
    if (selected)
      chosen.push_back(std::move(t));
    else
      ++unselected;
  }
  // A part of a split run may hold nothing of a small selection: an empty
  // report, still merged with the others, is its answer.
  const bool part = cli.target.selection.parts > 1;
  if (chosen.empty() && errors.empty() && !part) return nothingToRun(cli, planned);
  if (cli.list) return listTargets(cli, chosen, errors, unselected);
  if (!cli.isolate && chosen.size() != 1) {
    std::cerr << "flagprop: --no-isolate runs exactly one target; this run has " << chosen.size() << std::endl;
    return 2;
  }
  int lockFd = -1;  // held (locked) until this process exits
  if (const std::string why = prepareReportDir(cli.reportDir, lockFd); !why.empty()) {
    std::cerr << "flagprop: " << why << std::endl;
    return 2;
  }
  // What the code under test leaves running outside its target process's
  // group comes back here when its parent ends, to be ended and reported.
  if (cli.isolate) prctl(PR_SET_CHILD_SUBREAPER, 1);
  const std::string dir = fs::absolute(cli.reportDir).string();
  const json info = runInfo(cli, self, argv, dir);
  // Every target the run reports on: those that load, and those that do not (each a target error).
  std::cout << "flagprop " << FLAGPROP_VERSION << ": " << chosen.size() + errors.size() << " target(s)"
            << (errors.empty() ? std::string() : " (" + std::to_string(errors.size()) + " that do not load)")
            << (unselected ? " (" + std::to_string(unselected) + " with nothing selected left out)" : std::string())
            << ", "
            << (cli.target.run.reproduce.empty() ? "seed " + std::to_string(cli.target.run.seed)
                                                 : std::string("replaying a reproduce string"))
            << ", report in " << shownPath(dir) << std::endl;
  std::vector<std::string> notWritten;  // report files that could not be written, and why
  const json docs = runTargets(cli, self, chosen, errors, info, dir);
  const json report = writeReport(cli, docs, info, dir, notWritten);
  if (!notWritten.empty()) {  // the summary above is all there is of the rest
    std::cout << "flagprop: report incomplete: " << notWritten.size() << " report file(s) not written:" << std::endl;
    for (const auto& w : notWritten) std::cout << "  " << w << std::endl;
    return kReportIncomplete;
  }
  std::cout << "report: " << shownPath(dir + "/report.md") << " (and report.html, report.json, junit/, drafts/, "
            << "reproducers/)" << std::endl;
  if (part && docs.empty()) {
    std::cout << "verdict: this part (--shard) holds no run of the selection: exit 0" << std::endl;
    return 0;
  }
  return runExitStatus(report, docs, cli.budgetSeconds > 0);
}

// The verdict line of a merged report: the parts missing or stopped first;
// its exit status (runExitStatus's, 1 where a part is missing).
int mergeExitStatus(const Merged& m, const json& report) {
  auto list = [](const std::vector<int>& v) {
    std::string out;
    for (int i : v) out += (out.empty() ? "" : ", ") + std::to_string(i);
    return out;
  };
  const int count = m.provenance.at("merged").value("count", 1);
  if (!m.missing.empty())
    std::cout << "verdict: part(s) " << list(m.missing) << " of " << count
              << " missing: the merged report is not the whole run: exit 1" << std::endl;
  if (!m.incomplete.empty())
    std::cout << "verdict: part(s) " << list(m.incomplete) << " of " << count
              << " stopped before every run ran (--budget or an interruption): exit 1" << std::endl;
  const int status = runExitStatus(report, m.targets);
  return m.missing.empty() && m.incomplete.empty() ? status : std::max(status, 1);
}

// `flagprop merge DIR... [--report-dir OUT]` (tools/merge.h).
int mergeReportsCommand(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  std::string out = "flagprop-merged";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--report-dir" && i + 1 < args.size())
      out = args[++i];
    else if (args[i].rfind("--report-dir=", 0) == 0)
      out = args[i].substr(13);
    else if (args[i].rfind("--", 0) == 0) {
      std::cerr << "flagprop: merge: unknown option '" << args[i] << "' (try flagprop merge --help)\n";
      return 2;
    } else
      dirs.push_back(args[i]);
  }
  if (dirs.empty() || out.empty()) {
    std::cerr << "flagprop: usage: flagprop merge DIR... [--report-dir OUT]\n";
    return 2;
  }
  const std::string dir = fs::absolute(out).lexically_normal().string();
  const Merged m = mergeParts(dirs, dir);
  if (!m.error.empty()) {
    std::cerr << "flagprop: merge: " << m.error << "\n";
    return 2;
  }
  int lockFd = -1;
  if (const std::string why = prepareReportDir(out, lockFd); !why.empty()) {
    std::cerr << "flagprop: " << why << std::endl;
    return 2;
  }
  std::vector<std::string> notWritten;
  for (const auto& [from, to] : m.copies) {
    std::error_code ec;
    fs::create_directories(fs::path(to).parent_path(), ec);
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) notWritten.push_back(to + ": " + ec.message());
  }
  std::cout << "flagprop " << FLAGPROP_VERSION << ": merged " << dirs.size() << " of "
            << m.provenance.at("merged").value("count", 1) << " part(s), " << m.targets.size()
            << " target(s), report in " << shownPath(dir) << std::endl;
  const json report = mergeReport(m.targets, m.provenance);
  for (auto& line : renderReport(report, dir, RenderOptions{}, std::cout)) notWritten.push_back(std::move(line));
  if (!notWritten.empty()) {
    std::cout << "flagprop: report incomplete: " << notWritten.size() << " report file(s) not written:" << std::endl;
    for (const auto& w : notWritten) std::cout << "  " << w << std::endl;
    return kReportIncomplete;
  }
  std::cout << "report: " << shownPath(dir + "/report.md") << std::endl;
  return mergeExitStatus(m, report);
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
  json j = {{"name", s.name},         {"schema", s.text},      {"cpu_kernel", s.cpuKernel},
            {"random", s.randomized}, {"args", json::array()}, {"returns", json::array()}};
  for (const auto& a : s.args) {
    json x = {{"name", a.name}, {"type", a.type}, {"kwarg_only", a.kwargOnly}, {"out", a.out}, {"written", a.written}};
    if (a.defaultKnown) x["default"] = a.defaultValue;
    j["args"].push_back(x);
  }
  for (const auto& r : s.returns)
    j["returns"].push_back({{"type", r.type}, {"aliased", r.aliased}, {"written", r.written}});
  return j;
}

// `flagprop ops --flaggems` (every overload FlagGems registers: its class or
// why it is excluded) and `flagprop ops NAME...` (the schema as flagprop
// reads it and the class). Exit 1 when a NAME is no ATen overload here.
int opsCommand(const std::vector<std::string>& names) {
  for (const auto& n : names)  // an option it does not know is not an op name
    if (n.rfind("--", 0) == 0 && (n != "--flaggems" || names.size() != 1)) {
      std::cerr << "flagprop: ops: unknown option '" << n << "' (flagprop ops --flaggems, or overload names; try "
                << "flagprop ops --help)\n";
      return 2;
    }
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
      rc = 2;
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

// The help of one command (or all of them): what `COMMAND --help` prints.
// `flagprop COMMAND --help`: that command's usage (and the run options for
// run and run-target); `flagprop --help`: every command, then the run options.
void printHelp(const std::string& command) {
  static const std::map<std::string, std::string> usage = {
      {"run",
       "usage: flagprop run [options]\n\nRuns every target (default: the built-in fixture matrix on the CPU) "
       "and writes a report.\n"},
      {"run-target",
       "usage: flagprop run-target --manifest M --out FILE [options]\n\nOne target in this process "
       "(what `flagprop run` starts per target); writes its target document to FILE.\n"},
      {"drafts",
       "usage: flagprop drafts REPORT_DIR\n\nWrites a bug-report draft per distinct failure of a report "
       "(REPORT_DIR/drafts/); `flagprop run` writes them too.\n"},
      {"html", "usage: flagprop html REPORT_DIR\n\nWrites REPORT_DIR/report.html from its report.json.\n"},
      {"merge",
       "usage: flagprop merge DIR... [--report-dir OUT]\n\nOne report (report.json, report.md, report.html, "
       "JUnit, drafts, the parts' reproducers) of a run split into N parts with --shard I/N, from each part's "
       "report folder: every result once, marked with its part and host. Parts of different runs, a part given "
       "twice or a result in two parts are refused (exit 2); a part missing or stopped is named in the verdict "
       "(exit 1). Default OUT: flagprop-merged.\n"},
      {"ops",
       "usage: flagprop ops [--flaggems | NAME...]\n\nThe hand-written catalog (op, dtypes, ATen schema); "
       "with --flaggems every overload FlagGems registers and how flagprop judges it or why it is "
       "excluded; with names, each ATen overload's schema as flagprop reads it, and its class.\n"},
      {"properties", "usage: flagprop properties\n\nThe properties: id, title, when it holds.\n"},
      {"options",
       "usage: flagprop options\n\nThe run options as a Markdown table: option, phase, what it sets, "
       "what it does (docs/cli.md's).\n"},
      {"seed-case", "usage: flagprop seed-case\n\nThe published seed case (native_layer_norm) as a case.\n"}};
  const auto it = usage.find(command);
  if (it == usage.end()) {
    std::cout << kUsageHead << runOptionsText();
    return;
  }
  std::cout << it->second;
  if (command == "run" || command == "run-target") std::cout << runOptionsText();
}

// `flagprop drafts DIR` / `flagprop html DIR`: from an existing report.
int reportCommand(const std::string& what, const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].rfind("--", 0) == 0) {
    std::cerr << "flagprop: usage: flagprop " << what << " REPORT_DIR\n";
    return 2;
  }
  if (!fs::is_regular_file(fs::path(args[0]) / "report.json")) {
    std::cerr << "flagprop: " << args[0] << " holds no report.json (give the --report-dir of a run)\n";
    return 2;
  }
  std::string written;
  const std::string why = renderWithPython(args[0], {what}, &written);
  if (!why.empty()) {
    std::cerr << "flagprop: " << what << ": " << why << "\n";
    return kReportIncomplete;
  }
  if (!written.empty()) std::cout << written << "\n";
  return 0;
}

// `flagprop diff ...`: flagprop.reporting.diff's command line in a plain child Python
// (it needs neither torch nor this process's interpreter); its exit status.
int diffCommand(const std::vector<std::string>& args) {
  static const char* kCode =
      "import sys\n"
      "sys.path[:0] = sys.argv[1].split('\\n')\n"
      "import flagprop.reporting.diff as m\n"
      "sys.exit(m.main(sys.argv[2:]))\n";
  std::string folders;
  for (const auto& f : pythonFolders()) folders += (folders.empty() ? "" : "\n") + fs::absolute(f).string();
  std::vector<std::string> argv = {FLAGPROP_PYTHON_EXE, "-I", "-B", "-c", kCode, folders};
  argv.insert(argv.end(), args.begin(), args.end());
  std::cout << std::flush;
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execv(cargv[0], cargv.data());
  std::cerr << "flagprop: diff: cannot start " << argv[0] << " (" << std::strerror(errno) << ")\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    printHelp("");
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    printHelp(args.size() > 1 ? args[1] : "");
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << "flagprop " << FLAGPROP_VERSION << " (LibTorch " << libtorchVersion() << ", python "
              << FLAGPROP_PYTHON_EXE << ")\n";
    return 0;
  }
  if (args[0] == "diff") return diffCommand({args.begin() + 1, args.end()});
  if (args[0] == "merge" && std::find(args.begin(), args.end(), "--help") == args.end())
    return mergeReportsCommand({args.begin() + 1, args.end()});
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      printHelp(args[0]);
      return 0;
    }
  if (args[0] == "seed-case" && args.size() == 1) {
    const OpCase seed{"native_layer_norm", "float32", {layerNormSeedCall()}};
    std::cout << toJson(seed).dump() << "\n";
    return 0;
  }
  if (args[0] == "options" && args.size() == 1) {
    std::cout << optionsMarkdown();
    return 0;
  }
  if (args[0] == "drafts" || args[0] == "html") return reportCommand(args[0], {args.begin() + 1, args.end()});
  if (args[0] == "ops" && args.size() > 1) return opsCommand({args.begin() + 1, args.end()});
  if (args[0] == "ops" || args[0] == "properties" || args[0] == "seed-case") {
    if (args.size() == 1) return listCommand(args[0]);
    std::cerr << "flagprop: " << args[0] << " takes no arguments (try flagprop " << args[0] << " --help)\n";
    return 2;
  }
  Cli cli;
  // A pipe whose reader is gone (a target process that died or never
  // started) is an error to handle where it is written, not the end of the run.
  signal(SIGPIPE, SIG_IGN);
  if (args[0] == "run") {  // Ctrl-C / SIGTERM: stop the target processes, write the report of what ran
    struct sigaction sa {};
    sa.sa_handler = [](int) { requestStop(); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  } else if (args[0] == "run-target") {
    // Ctrl-C reaches the whole foreground process group, this target process
    // too; the parent `run` stops it (and keeps what it wrote). The parent
    // spawns it with SIGINT blocked (runner.cpp spawnChild); ignored here,
    // before the interpreter starts (CPython then installs no SIGINT
    // handler), and unblocked (one that came meanwhile is dropped), the
    // interrupt is never a KeyboardInterrupt in the code under test, a
    // target error or a "died with signal 2" result.
    signal(SIGINT, SIG_IGN);
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    sigprocmask(SIG_UNBLOCK, &interrupt, nullptr);
  }
  const std::string why = parseCommandLine(args, cli);
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
