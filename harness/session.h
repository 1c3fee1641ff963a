// A target loaded into the embedded interpreter, and each generated case run
// against it in a fresh sandbox.
#pragma once

#include "core/python.h"
#include "targets/manifest.h"

#include <functional>
#include <string>

namespace flagprop {

/// A target ready to run cases: hashes checked, the real FlagGems on
/// sys.path where the manifest names one, the device present, the installer
/// (and a fixture op module) loaded once to prove they load, and what the
/// installer version claims read from its source. Hidden visibility, as
/// pybind11's own types (its py::object fields) have.
class __attribute__((visibility("hidden"))) TargetSession {
 public:
  /// Prepares `t`. Throws ManifestError (one line naming the manifest) for a
  /// hash mismatch or a version its pin does not allow, a FlagGems that
  /// cannot be imported, a device that is not there, an installer or op
  /// module that cannot be loaded or lacks its function, or declared
  /// installer components that differ from the source. With `unverified`, a
  /// hash or version mismatch is recorded (provenance `unverified`, see
  /// unverified()) instead of thrown.
  explicit TargetSession(Target t, bool unverified = false);

  /// The hash and version mismatches a run started as unverified accepted
  /// (one line each); empty when every pinned file and version matched.
  std::vector<std::string> unverified() const;

  const Target& target() const { return target_; }
  /// The target's dict form (Target::toJson), as Python reads it.
  const json& targetJson() const { return targetJson_; }
  /// Provenance: versions, hashes actually seen, device, claims.
  const json& provenance() const { return provenance_; }
  /// Whether the installer's gates are open for `g` (flagprop.judging.verdicts.gates_open).
  bool gatesOpen(const Gates& g) const;

  /// Observes one case (flagprop.judging.checks.observe) in a fresh Sandbox and
  /// judges it (flagprop.judging.checks.judge) once the sandbox is restored, so that
  /// nothing the code under test rebinds reaches its verdict: `kind` install
  /// | install2 | launch | key | op | hits | streams | timing, `caseJson` the
  /// case's JSON form, `judging` the catalog entry's judging spec (op).
  /// Returns check's result as JSON, plus `time_us` (µs, the whole call)
  /// `sandbox_us` (µs of it spent taking and restoring the sandbox) and
  /// `tamper_us` (µs of it spent checking that the case left the judging's
  /// own functions as they were: flagprop.judging.checks.tampered).
  /// Python errors propagate as py::error_already_set.
  json check(const std::string& kind, const json& caseJson, const json& judging = nullptr);

  /// What checkBatch made of a batch.
  struct Batch {
    /// One result per case observed, in order (a prefix of the cases): as
    /// check's, with `time_us` the case's own observing and judging plus an
    /// equal part of the batch's sandbox and tamper check, and `sandbox_us`,
    /// `tamper_us` that part.
    std::vector<json> results;
    /// Sandbox::changed() of the batch's one restore, or "the file mode mask"
    /// (umask): "" when no case changed
    /// any interpreter state the sandbox restores, so that each ran in the
    /// state it would have run in alone; else only the first case did.
    std::string changed;
  };

  /// Observes `cases` one after another in one Sandbox (each case's JSON
  /// form; `beforeEach(i)` is called before case i runs) and, once the
  /// sandbox is restored and the judging found untouched, judges each, as
  /// check does one. Observing stops after a case whose observation ends a
  /// batch (flagprop.judging.checks.ends_batch: a discard, a lost device
  /// context); a case whose observing or judging raised ends the results
  /// before it (judged alone, it raises there again: no error is put on
  /// another case). With one case, as check: its Python error propagates.
  /// Throws std::runtime_error when the judging was tampered with
  /// (flagprop.judging.checks.tampered), and what beforeEach throws.
  Batch checkBatch(const std::string& kind, const std::vector<json>& cases, const json& judging,
                   const std::function<void(size_t)>& beforeEach);

  /// Sets up the op under test once per process (flagprop.engine.ops.setup):
  /// FlagGems' kernels registered where the target asks, the Triton compile
  /// counter. Returns setup's JSON. Throws ManifestError naming the target.
  json setupOps(const std::vector<std::string>& opNames);

  /// The OpInfo bank's samples of ATen overload `name`
  /// (flagprop.engine.opinfo.samples: built on first use in a fresh interpreter,
  /// then read from its cache file): {"samples": [...]} or {"samples": [],
  /// "why": "..."} when there are none. Python errors propagate as
  /// py::error_already_set.
  json opinfoSamples(const std::string& name);

  /// Set once a case left the device unusable for this process (a sticky
  /// CUDA / HIP error such as an illegal memory access): what happened and
  /// in which run. Later device runs of the target report `error` with it.
  std::string deviceLost;

  /// Threads and child processes the code under test started in a case and
  /// left running (flagprop.judging.checks' `left_running`), each listed once: a
  /// JSON array of {"kind": "thread", "name", "daemon"} or {"kind":
  /// "process", "pid", "command"}, in the order first seen.
  const json& leftRunning() const { return leftRunning_; }

 private:
  json leftRunning_ = json::array();
  void checkHashes();
  void checkVersions();
  void pin(const std::string& key, const std::string& path, const std::string& expected, const char* what);
  void mismatch(const std::string& what);
  bool allowUnverified_ = false;
  void checkDevice();
  void dryLoad();
  Target target_;
  json targetJson_;
  py::object pyTarget_;  // a null handle until the interpreter is up
  json provenance_ = json::object();
};

}  // namespace flagprop
