// What every property suite shares: the target session, run options, the
// outcome record and the RapidCheck driver.
#pragma once

#include "core/python.h"
#include "generators/cases.h"
#include "matrix/manifest.h"

#include <rapidcheck.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace flagprop {

/// Options for one property run.
struct RunOptions {
  int cases = 0;              ///< RapidCheck maxSuccess; 0 = the target's `cases`
  uint64_t seed = 0;          ///< RapidCheck seed; 0 = fresh random seed
  int maxSize = 100;          ///< RapidCheck maxSize
  std::string reproduce;      ///< RapidCheck reproduce string to replay, or empty
  std::string reproducerDir;  ///< where reproducer scripts go; empty = none written
  bool verbose = false;
};

/// A target loaded into the embedded interpreter: validated hashes, the real
/// FlagGems on sys.path where the manifest names one, and the per-case glue.
/// Every case runs inside a fresh Sandbox.
class TargetSession {
 public:
  /// Prepares `t`. Throws ManifestError (one line) for a hash mismatch, a
  /// FlagGems that cannot be imported, or an installer that cannot be loaded
  /// or does not exist.
  explicit TargetSession(Target t);

  const Target& target() const { return target_; }
  /// The dict handed to python/flagprop/session.py (built once).
  py::dict targetDict() const { return py::reinterpret_borrow<py::dict>(targetDict_); }
  /// Provenance: versions, hashes actually seen, device.
  const json& provenance() const { return provenance_; }
  /// Gates for a case whose generator did not vary them (P3, P4): the
  /// manifest's, else the first open build.
  Gates defaultGates() const;

  /// install_case in a sandbox; returns its observations as JSON.
  json installCase(const MockSpec& spec, const Gates& gates, int installs);
  /// key_case in a sandbox.
  json keyCase(const KeyCase& c, const Gates& gates);
  /// launch_case in a sandbox.
  json launchCase(const LaunchCase& c, const Gates& gates);

  /// Set once a case left the device unusable for this process (a sticky
  /// CUDA / HIP error such as an illegal memory access): what happened and
  /// in which run. Later P5 / P6 runs of the target report `error` with it
  /// instead of running.
  std::string deviceLost;

  /// Observations of the cases of the P5 / P6 (op, dtype) run in progress,
  /// by case JSON. P5 and P6 draw the same cases from the same seed, and one
  /// observation holds both properties' findings, so the second property
  /// judges what the first one ran instead of running it again.
  struct OpMemo {
    std::string run;  ///< "op/dtype" the entries belong to
    std::unordered_map<std::string, json> byCase;
  } opMemo;

 private:
  Target target_;
  py::object targetDict_;  // a null handle until the interpreter is up (a py::dict member would allocate earlier)
  json provenance_;
};

/// Result of one property on one target (one entry of targets[].results[]).
struct PropertyOutcome {
  std::string property;  ///< P1..P6
  std::string title;
  std::string op;        ///< P5 / P6: the catalog op
  std::string dtype;     ///< P5 / P6: the dtype
  std::string status;    ///< pass | fail | skip | error
  std::string reason;
  int casesRun = 0;
  json counterexample;   ///< shrunk case (JSON) or null
  std::string counterexampleShown;  ///< RapidCheck's rendering
  std::string reproduce;  ///< RapidCheck reproduce string
  json observations;     ///< what was seen on the shrunk case
  std::string reproducer;  ///< path of the standalone Python reproducer
  double seconds = 0.0;
  json toJson() const;
};

/// What a property's case body records when it fails, so that the outcome can
/// carry the observations of the final (shrunk) counterexample.
struct FailureRecord {
  json caseJson;
  json observations;
  std::string why;
  std::string reproKind;  ///< "install" | "key" | "launch" | "op"
};

/// Runs `f` (a session call); a Python exception from the harness or the code
/// under test becomes a recorded failure whose reason starts "harness error:"
/// (runProperty then reports status `error`, not `fail`).
template <typename F>
json guarded(FailureRecord& last, const json& caseJson, const char* kind, F&& f) {
  try {
    return f();
  } catch (const py::error_already_set& e) {
    last = {caseJson, {{"harness_error", e.what()}}, "harness error: " + describe(e), kind};
  } catch (const std::exception& e) {  // e.g. c10::Error from a device copy
    const std::string what = e.what();
    last = {caseJson, {{"harness_error", what}}, "harness error: " + what.substr(0, what.find('\n')), kind};
  }
  RC_FAIL(last.why);
}

/// Runs `body` (a RapidCheck testable) with the options; fills status, reason,
/// counterexample, reproduce string. `last` is what the body recorded on its
/// latest failure (the shrunk counterexample, because shrinking ends on the
/// last failing case). `skipped` set by the body marks the whole run a skip.
/// P5 / P6 pass the op and dtype: the outcome carries them, and the
/// RapidCheck reproduce key becomes "P5/op/dtype".
PropertyOutcome runProperty(const std::string& id, const std::string& title, TargetSession& session,
                            const RunOptions& opts, const std::function<void()>& body, FailureRecord& last,
                            const std::string& skipped, const std::string& op = "", const std::string& dtype = "");

/// Whether `s` parses as a RapidCheck reproduce string; on failure `error`
/// says why. `ids` receives the property ids it holds.
bool parseReproduceString(const std::string& s, std::vector<std::string>& ids, std::string& error);

/// For P3 / P4: the outcome `skip` when the probe case found the fast path
/// inactive (`probe` is session.launchCase / keyCase JSON), else nullopt.
std::optional<PropertyOutcome> skipIfInactive(const char* id, const char* title, const json& probe);

/// The properties this project implements, in order.
struct PropertyDef {
  const char* id;
  const char* title;
  PropertyOutcome (*run)(TargetSession&, const RunOptions&);
};
const std::vector<PropertyDef>& properties();

/// The four installer properties (DESIGN.md's catalog), each over
/// `opts.cases` generated cases (default: the target's `cases`), shrinking a
/// failure. They throw nothing for a failing target: problems become the
/// outcome's status (`fail`, `skip` with a reason, or `error` for a harness
/// exception). P1 install status; P2 idempotence; P3 stock fallback (skips
/// when the fast path is not active or FlagGems is not the mock); P4 key,
/// helper and memo equivalence (same skips).
PropertyOutcome runP1(TargetSession&, const RunOptions&);
PropertyOutcome runP2(TargetSession&, const RunOptions&);
PropertyOutcome runP3(TargetSession&, const RunOptions&);
PropertyOutcome runP4(TargetSession&, const RunOptions&);

struct OpEntry;

/// The numerics and aliasing properties over the op catalog, for one op in
/// one dtype, each over `opts.cases` generated cases (default: the target's
/// `op_cases`), shrinking a failure. P5 numerics: the device result equals
/// the CPU ATen reference within the entry's tolerance (NaN in the same
/// places) and, when the installer is active, patched and unpatched results
/// are bitwise equal. P6 aliasing and metadata: outputs have ATen's device,
/// dtype and shape and fresh storage; inputs keep their values, sizes,
/// strides, storage offset and version counter; earlier outputs are not
/// changed by later calls.
PropertyOutcome runP5(TargetSession&, const RunOptions&, const OpEntry&, const std::string& dtype);
PropertyOutcome runP6(TargetSession&, const RunOptions&, const OpEntry&, const std::string& dtype);

/// The (op, dtype) pairs a target runs P5 / P6 on: its `catalog` (default
/// all) crossed with each op's dtypes (filtered by the target's `dtypes`).
std::vector<std::pair<const OpEntry*, std::string>> opRuns(const Target& t);

/// P1's judgement of one install observation (exposed for tests and the
/// reproducer). Returns {"components": {name: class}, "install": overall,
/// "pass": bool, "reason": text}. Classes: active, reported-skip, silent-skip,
/// gated-off, broken-wrap; overall adds partial, partial-reported and raised
/// (an exception escaped the installer). Fails on silent-skip, partial,
/// broken-wrap and raised.
json classifyInstall(const json& obs, bool gatesOpen);

}  // namespace flagprop
