// The supervisor of `flagprop run`: one target in child processes
// (`flagprop run-target`), restarted after a crash, a hang or a lost device
// with the document so far as their --resume, sharded over --jobs
// processes, merged, and stopped when the run's --budget ends.
#pragma once

#include "runner/runner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace flagprop {

/// What the supervisor needs of a `flagprop run` (its options, parsed).
struct SupervisorOptions {
  std::string self;              ///< the flagprop binary: each child is `self run-target ...`
  TargetRunOptions target;       ///< selection, seed, cases, reproduce string, pre-compile workers, --unverified
  std::string db;                ///< the example database (--db); "" = none (--no-db)
  int timeoutSeconds = 1800;     ///< one target process's wall-time limit, s (--timeout)
  int caseTimeoutSeconds = 300;  ///< one case's limit, s (--case-timeout): longer is a hang
  int budgetSeconds = 0;         ///< the whole run's wall time, s (--budget), for its messages; 0 = none
  /// When the run's budget ends (steady clock); max(): none.
  std::chrono::steady_clock::time_point budgetEnd = std::chrono::steady_clock::time_point::max();
  bool verbose = false;              ///< a line per property run (--verbose)
  bool quiet = false;                ///< no progress line (--quiet; every shard but the first)
  int jobs = 1;                      ///< processes per target, its ops dealt over them (--jobs)
  std::vector<std::string> devices;  ///< a device index per shard, round robin (--devices); empty: as inherited
  std::string tritonCache;  ///< TRITON_CACHE_DIR of every child (--triton-cache; see cacheEnv); empty: inherited
  /// Writes the reproducer of a case a process died on into `dir` for the
  /// target document's `target` and `provenance`; returns its path, throws
  /// what it cannot write (reports/reproducer.h's writeReproducer: the
  /// reports layer is above this one). Empty: none is written.
  std::function<std::string(const std::string& dir, const nlohmann::json& target, const nlohmann::json& provenance,
                            const PropertyOutcome& o)>
      writeReproducer;
  /// The run's options as a target process takes them (tools/options.h's
  /// table, each option's `pass`), for these options (a shard's own); the
  /// plumbing (--manifest, --out, ...) is the supervisor's. Empty: none.
  std::function<std::vector<std::string>(const SupervisorOptions&)> optionArgs;
  /// --continue: an earlier report's target documents (an array). A target
  /// found here (continuedDocument) runs only what that document lacks;
  /// null: none.
  nlohmann::json continued;
  std::string continuedFrom;  ///< that report's folder, for the documents' `continued` note
};

/// The cache environment of every process a run starts for `tritonCache`
/// (--triton-cache DIR; empty: none, the processes inherit this one's):
/// TRITON_CACHE_DIR=DIR and, unless this process's environment sets it,
/// FLAGGEMS_CACHE_DIR=DIR/flaggems, so that FlagGems' generated code and
/// tuned (autotuned) configs are kept with the Triton kernels they were
/// tuned for, one folder per pin. As "NAME=value" entries.
std::vector<std::string> cacheEnv(const std::string& tritonCache);

/// The earlier report's results that a continued run of `t` under `sel`
/// keeps, and the ops it still runs. An op is kept whole, every planned run
/// key of it present in `earlier` (a target document), or run again whole;
/// an installer property's result (P1 ..) is kept when present. `installer`
/// says whether an installer property is left to run.
struct Continuation {
  nlohmann::json kept = nlohmann::json::array();  ///< results of `earlier`, in its order
  std::vector<std::string> ops;                   ///< ops left to run, in catalog order
  bool installer = false;                         ///< an installer property is left to run
};
/// Throws ManifestError as plannedKeys does. Results of runs `sel` does not
/// plan are kept as they are; an error result counts as not run.
Continuation continuation(const Target& t, const Selection& sel, const nlohmann::json& earlier);

/// The document of `opts.continued` that target `t` (loaded from
/// `manifest`) continues: the one of the same manifest file and name, else
/// the only one of that name; nullptr when there is none (or two share the
/// name, from other manifests).
const nlohmann::json* continuedDocument(const SupervisorOptions& opts, const Target& t, const std::string& manifest);

/// How often a target's processes are restarted after a crash in a case, a
/// lost device or a flaky result's fresh judging, at most.
constexpr int kMaxRestarts = 50;

/// Runs target `t` (loaded from `manifest`) in child processes and returns
/// its document (runner.h's runTarget shape, with captured_output, crashes,
/// shards, stopped where they apply); `out` (NAME.json) is where the
/// children write it, `reproDir` where reproducers go. A child that dies
/// in a case has that case recorded as a failure with its reproducer and a
/// fresh child goes on (at most kMaxRestarts times); one that dies outside
/// a case ends the target with the results written before. Flaky results
/// of a finished child are judged once more, first in a fresh child
/// (PropertyRun::confirmFlaky). With `opts.continued` holding the target
/// (by name), only what that earlier document lacks runs, and the document
/// holds its kept results (reproducers copied into `reproDir`) and a
/// `continued` note {from, kept, ran}; a target whose earlier results came
/// from other versions of torch, FlagGems, Triton or Torch-FL is an error
/// that says so. Never throws for what a child does.
nlohmann::json superviseTarget(const SupervisorOptions& opts, const Target& t, const std::string& manifest,
                               const std::string& out, const std::string& reproDir);

/// Ends (SIGKILL) and lists the processes this process has inherited as a
/// child subreaper (PR_SET_CHILD_SUBREAPER): what the code under test left
/// running after its target process ended, children of those included.
/// Each entry: {"kind": "process", "pid", "command" (≤ 200 bytes), "outlived": true}.
nlohmann::json endOrphans();

/// The entries of a CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES value, blanks
/// trimmed; none from an entry starting with -1 on (no device visible).
std::vector<std::string> visibleDevices(const std::string& value);

/// The file a target process's stdout and stderr go to, beside its
/// document `out` (NAME.json -> NAME.output.txt).
std::string capturePath(const std::string& out);

}  // namespace flagprop
