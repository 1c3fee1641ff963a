// Compiling a target's kernels ahead, in parallel: worker processes launch
// the op under test on the calls its op runs will make first and most (its
// explicit examples, its layout palette), so that Triton's on-disk cache holds their specializations
// before the target's first case.
#pragma once

#include "harness/session.h"
#include "suites/registry.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flagprop {

/// How often a worker's share is taken up again by a fresh worker after
/// one died or hung on a call (from the call after it).
constexpr int kPrecompileRestarts = 3;

/// How to compile ahead.
struct PrecompileOptions {
  int workers = 0;          ///< worker processes; 0: do nothing
  int caseSeconds = 300;    ///< one call's time limit in s (a worker stuck longer is stopped); 0: none
  int totalSeconds = 3600;  ///< every worker is stopped after this many s (run-target: a quarter of its --timeout)
  /// The runs' own options (--seed, --max-size, --explicit): the explicit
  /// examples are drawn as the runs will draw them (precompileCases).
  RunOptions run;
};

/// Runs `opts.workers` processes (at most one per call and per core of the
/// host) of `python3 -m flagprop.engine.precompile` (the
/// Python flagprop embeds, FLAGPROP_PYTHON_EXE) over precompileCases(target,
/// runs, opts.run), each taking every workers-th call, and waits for all of them. They
/// inherit this process's environment (TRITON_CACHE_DIR, the visible
/// devices), so they fill the same caches the runs then read. Nothing they
/// do is a finding: a call that raises or a worker that dies only means a
/// kernel compiles later, in the run. A worker that dies or hangs on a call
/// is followed by a fresh one from the next call of its share (at most
/// kPrecompileRestarts times per worker). Stopped with the run (requestStop).
///
/// Returns the target document's `precompile` object: `workers`, `cases`
/// (calls), `ran`, `failed` (calls that raised), `compilations` (Triton
/// compilations the workers counted; 0 where Triton is absent), `seconds`
/// (wall time, s), `stopped` (workers that died, timed out or were stopped,
/// one line each) and `errors` (up to 5 lines); null when there is nothing
/// to compile (no op run) or opts.workers is 0. Throws nothing.
json precompile(const TargetSession& session, const std::vector<PropertyRun>& runs, const PrecompileOptions& opts);

}  // namespace flagprop
