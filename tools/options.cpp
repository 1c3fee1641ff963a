#include "tools/options.h"

#include "catalog/catalog.h"
#include "catalog/schema_ops.h"
#include "core/dtypes.h"
#include "core/files.h"
#include "reports/reproducer.h"
#include "runner/example_db.h"
#include "suites/registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace flagprop {

namespace fs = std::filesystem;
using json = nlohmann::json;

Cli::Cli() : db(defaultExampleDb()) {}

namespace {

// A decimal number that fits in 64 bits (no sign, no overflow).
bool number(const std::string& s, unsigned long long& out) {
  if (s.empty() || !isdigit(static_cast<unsigned char>(s[0]))) return false;  // no sign, no blank (strtoull skips one)
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

// An option whose value is a whole number from `lo` to `hi`, written by
// `set`; `why` is the usage error.
std::function<std::string(Cli&, const std::string&)> whole(unsigned long long lo, unsigned long long hi,
                                                           std::string why,
                                                           std::function<void(Cli&, unsigned long long)> set) {
  return [=](Cli& cli, const std::string& v) -> std::string {
    unsigned long long n = 0;
    if (!number(v, n) || n < lo || n > hi) return why;
    set(cli, n);
    return "";
  };
}

// An option only `run-target` takes (the parent's plumbing).
std::function<std::string(Cli&, const std::string&)> targetOnly(
    const std::string& flag, std::function<std::string(Cli&, const std::string&)> apply) {
  return [=](Cli& cli, const std::string& v) -> std::string {
    if (cli.command != "run-target") return "unknown option '" + flag + "' (try flagprop --help)";
    return apply(cli, v);
  };
}

void add(std::vector<std::string>& a, std::initializer_list<std::string> more) { a.insert(a.end(), more); }

std::string applyManifest(Cli& cli, const std::string& v) {
  std::error_code ec;
  if (fs::is_directory(v, ec)) return "--manifest " + v + ": a folder, not a manifest file";
  try {  // the reason readFile gives: no such file, a FIFO or device, a symbolic link loop
    readFile(v, 0);
  } catch (const FileError& e) {
    const std::string what = e.what();
    if (what.find("is larger than") == std::string::npos) return "--manifest " + what;
  }
  cli.manifests.push_back(v);
  return "";
}

// --continue DIR: the target documents of DIR/report.json by name, or the
// usage error (no such report, not a report).
std::string readContinued(Cli& cli, const std::string& dir) {
  const std::string path = (fs::path(dir) / "report.json").string();
  json report;
  try {
    report = json::parse(readFile(path));
  } catch (const FileError& e) {
    return "--continue " + dir + ": no report to continue (" + e.what() + ")";
  } catch (const json::exception& e) {
    return "--continue " + dir + ": report.json is not JSON (" + std::string(e.what()).substr(0, 160) + ")";
  }
  if (!report.is_object() || !report.contains("targets") || !report.at("targets").is_array())
    return "--continue " + dir + ": report.json is not a flagprop report (no targets)";
  cli.continued = json::array();
  for (const auto& t : report.at("targets"))
    if (t.is_object() && t.contains("name") && t.at("name").is_string() && t.value("results", json()).is_array())
      cli.continued.push_back(t);
  cli.continuedFrom = fs::absolute(dir).lexically_normal().string();
  const json prov = report.value("provenance", json::object());
  for (const auto& m : prov.value("manifests", json::array()))
    if (m.is_string()) cli.continuedManifests.push_back(m.get<std::string>());
  unsigned long long seed = 0;
  if (prov.value("seed", json()).is_string() && number(prov.at("seed").get<std::string>(), seed))
    cli.continuedSeed = seed;
  return "";
}

// --continue without --manifest / --seed: the continued run's own, so that
// its results are kept (the default targets with a new seed would match
// none of them); "" or why not.
std::string takeContinuedRun(Cli& cli) {
  if (cli.manifests.empty()) {
    if (cli.continuedManifests.empty())
      return "--continue " + cli.continuedFrom + ": its report names no manifests; give them with --manifest";
    for (const auto& m : cli.continuedManifests)
      if (const std::string why = applyManifest(cli, m); !why.empty())
        return "--continue " + cli.continuedFrom + ": the manifest of that run is gone (" + why + ")";
  }
  if (cli.target.run.seed == 0) cli.target.run.seed = cli.continuedSeed;
  return "";
}

std::string applyDevices(Cli& cli, const std::string& v) {
  std::stringstream ss(v);
  unsigned long long n = 0;
  for (std::string d; std::getline(ss, d, ',');) {
    if (!number(d, n)) return "--devices needs device indices, e.g. 0,1";
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"})
      if (const char* vis = std::getenv(var); vis && n >= visibleDevices(vis).size())
        return "--devices " + d + " is not among " + var + "=" + vis + " (an index into that list)";
    cli.devices.push_back(d);
  }
  return cli.devices.empty() ? "--devices needs device indices, e.g. 0,1" : "";
}

std::string applyOp(Cli& cli, const std::string& v) {
  const auto& fg = flaggemsOverloads();  // an excluded or absent registered overload is a skip with its reason
  if (!findOp(v) && !atenOpSchema(v) && std::find(fg.begin(), fg.end(), v) == fg.end())
    return "--op: no catalog op '" + v + "': " + whyExcluded(v) + " (hand-written entries: " + catalogNames() + ")";
  cli.target.selection.ops.push_back(v);
  return "";
}

std::string applyReproduce(Cli& cli, const std::string& v) {
  if (v.empty()) return "--reproduce needs a reproduce string (report.json's results[].reproduce)";
  try {
    reproduceKeys(v);
  } catch (const std::exception& e) {
    return std::string("--reproduce: ") + e.what();
  }
  cli.target.run.reproduce = v;
  return "";
}

// K/N into k and n; "" or the usage error (`first`: K's least value, 0 or 1).
std::string fraction(const std::string& flag, const std::string& v, unsigned long long first, unsigned long long& k,
                     unsigned long long& n) {
  const auto slash = v.find('/');
  if (slash == std::string::npos || !number(v.substr(0, slash), k) || !number(v.substr(slash + 1), n) || n == 0 ||
      n > 4096 || k < first || k >= n + first)
    return flag + " needs I/N with " + std::to_string(first) + " <= I " + (first ? "<=" : "<") + " N <= 4096";
  return "";
}

std::string applyJob(Cli& cli, const std::string& v) {
  unsigned long long k = 0, n = 0;
  if (const std::string why = fraction("--job", v, 0, k, n); !why.empty()) return why;
  cli.target.shardIndex = static_cast<int>(k);
  cli.target.shardCount = static_cast<int>(n);
  return "";
}

std::string applyShard(Cli& cli, const std::string& v) {
  unsigned long long k = 0, n = 0;
  if (const std::string why = fraction("--shard", v, 1, k, n); !why.empty()) return why;
  cli.target.selection.part = static_cast<int>(k - 1);
  cli.target.selection.parts = static_cast<int>(n);
  return "";
}

std::string applyDb(Cli& cli, const std::string& v) {
  if (v.empty()) return "--db needs a folder";
  std::error_code ec;
  if (fs::exists(v, ec) && !fs::is_directory(v, ec)) return "--db " + v + ": a file, not a folder";
  cli.db = fs::absolute(v).string();
  return "";
}

std::string dtypeList() {
  std::string out;
  for (const auto& d : dtypes())
    if (d.catalog) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

// A flag: `set` applied, no value.
std::function<std::string(Cli&, const std::string&)> flag(std::function<void(Cli&)> set) {
  return [=](Cli& cli, const std::string&) {
    set(cli);
    return std::string();
  };
}

// "P1 .. P9": the registry's first and last property id (of op scope only
// with `opsOnly`).
std::string idRange(bool opsOnly) {
  std::vector<std::string> ids;
  for (const auto& d : properties())
    if (!opsOnly || d.scope == PropertyDef::Scope::Op) ids.push_back(d.id);
  return ids.empty() ? "none" : ids.front() + " .. " + ids.back();
}

std::vector<OptionSpec> selectionOptions() {
  return {
      {"--manifest", "PATH", "Cli::manifests", "plan",
       "target (flagprop.target/1) or matrix (flagprop.matrix/1) manifest; repeatable; default "
       "fixtures/targets/default.json",
       applyManifest, nullptr, false, true},
      {"--target", "PATTERN", "Cli::targetPatterns", "plan",
       "run only targets whose name or manifest file name (without .json) matches PATTERN (a shell pattern: "
       "fixture-ops-*); repeatable",
       [](Cli& cli, const std::string& v) -> std::string {
         if (v.empty()) return "--target needs a name or a shell pattern";
         cli.targetPatterns.push_back(v);
         return "";
       }},
      {"--report-dir", "DIR", "Cli::reportDir", "report",
       "where report.json, report.md, report.html, junit/, drafts/ and reproducers/ go (default "
       "./flagprop-report)",
       [](Cli& cli, const std::string& v) -> std::string {
         if (v.empty()) return "--report-dir needs a folder";
         cli.reportDir = v;
         return "";
       },
       nullptr, false, false, false},
      {"--property", "ID", "Selection::properties", "plan",
       "run only this property: " + idRange(false) + ", or P5/OP, P5/OP/DTYPE; repeatable",
       [](Cli& cli, const std::string& v) -> std::string {
         const std::string why = checkRunKey(v);
         if (!why.empty()) return "--property " + v + ": " + why;
         cli.target.selection.properties.push_back(v);
         return "";
       },
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         for (const auto& p : o.target.selection.properties) add(a, {"--property", p});
       }},
      {"--op", "NAME", "Selection::ops", "plan",
       "op properties (" + idRange(true) +
           "): only this op of the targets' catalogs (a hand-written entry or an ATen "
           "overload a manifest lists, e.g. add.Tensor); it adds no op to a target; repeatable; installer "
           "properties then run only when --property names them",
       applyOp,
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         for (const auto& p : o.target.selection.ops) add(a, {"--op", p});
       }},
      {"--dtype", "D", "Selection::dtypes", "plan", "op properties: only this dtype (" + dtypeList() + "); repeatable",
       [](Cli& cli, const std::string& v) -> std::string {
         const std::string why = checkCatalogDtype(v);
         if (!why.empty()) return "--dtype: " + why;
         cli.target.selection.dtypes.push_back(v);
         return "";
       },
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         for (const auto& p : o.target.selection.dtypes) add(a, {"--dtype", p});
       }},
  };
}

std::vector<OptionSpec> searchOptions() {
  return {
      {"--cases", "N", "RunOptions::cases", "search",
       "generated cases per property run (default: the manifest's cases, 100, for P1-P4 and op_cases, 50, per "
       "op and dtype)",
       whole(1, 1000000, "--cases needs a number from 1 to 1000000",
             [](Cli& c, unsigned long long n) { c.target.run.cases = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.cases) add(a, {"--cases", std::to_string(o.target.run.cases)});
       }},
      {"--seed", "S", "RunOptions::seed", "search", "RapidCheck seed (default or 0: random; printed and reported)",
       [](Cli& cli, const std::string& v) -> std::string {
         unsigned long long n = 0;
         if (!number(v, n)) return "--seed needs an integer from 0 to 2^64 - 1 (0 picks a random seed)";
         cli.target.run.seed = n;
         return "";
       },
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         add(a, {"--seed", std::to_string(o.target.run.seed)});
       },
       false, false, false},
      {"--reproduce", "STR", "RunOptions::reproduce", "replay",
       "replay a RapidCheck reproduce string from a report (give the --manifest of the run it came from)",
       applyReproduce,
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (!o.target.run.reproduce.empty()) add(a, {"--reproduce", o.target.run.reproduce});
       }},
      {"--shrink-time", "SEC", "RunOptions::shrinkSeconds", "shrink",
       "how long each failure may be shrunk (default: until RapidCheck finds no smaller failing case; 0: not at "
       "all): past it the counterexample is the smallest failing case found so far, and the reason says so (on a "
       "GPU each smaller shape may compile its own kernels)",
       whole(0, 86400, "--shrink-time needs a number of seconds from 0 (no shrinking) to 86400",
             [](Cli& c, unsigned long long n) { c.target.run.shrinkSeconds = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.shrinkSeconds >= 0) add(a, {"--shrink-time", std::to_string(o.target.run.shrinkSeconds)});
       }},
      {"--distinct", "N", "RunOptions::distinct", "distinct",
       "at most N distinct failures per property run, the first included: it lowers what a property searches for "
       "(3 for P5 / P6), never raises it; 1: a failing run ends at its first failure (a sweep over every "
       "overload: no further search draws new shapes to compile)",
       whole(1, 16, "--distinct needs a number from 1 (the first failure only) to 16",
             [](Cli& c, unsigned long long n) { c.target.run.distinct = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.distinct > 0) add(a, {"--distinct", std::to_string(o.target.run.distinct)});
       }},
      {"--explicit", "N", "RunOptions::explicitCases", "explicit",
       "at most N explicit examples per op and dtype, judged before the generated cases and not counted among "
       "them: shape edges (0-d, empty, size-1, 0-d others, 65,537 rows, NaN / inf), OpInfo's samples, each argument "
       "at its boundaries (default: the manifest's explicit_cases, 64; 0: none)",
       whole(0, 4096, "--explicit needs a number from 0 (none) to 4096",
             [](Cli& c, unsigned long long n) { c.target.run.explicitCases = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.explicitCases >= 0) add(a, {"--explicit", std::to_string(o.target.run.explicitCases)});
       }},
      {"--batch", "N", "RunOptions::batch", "batch",
       "judge up to N of a P5 / P6 search's cases per trip into Python: the cases it will draw next if each passes, "
       "run in one sandbox and judged after one restore and tamper check (default 8; 1: one case at a time). The "
       "statuses and counterexamples are those of one case at a time: a batch stops at a discard, and one in which a "
       "case changed the interpreter's state keeps only its first case",
       whole(1, 256, "--batch needs a number from 1 (one case at a time) to 256",
             [](Cli& c, unsigned long long n) { c.target.run.batch = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.batch != RunOptions{}.batch) add(a, {"--batch", std::to_string(o.target.run.batch)});
       }},
      {"--run-time", "SEC", "RunOptions::runSeconds", "search",
       "how long the runs of one op and dtype may take (default: no limit): past it, once a case has been "
       "judged, no new case, shrink step or search for another failure starts; a failure found is kept, a run "
       "without one passes on the cases that held and says how many of those asked for ran",
       whole(0, 86400, "--run-time needs a number of seconds from 0 to 86400",
             [](Cli& c, unsigned long long n) { c.target.run.runSeconds = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.run.runSeconds >= 0) add(a, {"--run-time", std::to_string(o.target.run.runSeconds)});
       }},
  };
}

std::vector<OptionSpec> processOptions() {
  return {
      {"--timeout", "SEC", "SupervisorOptions::timeoutSeconds", "supervisor",
       "per-target process time limit (default 1800)",
       whole(1, 604800, "--timeout needs a number of seconds from 1 to 604800",
             [](Cli& c, unsigned long long n) { c.timeoutSeconds = static_cast<int>(n); })},
      {"--jobs", "N", "SupervisorOptions::jobs", "supervisor",
       "run each target's ops in N processes at once (its installer properties in the first), each taking the "
       "next op not yet taken, costliest family first; they share Triton's cache, so kernels compile N at a "
       "time (default 1)",
       whole(1, 256, "--jobs needs a number of processes from 1 to 256",
             [](Cli& c, unsigned long long n) { c.jobs = static_cast<int>(n); })},
      {"--heavy-jobs", "N", "TargetRunOptions::heavySlots", "process",
       "under --jobs, at most N of a target's processes at once in the ops whose first cases are mostly "
       "FlagGems autotuning (linear algebra, convolutions); the others go on with the next op and come back to "
       "those left once their own are done (default 0: no cap)",
       whole(0, 256, "--heavy-jobs needs a number of processes from 0 (no cap) to 256",
             [](Cli& c, unsigned long long n) { c.target.heavySlots = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.heavySlots > 0) add(a, {"--heavy-jobs", std::to_string(o.target.heavySlots)});
       }},
      {"--devices", "LIST", "SupervisorOptions::devices", "supervisor",
       "give the processes of --jobs these GPUs in turn (e.g. 0,1: CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES "
       "per process; where those are set already, N is their N-th entry)",
       applyDevices},
      {"--case-timeout", "SEC", "SupervisorOptions::caseTimeoutSeconds", "supervisor",
       "one case's time limit (default 300; 0: none): a case that runs longer is a hang, recorded with its "
       "reproducer, and a fresh process goes on (CPU ATen hanging on a generated case is a skip, after 60 s of "
       "its reference stage)",
       whole(0, 86400, "--case-timeout needs a number of seconds from 0 (none) to 86400",
             [](Cli& c, unsigned long long n) { c.caseTimeoutSeconds = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {  // the pre-compile workers' per-call limit
         if (o.target.precompileWorkers > 0) add(a, {"--case-timeout", std::to_string(o.caseTimeoutSeconds)});
       }},
      {"--budget", "SEC", "SupervisorOptions::budgetSeconds", "supervisor",
       "the whole run's wall time: coverage before depth (every run first judges its cases with shrinking, "
       "distinct failures and replays off; then each run that failed runs again with its own settings, the "
       "same cases, then shrinking); when the time ends, the target processes are stopped (the case in "
       "flight is no finding), a failure not yet shrunk stays as found, and the runs left are reported as "
       "not run",
       whole(1, 604800, "--budget needs a number of seconds from 1 to 604800",
             [](Cli& c, unsigned long long n) { c.budgetSeconds = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.budgetSeconds > 0) add(a, {"--first-pass"});
       }},
      {"--confirm-time", "SEC", "Cli::confirmSeconds", "confirm",
       "each target's failing op results are judged again alone, each in a fresh target process, within SEC s "
       "(default 120; 0: none): one that passes alone but fails after earlier calls of its process is "
       "history-dependent (the fewest such calls found and written into its reproducer), one that fails "
       "neither way is flaky",
       whole(0, 86400, "--confirm-time needs a number of seconds from 0 (none) to 86400",
             [](Cli& c, unsigned long long n) { c.confirmSeconds = static_cast<int>(n); })},
      {"--continue", "DIR", "SupervisorOptions::continued", "plan",
       "go on with the run whose report is in DIR (one its --budget cut short, or stopped): each target runs "
       "only the ops DIR's report lacks, and the new report (another --report-dir) holds DIR's results too, "
       "their reproducers copied; give the same manifests",
       readContinued, nullptr, false, true, false},
      {"--triton-cache", "DIR", "SupervisorOptions::tritonCache", "process",
       "Triton's cache folder for the targets (TRITON_CACHE_DIR), and FlagGems' (its generated code and "
       "tuned configs: FLAGGEMS_CACHE_DIR, DIR/flaggems unless set already): keep one per pin between runs "
       "and CI jobs so that nothing compiles or autotunes twice",
       [](Cli& cli, const std::string& v) -> std::string {
         if (v.empty()) return "--triton-cache needs a folder";
         cli.tritonCache = fs::absolute(v).string();
         return "";
       },
       nullptr, false, true},
      {"--precompile", "N", "TargetRunOptions::precompileWorkers", "process",
       "before a target's first op case, N processes launch its op on its explicit examples' first draws (not "
       "for the ops that autotune heavily) and the layout palette's calls (16 sampled calls per op and dtype "
       "without a palette), so that Triton compiles those kernels N at a time into the cache the run then reads "
       "(at most one per core; under --jobs, N over the target's processes, each at least one; default 0: none; "
       "the report's precompile says what they did)",
       whole(0, 256, "--precompile needs a number of processes from 0 (none) to 256",
             [](Cli& c, unsigned long long n) { c.target.precompileWorkers = static_cast<int>(n); }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.precompileWorkers > 0) add(a, {"--precompile", std::to_string(o.target.precompileWorkers)});
       }},
      {"--db", "DIR", "TargetRunOptions::exampleDb", "reuse",
       "the example database: every failure's shrunk case (and every case a target process died on) is kept "
       "there, one file each, and judged first the next time its target runs (default: $FLAGPROP_DB, else "
       "$XDG_CACHE_HOME/flagprop/examples, else ~/.cache/flagprop/examples)",
       applyDb,
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.db.empty())
           a.push_back("--no-db");
         else
           add(a, {"--db", o.db});
       },
       false, true},
      {"--no-db", "", "TargetRunOptions::exampleDb", "reuse", "neither replay nor store examples",
       flag([](Cli& c) { c.db.clear(); })},
  };
}

std::vector<OptionSpec> consoleOptions() {
  return {
      {"--list", "", "Cli::list", "plan", "print the targets that would run and what each runs; run nothing",
       flag([](Cli& c) { c.list = true; })},
      {"--quiet", "", "Cli::quiet", "report",
       "no progress line (there is none either when stdout is not a terminal): a line per target, its failures, "
       "the summary",
       flag([](Cli& c) { c.quiet = true; })},
      {"--verbose", "", "Cli::verbose", "report", "also a line per property run as it ends",
       flag([](Cli& c) { c.verbose = true; }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.verbose) a.push_back("--verbose");
       }},
      {"--no-isolate", "", "Cli::isolate", "supervisor",
       "run the (one) target in this process (for debugging: code under test that ends the process ends the "
       "run, report unwritten)",
       flag([](Cli& c) { c.isolate = false; })},
      {"--shard", "I/N", "Selection::part", "plan",
       "run only the I-th (1 .. N) of N disjoint, deterministic parts of the run: every target's runs of one op and "
       "dtype (or its installer properties) go to one part by a stable hash; the N parts' reports, merged with "
       "flagprop merge, are the whole run's (docs/gpus.md)",
       applyShard,
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         const Selection& s = o.target.selection;
         if (s.parts > 1) add(a, {"--shard", std::to_string(s.part + 1) + "/" + std::to_string(s.parts)});
       }},
      {"--unverified", "", "TargetRunOptions::unverified", "plan",
       "run targets whose pinned files or versions do not match (normally a target error); every result is "
       "marked unverified",
       flag([](Cli& c) { c.target.unverified = true; }),
       [](const SupervisorOptions& o, std::vector<std::string>& a) {
         if (o.target.unverified) a.push_back("--unverified");
       }},
  };
}

// run-target's plumbing: what the parent gives each target process.
std::vector<OptionSpec> plumbingOptions() {
  auto fd = [](const std::string& what, int Cli::*field) {
    return whole(0, 1024, what + " needs a file descriptor",
                 [field](Cli& c, unsigned long long n) { c.*field = static_cast<int>(n); });
  };
  auto text = [](std::string Cli::*field) {
    return [field](Cli& c, const std::string& v) {
      c.*field = v;
      return std::string();
    };
  };
  return {
      {"--out", "FILE", "Cli::out", "process", "", targetOnly("--out", text(&Cli::out)), nullptr, true},
      {"--console-fd", "FD", "Cli::consoleFd", "process", "",
       targetOnly("--console-fd", fd("--console-fd", &Cli::consoleFd)), nullptr, true},
      {"--repro-dir", "DIR", "Cli::reproDir", "process", "", targetOnly("--repro-dir", text(&Cli::reproDir)), nullptr,
       true},
      {"--key-fd", "FD", "Cli::keyFd", "process", "", targetOnly("--key-fd", fd("--key-fd", &Cli::keyFd)), nullptr,
       true},
      {"--parent", "PID", "Cli::parentPid", "process", "",
       targetOnly("--parent", whole(1, 1ull << 31, "--parent needs a process id",
                                    [](Cli& c, unsigned long long n) { c.parentPid = static_cast<long>(n); })),
       nullptr, true},
      {"--resume", "FILE", "TargetRunOptions::resumeFrom", "process", "",
       targetOnly("--resume",
                  [](Cli& c, const std::string& v) {
                    c.target.resumeFrom = v;
                    return std::string();
                  }),
       nullptr, true},
      {"--claim-dir", "DIR", "TargetRunOptions::claimDir", "process", "",
       targetOnly("--claim-dir",
                  [](Cli& c, const std::string& v) {
                    c.target.claimDir = v;
                    return std::string();
                  }),
       nullptr, true},
      {"--job", "K/N", "TargetRunOptions::shardIndex", "process", "", targetOnly("--job", applyJob), nullptr, true},
      {"--confirm", "FILE", "TargetRunOptions::confirmFile", "confirm", "",
       targetOnly("--confirm",
                  [](Cli& c, const std::string& v) -> std::string {
                    if (v.empty()) return "--confirm needs a file";
                    c.target.confirmFile = v;
                    return "";
                  }),
       nullptr, true},
      {"--first-pass", "", "TargetRunOptions::firstPass", "search", "",
       targetOnly("--first-pass", flag([](Cli& c) { c.target.firstPass = true; })), nullptr, true},
      {"--progress", "", "Cli::progress", "report", "", flag([](Cli& c) { c.progress = true; }), nullptr, true},
  };
}

// Checks of options together, after every one is applied; "" or the usage error.
std::string checkTogether(Cli& cli) {
  if (cli.command == "run-target" && (cli.manifests.size() != 1 || cli.out.empty()))
    return "run-target needs exactly one --manifest and --out";
  if (!cli.target.run.reproduce.empty() && cli.manifests.empty())
    return "--reproduce needs the --manifest of the run the string came from (report.md prints the whole command)";
  if (!cli.continuedFrom.empty()) {
    if (cli.command != "run") return "--continue is an option of flagprop run";
    if (!cli.isolate) return "--continue needs the targets in their own processes (leave out --no-isolate)";
    if (!cli.target.run.reproduce.empty()) return "--continue and --reproduce do not go together";
    std::error_code ec;
    if (fs::weakly_canonical(cli.reportDir, ec) == fs::weakly_canonical(cli.continuedFrom, ec))
      return "--continue " + cli.continuedFrom +
             ": write the continued report into another folder (--report-dir); this one's reproducers are "
             "copied from it";
    if (const std::string why = takeContinuedRun(cli); !why.empty()) return why;
  }
  if (cli.target.run.reproduce.empty()) return "";
  const auto keys = reproduceKeys(cli.target.run.reproduce);  // replay only what the string holds, and all of it
  for (const auto& key : keys) {                              // a run key: ID or ID/OP/DTYPE (op names hold no '/')
    const size_t a = key.find('/'), b = a == std::string::npos ? a : key.find('/', a + 1);
    const std::string id = key.substr(0, a), op = a == std::string::npos ? "" : key.substr(a + 1, b - a - 1),
                      dtype = b == std::string::npos ? "" : key.substr(b + 1);
    if (!cli.target.selection.takes(id, op, dtype))
      return "--reproduce: the string replays " + key +
             ", which the --property / --op / --dtype given do not "
             "select (leave them out: the string names what it replays)";
  }
  if (cli.target.selection.properties.empty()) cli.target.selection.properties = keys;
  return "";
}

// Wraps `text` into lines of at most `width` columns after `indent` spaces.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::istringstream words(text);
  std::string out, line, w;
  while (words >> w) {
    if (!line.empty() && indent + line.size() + 1 + w.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  return out + line + "\n";
}

}  // namespace

const std::vector<OptionSpec>& runOptions() {
  static const std::vector<OptionSpec> table = [] {
    std::vector<OptionSpec> t;
    for (auto part : {selectionOptions(), searchOptions(), processOptions(), consoleOptions(), plumbingOptions()})
      t.insert(t.end(), part.begin(), part.end());
    return t;
  }();
  return table;
}

const OptionSpec* findOption(const std::string& flag, const std::vector<OptionSpec>& table) {
  for (const auto& o : table)
    if (o.flag == flag) return &o;
  return nullptr;
}

bool takesValue(const std::string& flag, const std::vector<OptionSpec>& table) {
  const OptionSpec* o = findOption(flag, table);
  return o && !o->value.empty();
}

std::string parseCommandLine(const std::vector<std::string>& args, Cli& cli, const std::vector<OptionSpec>& table) {
  cli.command = args.at(0);
  if (cli.command != "run" && cli.command != "run-target")
    return "unknown command '" + cli.command + "' (try flagprop --help)";
  for (size_t i = 1; i < args.size(); ++i) {
    std::string opt = args[i], value;
    const auto eq = opt.find('=');
    const bool inlineValue = opt.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inlineValue) {  // --opt=value
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
    }
    if (opt.rfind("--", 0) != 0) return "unexpected argument '" + opt + "' (try flagprop " + cli.command + " --help)";
    const OptionSpec* spec = findOption(opt, table);
    if (!spec) return "unknown option '" + opt + "' (try flagprop " + cli.command + " --help)";
    if (spec->value.empty() && inlineValue) return opt + " takes no value";
    if (!spec->value.empty() && !inlineValue) {
      if (i + 1 >= args.size()) return opt + " needs a value";
      value = args[++i];
    }
    const std::string why = spec->apply(cli, value);
    if (!why.empty()) return why;
  }
  return checkTogether(cli);
}

std::string optionsHelp(const std::vector<OptionSpec>& table) {
  constexpr size_t kColumn = 22, kWidth = 88;
  std::string out = "\nrun options (--opt value or --opt=value):\n";
  for (const auto& o : table) {
    if (o.internal) continue;
    std::string head = "  " + o.flag + (o.value.empty() ? "" : " " + o.value);
    head += head.size() + 2 <= kColumn ? std::string(kColumn - head.size(), ' ') : "\n" + std::string(kColumn, ' ');
    out += head + wrap(o.help, kColumn, kWidth);
  }
  return out;
}

std::string optionsMarkdown(const std::vector<OptionSpec>& table) {
  std::string out = "| option | phase | sets | what it does |\n|---|---|---|---|\n";
  for (const auto& o : table) {
    if (o.internal) continue;
    std::string help = o.help;
    for (size_t at = 0; (at = help.find('|', at)) != std::string::npos; at += 2) help.replace(at, 1, "\\|");
    out += "| `" + o.flag + (o.value.empty() ? "" : " " + o.value) + "` | " + o.phase + " | `" + o.field + "` | " +
           help + " |\n";
  }
  return out;
}

// What the supervisor (runner/supervisor.h) takes of the parsed options;
// the run's --budget starts now.
SupervisorOptions supervisorOptions(const Cli& cli, const std::string& self) {
  SupervisorOptions o;
  o.self = self;
  o.target = cli.target;
  o.db = cli.db;
  o.timeoutSeconds = cli.timeoutSeconds;
  o.caseTimeoutSeconds = cli.caseTimeoutSeconds;
  o.budgetSeconds = cli.budgetSeconds;
  if (cli.budgetSeconds) o.budgetEnd = std::chrono::steady_clock::now() + std::chrono::seconds(cli.budgetSeconds);
  o.verbose = cli.verbose;
  o.quiet = cli.quiet;
  o.jobs = cli.jobs;
  o.devices = cli.devices;
  o.tritonCache = cli.tritonCache;
  o.continued = cli.continued;
  o.continuedFrom = cli.continuedFrom;
  o.optionArgs = [](const SupervisorOptions& so) { return targetProcessOptions(so); };
  o.writeReproducer = [](const std::string& dir, const json& target, const json& prov, const PropertyOutcome& r) {
    return writeReproducer(dir, target, prov, r);
  };
  return o;
}

std::vector<std::string> targetProcessOptions(const SupervisorOptions& o, const std::vector<OptionSpec>& table) {
  std::vector<std::string> a;
  for (const auto& spec : table)
    if (spec.pass) spec.pass(o, a);
  return a;
}

}  // namespace flagprop
