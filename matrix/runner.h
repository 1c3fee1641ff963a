// Running targets: each in its own process, results merged into one report.
#pragma once

#include "suites/property.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flagprop {

/// Options shared by `flagprop run` and `flagprop run-target`.
struct CliOptions {
  std::vector<std::string> manifests;   ///< target or matrix manifests; empty = built-in default
  std::string reportDir = "flagprop-report";
  std::vector<std::string> properties;  ///< filter (P1..P6, P5/op, P5/op/dtype); empty = the manifest's list
  std::vector<std::string> ops;         ///< P5 / P6 filter: catalog op names; empty = the manifest's
  std::vector<std::string> dtypes;      ///< P5 / P6 filter: dtypes; empty = the manifest's
  RunOptions run;
  int timeoutSeconds = 1800;            ///< per target process
  bool isolate = true;                  ///< one process per target
};

/// `flagprop run-target`: runs one target's properties as GoogleTest tests
/// (JUnit XML to `junitPath`) and writes the target document to `outPath`
/// after every property, so a crash loses at most the property in flight.
/// Returns 0 when every result is as expected, 1 otherwise.
int runTarget(const std::string& manifest, const std::string& outPath, const std::string& junitPath,
              const CliOptions& opts);

/// `flagprop run`: expands manifests, runs each target (in a child process
/// unless `isolate` is false), merges report.json / report.md in
/// `opts.reportDir`, prints progress and the summary. Returns 0 when every
/// result is as expected, 1 otherwise.
int runMatrix(const CliOptions& opts, const std::string& selfExe, const std::vector<std::string>& argvForLog);

}  // namespace flagprop
