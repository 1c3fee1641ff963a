// The case generators of the installer properties (P1-P4), which the
// registry's entries name (suites/registry.cpp).
#pragma once

#include "suites/property.h"
#include "targets/manifest.h"

namespace flagprop {

/// P1 / P2: installs over mock LibEntry modules and gate settings.
rc::Gen<Case> installCases(const Target& t);
/// P3: launches the fast path cannot express, over mock modules.
rc::Gen<Case> launchCases(const Target& t);
/// P4: keys of the fast path and the stock one, over mock modules.
rc::Gen<Case> keyCases(const Target& t);

}  // namespace flagprop
