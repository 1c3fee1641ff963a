// Running one P5 / P6 case against a target and judging it.
#pragma once

#include "ops/catalog.h"
#include "suites/property.h"

namespace flagprop {

/// Runs `c` (calls of catalog op `entry`) on the session's target, inside a
/// Sandbox:
///  1. unpatched pass: for each call, build the inputs (python/flagprop/ops.py,
///     CPU copy and device tensors with the same layout), snapshot them, call
///     the op under test, snapshot its outputs;
///  2. install: the target's installer runs once (if it has one);
///  3. patched pass (installer active only): the same with fresh inputs.
/// The CPU reference is computed in C++ with LibTorch: output metadata from
/// ATen's meta kernels on the original dtypes (CPU where a meta kernel is
/// missing), values on CPU copies upcast as the entry says, rounded to the
/// output dtype.
///
/// Returns JSON: `numerics` and `aliasing` (lists of one-line findings, empty
/// when the case holds, for P5 and P6), `fast_path` ("active", "inactive",
/// "no installer"), `patched_vs_unpatched` ("equal", "differ", or why not
/// compared), `install` (the installer call, when not active), `calls` (per
/// call: expected and actual metadata), `discard` (why the case cannot be
/// judged, e.g. CPU ATen rejects the arguments; absent otherwise),
/// `compilations` (Triton compilations during the case) and `time_us`
/// {reference, device, total} in microseconds.
/// Python errors inside the op under test become findings; errors of the
/// harness itself propagate as py::error_already_set.
json runOpCase(TargetSession& session, const OpEntry& entry, const OpCase& c);

/// Where the target's op under test sets itself up once per process
/// (python/flagprop/ops.py `setup`): FlagGems registration and the Triton
/// compile counter. Returns setup's JSON. Throws ManifestError naming the
/// target when that fails.
json setupOps(TargetSession& session);

}  // namespace flagprop
