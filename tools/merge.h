// `flagprop merge DIR... --report-dir OUT`: one report of a run split into
// N parts (`flagprop run --shard I/N`, one per CI job or Slurm array task),
// from the parts' report folders (docs/gpus.md, "Many hosts, one report").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flagprop {

/// What merging the parts' report.json files gives: the target documents
/// (each target's results of every part, each result with its "shard" and
/// "host"), the run's provenance (the first part's, with "merged"), and
/// the parts that are missing. `error` is set (one line, nothing else is)
/// when the parts cannot be merged: a folder without a report, parts of
/// different runs (seed, manifests or N differ), a part given twice, a
/// result key in two parts.
struct Merged {
  nlohmann::json targets = nlohmann::json::array();
  nlohmann::json provenance;
  std::vector<int> missing;     ///< parts (1 .. N) no report was given for
  std::vector<int> incomplete;  ///< parts whose run was stopped (--budget) or interrupted
  /// Files to copy into the merged folder: (a part's reproducer or plot,
  /// its path in the merged folder, as the results now name it).
  std::vector<std::pair<std::string, std::string>> copies;
  std::string error;
};

/// Merges the report.json of each of `dirs` (see Merged) for a merged
/// report in `outDir` (absolute: the results' reproducer and plot paths
/// point there, `copies` says from where). Reads files only.
Merged mergeParts(const std::vector<std::string>& dirs, const std::string& outDir);

/// (`flagprop merge` itself, tools/flagprop_main.cpp, writes the merged
/// report: report.json, report.md, report.html, JUnit, drafts, the parts'
/// reproducers and plots copied; exit 0 every result as expected and every
/// part present and complete, 1 otherwise, the verdict naming the parts
/// missing or stopped; 2 bad usage or parts that cannot be merged.)

}  // namespace flagprop
