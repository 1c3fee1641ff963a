// The options of `flagprop run` and `flagprop run-target`, declared once.
// One table (runOptions) says, per option, what it sets, how its value is
// parsed and checked, how its setting reaches a target process, its help
// text and the part of a run it affects. The parser, a target process's
// arguments (SupervisorOptions::optionArgs), `--help`, the rerun command and
// docs/cli.md's options table are all derived from it (docs/cli.md).
#pragma once

#include "runner/runner.h"
#include "runner/supervisor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flagprop {

/// What `flagprop run` and `run-target` take from the command line.
struct Cli {
  std::string command;  ///< "run" | "run-target"
  std::vector<std::string> manifests;
  std::string reportDir = "flagprop-report";
  std::string out, reproDir;  ///< run-target: its document, its reproducers' folder
  TargetRunOptions target;
  int timeoutSeconds = 1800;  ///< --timeout: one target process's limit, s
  bool isolate = true;        ///< false: --no-isolate
  bool list = false, quiet = false, verbose = false;
  std::vector<std::string> targetPatterns;  ///< --target
  int jobs = 1;                             ///< --jobs: processes per target (its ops sharded over them)
  std::vector<std::string> devices;         ///< --devices: a device index per shard, round robin
  std::string tritonCache;                  ///< --triton-cache (absolute)
  int budgetSeconds = 0;                    ///< --budget: the whole run's wall time, s; 0 = none
  int caseTimeoutSeconds = 300;             ///< --case-timeout, s
  int confirmSeconds = 120;                 ///< --confirm-time: confirming a target's failures alone, s; 0 = none
  int consoleFd = -1;                       ///< run-target: where its console lines go (the parent's stdout)
  int keyFd = -1;                           ///< run-target: where the document key is read from (then closed)
  long parentPid = 0;                       ///< run-target: the flagprop run that launched it (dies with it)
  bool progress = false;                    ///< run-target: a progress line on consoleFd
  std::string db;                           ///< --db / --no-db (""): the example database
  std::string continuedFrom;                ///< --continue: the earlier report's folder (absolute)
  nlohmann::json continued;                 ///< --continue: its target documents
  /// --continue: the manifests and seed of the run continued (its
  /// provenance), taken where --manifest / --seed are not given.
  std::vector<std::string> continuedManifests;
  uint64_t continuedSeed = 0;
  Cli();
};

/// One option, declared once.
struct OptionSpec {
  std::string flag;   ///< "--cases"
  std::string value;  ///< its value's name in the help ("N"); "" for a flag that takes none
  std::string field;  ///< what it sets, e.g. "RunOptions::cases" (docs/cli.md)
  /// The part of a run it affects (docs/cli.md): plan, reuse, search,
  /// shrink, distinct, confirm, replay, process, supervisor, report.
  std::string phase;
  std::string help;  ///< what it does; wrapped for --help, one cell in docs/cli.md
  /// Applies the value ("" for a flag) to `cli`; returns "" or the usage error (one line).
  std::function<std::string(Cli& cli, const std::string& value)> apply;
  /// Appends the arguments that give its setting to a target process
  /// (`flagprop run-target`, per process of the target: `o` is that
  /// process's options); empty: the setting stays in the parent.
  std::function<void(const SupervisorOptions& o, std::vector<std::string>& args)> pass;
  bool internal = false;  ///< run-target plumbing the parent passes: in neither --help nor docs/cli.md
  bool path = false;      ///< a path: made absolute in the rerun command
  bool rerun = true;      ///< repeated in the rerun command (false: --seed, --report-dir, --continue)
};

/// Every option of `run` and `run-target`, in --help order.
const std::vector<OptionSpec>& runOptions();

/// Parses `args` (the command first: "run" or "run-target") into `cli` by
/// `table`; returns "" or the usage error (one line: an unknown option, a
/// value missing or out of range, options that do not go together).
std::string parseCommandLine(const std::vector<std::string>& args, Cli& cli,
                             const std::vector<OptionSpec>& table = runOptions());

/// The "run options" section of --help from `table` (internal options left out).
std::string optionsHelp(const std::vector<OptionSpec>& table = runOptions());

/// docs/cli.md's options table from `table`: a Markdown table (option,
/// phase, what it does), between the markers docs/cli.md holds.
std::string optionsMarkdown(const std::vector<OptionSpec>& table = runOptions());

/// The option arguments a target process of `o` is given (each option's
/// `pass`), without the process's plumbing (--manifest, --out, ...).
std::vector<std::string> targetProcessOptions(const SupervisorOptions& o,
                                              const std::vector<OptionSpec>& table = runOptions());

/// What the supervisor (runner/supervisor.h) takes of the parsed options,
/// `self` being the flagprop binary its target processes run; the run's
/// --budget starts now. Its optionArgs are the table's (targetProcessOptions).
SupervisorOptions supervisorOptions(const Cli& cli, const std::string& self);

/// Whether `flag` takes a value by `table` (the rerun command's reading of argv).
bool takesValue(const std::string& flag, const std::vector<OptionSpec>& table = runOptions());

/// The spec of `flag`, or nullptr.
const OptionSpec* findOption(const std::string& flag, const std::vector<OptionSpec>& table = runOptions());

}  // namespace flagprop
