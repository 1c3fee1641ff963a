// Target manifests (flagprop.target/1) and matrices (flagprop.matrix/1):
// read strictly, one reader per section, every error one line naming the
// file and the field.
#pragma once

#include "generators/installer_cases.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flagprop {

/// A manifest problem; what() is one line naming the file and what is wrong.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A well-formed manifest whose code under test is not where it says (a
/// path field naming no existing file or folder): the target cannot run
/// here, which a report states as a target error (bad input is the rest
/// of ManifestError).
class MissingPathError : public ManifestError {
 public:
  using ManifestError::ManifestError;
};

/// Limits on a manifest file: larger files and deeper nesting are errors
/// (a manifest is a few hundred bytes, a few levels deep).
constexpr uint64_t kManifestMaxBytes = 1 << 20;
constexpr int kManifestMaxDepth = 16;

/// Which installer a target runs (none: P5 / P6 only).
struct InstallerSpec {
  std::string mode = "none";  ///< source | installed | none
  std::string module = "torch_fl.flagos";
  std::string function = "_patch_flaggems_pointwise_dispatch";
  std::string path;                                   ///< source mode: the file to load (absolute)
  std::string sha256;                                 ///< expected; empty = not pinned
  std::vector<std::string> pythonPath;                ///< installed mode: folders put first on sys.path
  nlohmann::json globals = nlohmann::json::object();  ///< source mode: module globals set before the body runs
  /// The components this installer version has, when the manifest declares
  /// them (checked against what flagprop reads from the source); empty = read
  /// from the source only.
  std::vector<std::string> components;
};

/// Which FlagGems a target runs against.
struct FlagGemsSpec {
  std::string kind = "mock";   ///< mock | source | installed
  std::string path;            ///< source: the checkout's src/ folder (absolute)
  std::string libentrySha256;  ///< expected SHA256 of flag_gems/utils/libentry.py; empty = not pinned
  bool supplyHelper = false;   ///< inject flagprop's own _descriptor_cache_key into a real FlagGems
  /// kind mock: mock spec fields every case uses (e.g. {"helper": "present"});
  /// the generator draws the others (mocks/flagprop_mocks/spec.py).
  nlohmann::json mock = nlohmann::json::object();
};

/// Where a target's op under test comes from (P5, P6); see flagprop/engine/ops.py.
struct OpsSpec {
  std::string kind = "aten";  ///< aten (torch.ops.aten on the device) | module (a Python file's OPS dict)
  std::string path;           ///< module: the file (absolute)
  std::string sha256;         ///< module: expected SHA256; empty = not pinned
  nlohmann::json globals = nlohmann::json::object();  ///< module: globals set before its body runs
  std::string enable;  ///< aten: "flag_gems" registers FlagGems' kernels for the catalog ops
  /// The control P5 / P6 judge the op under test against where it has one
  /// (the same call through the device's stock path): "stock" (kind aten
  /// with enable flag_gems, the default there: the same ATen overload with
  /// FlagGems' kernels unregistered), "none", or, kind module, {"path": a
  /// second op file, "globals": {...}} whose OPS model a device's stock
  /// kernels (the CPU model of the control, for CI).
  nlohmann::json control = "none";
};

/// A pin (flagprop.pin/1): one combination of the stack as a bundle ships it,
/// each component named and its files' SHA256 given. A target manifest that
/// names a pin (`"pin": "…"`) takes its installer file, FlagGems source tree,
/// their hashes and the routing gates from it.
struct Pin {
  std::string path;  ///< absolute path of the pin file
  std::string name;
  std::string description;
  std::string torch;                          ///< expected torch version (prefix); "" = not pinned
  std::string triton;                         ///< expected Triton / FlagTree version (prefix); "" = not pinned
  std::string torchFlCommit, flagGemsCommit;  ///< provenance, free text
  nlohmann::json toJson() const;
};

/// One target: which installer, which FlagGems, which gates, which device.
/// Relative paths in the manifest are resolved against its own directory.
struct Target {
  std::string manifestPath;  ///< absolute path of the manifest file
  std::string name;
  std::string description;
  std::string device = "cpu";  ///< torch device string: cpu, cuda:N, flagos:N
  InstallerSpec installer;
  FlagGemsSpec flagGems;
  std::optional<Gates> gates;                             ///< fixed gates; nullopt = generated per case
  std::vector<std::string> gateBuilds = {"dcu", "cuda"};  ///< builds the installer is scoped to
  std::vector<std::string> properties;                    ///< property ids to run; empty = every one that applies
  int cases = 100;                                        ///< generated cases per installer property
  nlohmann::json expect = nlohmann::json::object();       ///< run key -> expected status (fixtures)
  std::vector<std::string> labels;                        ///< e.g. cpu, cuda, dcu, fixture
  bool reportsOnce = false;             ///< the installer documents reporting a skip once per process (P2)
  OpsSpec ops;                          ///< the op under test (P5, P6)
  std::vector<std::string> catalogOps;  ///< catalog ops to run (P5, P6); empty = all hand-written entries
  std::string catalogSource;            ///< "flaggems" when `catalog` named FlagGems' registered overloads
  std::vector<std::string> dtypes;      ///< dtypes to run; empty = each op's own list
  int opCases = 50;                     ///< generated cases per op and dtype (P5, P6)
  /// Explicit examples per op and dtype, at most (catalog/examples.h), judged
  /// before the generated cases and not counted among them; 0: none.
  int explicitCases = 64;
  int64_t maxElements = 1 << 17;  ///< memory cap: elements per generated tensor and storage
  bool specials = true;           ///< generate nan, +-inf, -0.0 and subnormal inputs
  int layoutPalette = 0;          ///< P5 / P6 specialization reuse (LayoutLimits::palette); 0 = off
  uint64_t paletteSeed = 0;       ///< seed of that palette
  std::optional<Pin> pin;         ///< the pin the target names, if any

  bool hasInstaller() const { return installer.mode != "none"; }
  /// Gates for a case whose generator does not vary them: the manifest's,
  /// else the first build the installer is scoped to, routing to FlagGems.
  Gates defaultGates() const;
  /// The status `expect` names for a result (most specific key first:
  /// P5/op/dtype, P5/op, P5), or "" when none does.
  std::string expectedStatus(const std::string& property, const std::string& op = "",
                             const std::string& dtype = "") const;
  /// Whether `status` is what the manifest expects: its `expect` entry, or
  /// pass / skip without one.
  bool statusExpected(const std::string& status, const std::string& property, const std::string& op = "",
                      const std::string& dtype = "") const;
  /// The one serialised form: the report records it and flagprop.engine.session /
  /// flagprop.engine.ops read it (installer, flag_gems, ops, device, gates, ...).
  nlohmann::json toJson() const;
};

/// The status `expect` (a manifest's field) names for a result of
/// `property` (and for op properties `op`, `dtype`): the most specific key
/// first (P5/op/dtype, P5/op, P5), or "" when none does.
std::string expectedStatus(const nlohmann::json& expect, const std::string& property, const std::string& op = "",
                           const std::string& dtype = "");

/// Whether `status` is what `expect` wants: its entry, or pass / skip
/// without one.
bool statusExpected(const nlohmann::json& expect, const std::string& status, const std::string& property,
                    const std::string& op = "", const std::string& dtype = "");

/// "" when `key` is a well-formed run key: a property id "P<n>", optionally
/// followed by "/OP" (a catalog op) and "/DTYPE" (a catalog dtype); else why
/// not. Whether the id names a property is the property registry's to say.
std::string checkRunKeySyntax(const std::string& key);

/// Parses and validates a target manifest file. Throws ManifestError for a
/// missing, unreadable, oversized or too deeply nested file, invalid JSON, a
/// wrong schema, unknown, missing or mistyped fields, fields that do not
/// apply to the target's kind, or paths that do not exist. Hashes are *not*
/// checked here (see TargetSession), so that the report can show the hash
/// actually seen.
Target loadTarget(const std::string& path);

/// Reads a pin file (flagprop.pin/1) into `pin` and returns the manifest
/// sections it supplies (`installer`, `flag_gems`, `gates`, with absolute
/// paths), to be merged into the target's. Throws ManifestError naming the
/// pin file and the field.
nlohmann::json loadPin(const std::string& path, Pin& pin);

/// Parses a target manifest from JSON; `origin` names it in errors and
/// `baseDir` resolves relative paths.
Target parseTarget(const nlohmann::json& j, const std::string& origin, const std::string& baseDir);

/// Expands a path into target manifest paths: a flagprop.matrix/1 file lists
/// targets (relative to itself; at least one); a flagprop.target/1 file is
/// itself. Throws ManifestError as loadTarget does.
std::vector<std::string> expandManifest(const std::string& path);

/// The built-in default matrix: fixtures/targets/default.json.
std::string defaultManifest();

/// Reads a manifest file as JSON within kManifestMaxBytes and
/// kManifestMaxDepth; throws ManifestError naming the file.
nlohmann::json readManifestJson(const std::string& path);

}  // namespace flagprop
