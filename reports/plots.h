// Images beside the report.
#pragma once

#include "suites/property.h"

#include <string>

namespace flagprop {

/// Writes P9's A/B plot of `outcome` (its observations' `timing` samples and
/// summary) as `<dir>/ab_<target>_<op>_<dtype>.png` with flagprop.reporting.plots
/// (matplotlib); returns the path. Throws py::error_already_set when
/// matplotlib is missing or the plot cannot be written.
std::string writeAbPlot(const std::string& dir, const std::string& targetName, const PropertyOutcome& outcome);

}  // namespace flagprop
