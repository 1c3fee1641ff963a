// The report formats: every file a run writes into its report folder, and
// the console summary, is a renderer of the merged report (report.json's
// document, reports/report.h's mergeReport). This is the one place that
// lists them; a new format is one entry in reportFormats() (docs/reports.md).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// One report format.
struct ReportFormat {
  std::string name;   ///< "json", "markdown", "junit", "html", "drafts", "console"
  std::string files;  ///< what it writes, relative to the report folder ("report.md", "junit/*.xml"; "" stdout)
  /// Writes the format of `report` (the merged report) into folder `dir`,
  /// the console's to `console`; returns what could not be written, one
  /// line each (none: all written). renderReport turns an exception it
  /// throws into such a line.
  std::function<std::vector<std::string>(const json& report, const std::string& dir, std::ostream& console)> write;
  /// Written by flagprop.reporting.render (python/flagprop/reporting/render.py) from the
  /// report.json the "json" format wrote, in one child Python for all such
  /// formats; `write` is empty then.
  bool python = false;
};

/// Every format, in the order a run writes them: report.json first (the
/// Python renderers read it), the console summary last.
const std::vector<ReportFormat>& reportFormats();

/// Which formats renderReport writes.
struct RenderOptions {
  bool drafts = true;   ///< the bug-report drafts (not for a replay)
  bool console = true;  ///< the console summary
};

/// Writes every format of `report` into `dir` (made where missing; the
/// console summary to `console`); returns what could not be written, one
/// line each ("report.html / drafts: ..." for the Python ones, which are
/// not tried when report.json could not be written).
std::vector<std::string> renderReport(const json& report, const std::string& dir, const RenderOptions& options,
                                      std::ostream& console);

/// Runs the Python formats `names` (e.g. {"html"}, {"drafts"}) on the
/// report.json in `dir` in a plain child Python (flagprop.reporting.render: neither
/// torch nor flagprop's interpreter is started). Returns "" and sets
/// `written` (when given) to the paths written, one a line; else what
/// failed, one line.
std::string renderWithPython(const std::string& dir, const std::vector<std::string>& names,
                             std::string* written = nullptr);

/// The JUnit file name of the target at `index` (0-based) of a run:
/// "NNN_NAME.xml", numbered so that file names sort in run order.
std::string junitFileName(size_t index, const std::string& targetName);

/// Writes the JUnit file of target document `target` (the `index`-th of the
/// run, 0-based) into `dir`/junit as soon as it ends, so that a run killed
/// before its report keeps the files of the targets it finished; the
/// "junit" format writes them all again from the merged report. Returns
/// what could not be written (none: written).
std::vector<std::string> writeTargetJunit(const std::string& dir, size_t index, const json& target,
                                          const json& provenance);

}  // namespace flagprop
