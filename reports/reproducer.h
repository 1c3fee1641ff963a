// Standalone Python reproducers for shrunk counterexamples.
#pragma once

#include "suites/property.h"

#include <string>

namespace flagprop {

/// Writes `<dir>/repro_<target>_<run key>_<n>.py`: a script that rebuilds
/// the shrunk case of `outcome` under the python3 that has torch (no
/// flagprop needed) and judges it with the very functions the suite used
/// (flagprop.judging.checks).
///
/// What it holds: the case and the target as Python literals; the code
/// under test's paths as variables at the top (INSTALLER_PATH, OPS_PATH,
/// FLAGGEMS_SRC, PYTHON_PATH), "{ROOT}/..." for a path inside the flagprop
/// checkout and "{HERE}/..." for one inside the report folder, so that no
/// absolute path of this machine is written except a code-under-test path
/// outside both; and of flagprop's Python code only what the case's check
/// kind reaches (python/flagprop/tools/slim.py, run with FLAGPROP_PYTHON_EXE -I -S,
/// docstrings removed), readable, with the machinery packed (zlib, base85)
/// where the file would otherwise exceed about 40 KB. If that cutting-down
/// fails, the whole modules are embedded instead (larger, never wrong) and
/// the file says so.
///
/// The script prints what it sees and exits 1 when the failure reproduces,
/// 0 when it does not, 2 when a file of the target is missing and 3 when it
/// cannot run here (a python without torch, no device, code it needs that
/// is not embedded). `target` is the target document's `target`
/// (Target::toJson) and `provenance` its provenance. Returns the path.
/// Throws FileError if the file cannot be written. `nameSuffix` keeps the
/// files of a run's distinct failures apart ("_distinct2").
std::string writeReproducer(const std::string& dir, const json& target, const json& provenance,
                            const PropertyOutcome& outcome, const std::string& nameSuffix = "");

/// The line of a reproducer that holds its earlier calls when it has none.
constexpr const char* kPrefixLine = "PREFIX = []";

/// Rewrites the reproducer at `path` (written by writeReproducer) to run
/// `prefix` (a JSON array of {"key", "kind", "case", "judging"}, the calls
/// of its process that the failure needs, in order) before its case, with
/// `reason` as its finding. Throws FileError when the file cannot be read
/// or written or holds no kPrefixLine line.
void setReproducerPrefix(const std::string& path, const json& prefix, const std::string& reason);

}  // namespace flagprop
