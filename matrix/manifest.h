// Target manifests (flagprop.target/1) and matrices (flagprop.matrix/1).
#pragma once

#include "generators/cases.h"

#include <nlohmann/json.hpp>

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

/// Where a target's op under test comes from (P5, P6); see
/// python/flagprop/ops.py.
struct OpsSpec {
  std::string kind = "aten";  ///< aten (torch.ops.aten on the device) | module (a Python file's OPS dict)
  std::string path;           ///< module: the file
  std::string sha256;         ///< module: expected SHA256; empty = not pinned
  nlohmann::json globals = nlohmann::json::object();  ///< module: globals set before its body runs
  std::string enable;         ///< aten: "flag_gems" registers FlagGems' kernels for the catalog ops; "" = the device's own routing
};

/// One target: which installer, which FlagGems, which gates, which device.
/// Relative paths are resolved against the manifest's own directory.
struct Target {
  std::string manifestPath;            ///< absolute path of the manifest file
  std::string name;
  std::string description;
  std::string device = "cpu";          ///< torch device string: cpu, cuda:N, flagos:N
  std::string installerMode = "source";  ///< source | installed | none (no installer: P5 / P6 only)
  std::string installerModule = "torch_fl.flagos";
  std::string installerFunction = "_patch_flaggems_pointwise_dispatch";
  std::string installerPath;           ///< source mode: the file to load
  std::string installerSha256;         ///< expected; empty = not pinned
  std::vector<std::string> pythonPath; ///< installed mode: folders put first on sys.path for the import
  nlohmann::json installerGlobals = nlohmann::json::object();  ///< source mode: module globals set before the body runs
  std::string flagGemsKind = "mock";   ///< mock | source | installed
  std::string flagGemsPath;            ///< source: the checkout's src/ folder
  std::string libentrySha256;          ///< expected SHA256 of flag_gems/utils/libentry.py; empty = not pinned
  bool supplyHelper = false;           ///< inject flagprop's own _descriptor_cache_key into a real FlagGems
  std::optional<Gates> gates;          ///< fixed gates; nullopt = generated per case
  std::vector<std::string> gateBuilds = {"dcu", "cuda"};  ///< builds the installer is scoped to
  std::vector<std::string> properties = {"P1", "P2", "P3", "P4"};
  int cases = 100;                     ///< RapidCheck maxSuccess per property
  nlohmann::json expect = nlohmann::json::object();  ///< property -> expected status (fixtures)
  std::vector<std::string> labels;     ///< e.g. cpu, cuda, dcu, fixture
  bool reportsOnce = false;            ///< the installer documents reporting a skip once per process (P2)
  OpsSpec ops;                         ///< the op under test (P5, P6)
  std::vector<std::string> catalogOps; ///< catalog ops to run (P5, P6); empty = all
  std::vector<std::string> dtypes;     ///< dtypes to run; empty = each op's own list
  int opCases = 50;                    ///< RapidCheck maxSuccess per op and dtype (P5, P6)
  int64_t maxElements = 1 << 17;       ///< memory cap: elements per generated tensor and storage
  bool specials = true;                ///< generate nan, +-inf, -0.0 and subnormal inputs
  int layoutPalette = 0;               ///< P5 / P6 specialization reuse (LayoutLimits::palette); 0 = off
  uint64_t paletteSeed = 0;            ///< seed of that palette

  /// Whether `g` opens the installer's gates (build in gateBuilds and routes).
  bool gatesOpen(const Gates& g) const;
  nlohmann::json toJson() const;
};

/// Parses and validates a target manifest file. Throws ManifestError for a
/// missing or unreadable file, invalid JSON, a wrong schema, missing or
/// mistyped fields, or paths that do not exist. Hashes are *not* checked here
/// (see TargetSession), so that the report can show the hash actually seen.
Target loadTarget(const std::string& path);

/// Parses a target manifest from JSON text; `origin` names it in errors and
/// `baseDir` resolves relative paths.
Target parseTarget(const nlohmann::json& j, const std::string& origin, const std::string& baseDir);

/// Expands a path into target manifest paths: a flagprop.matrix/1 file lists
/// targets (relative to itself); a flagprop.target/1 file is itself. Throws
/// ManifestError as loadTarget does.
std::vector<std::string> expandManifest(const std::string& path);

/// The built-in default matrix: fixtures/targets/default.json.
std::string defaultManifest();

/// Reads a whole file; throws ManifestError naming the path if it cannot.
std::string readFile(const std::string& path);

/// SHA256 (lower-case hex) of a file's bytes; throws ManifestError if unreadable.
std::string sha256File(const std::string& path);

}  // namespace flagprop
