// Standalone Python reproducers for shrunk counterexamples.
#pragma once

#include "suites/property.h"

#include <string>

namespace flagprop {

/// Writes `<dir>/repro_<target>_<property>.py`, a script that rebuilds the
/// shrunk case with plain `python3` (torch only; flagprop's own helper
/// modules are embedded verbatim), loads the same installer file (its SHA256
/// is checked and printed), prints the observations and exits 1 when the
/// failure reproduces, 0 when it does not. Returns the path. Throws
/// std::runtime_error if the file cannot be written.
std::string writeReproducer(const std::string& dir, const TargetSession& session, const PropertyOutcome& outcome,
                            const FailureRecord& failure);

}  // namespace flagprop
