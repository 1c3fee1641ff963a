#include "reports/plots.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace flagprop {

std::string writeAbPlot(const std::string& dir, const std::string& targetName, const PropertyOutcome& outcome) {
  fs::create_directories(dir);
  std::string id = targetName + "_" + outcome.op + "_" + outcome.dtype;
  for (auto& ch : id)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  const std::string path = (fs::path(dir) / ("ab_" + id + ".png")).string();
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  pyImport("flagprop.reporting.plots")
      .attr("ab_plot")(fromJson(outcome.observations.at("timing")), path,
                       "P9 " + outcome.op + " " + outcome.dtype + " on " + targetName);
  return path;
}

}  // namespace flagprop
