// Standalone Python reproducers for shrunk counterexamples.
#pragma once

#include "suites/property.h"

#include <string>

namespace flagprop {

/// Writes `<dir>/repro_<target>_<run key>_<n>.py`: a script that rebuilds
/// the shrunk case of `outcome` with plain `python3` (torch only; flagprop's
/// own Python modules are embedded verbatim, so it observes and judges the
/// case with the very functions the suite used: flagprop.checks), loads the
/// same installer file (its SHA256 is printed and compared), prints what it
/// sees and exits 1 when the failure reproduces, 0 when it does not, 2 when
/// a file of the target is missing and 3 when it cannot run here (e.g. no
/// torch, no device). `target` is the target document's `target`
/// (Target::toJson) and `provenance` its provenance. Returns the path.
/// Throws FileError if the file cannot be written. `nameSuffix` keeps the
/// files of a run's distinct failures apart ("_distinct2").
std::string writeReproducer(const std::string& dir, const json& target, const json& provenance,
                            const PropertyOutcome& outcome, const std::string& nameSuffix = "");

}  // namespace flagprop
