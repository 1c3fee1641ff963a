// Running targets: one target's property runs as GoogleTest tests in this
// process, or each target in a child process of its own.
#pragma once

#include "suites/registry.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace flagprop {

/// Options of one target run.
struct TargetRunOptions {
  RunOptions run;
  Selection selection;
  /// Run even where a pinned hash or version does not match; every result
  /// is then marked `unverified` (see TargetSession).
  bool unverified = false;
};

/// Called after each property run with the session, the outcome and the
/// target document holding every result so far (e.g. to write a reproducer
/// and the document, so a crash loses at most the property in flight).
using ResultSink = std::function<void(const TargetSession&, const PropertyOutcome&, json& doc)>;

/// Runs one target: loads and checks it, plans its property runs and runs
/// each as a GoogleTest test (JUnit XML to `junitPath`; a test passes when
/// the result is what the manifest expects). Returns the target document:
/// `name`, `manifest`, `status` (ok | error), `error` (one line),
/// `description`, `labels`, `expect`, `target` (Target::toJson),
/// `provenance`, `results[]` (PropertyOutcome::toJson) and `complete` (true).
/// A bad manifest, a hash mismatch or a missing device is status `error`.
json runTarget(const std::string& manifest, const std::string& junitPath, const TargetRunOptions& opts,
               const ResultSink& sink);

/// How a child process ended.
struct ChildResult {
  int exitCode = -1;
  int signal = 0;
  bool timedOut = false;
};

/// Runs `argv` (argv[0] an executable path) with the environment of this
/// process and waits at most `timeoutSeconds`, killing it after that.
ChildResult runChild(const std::vector<std::string>& argv, int timeoutSeconds);

/// The target document a child wrote to `outPath` (read back), completed
/// with what the parent saw: a crash, a timeout or an exit before the child
/// finished becomes a result `process` with status `error` and the reason,
/// and `crash` names it; a document that was never written becomes a target
/// error. Results written before that are kept.
json collectChildDocument(const std::string& outPath, const std::string& manifest, const ChildResult& r,
                          int timeoutSeconds);

}  // namespace flagprop
