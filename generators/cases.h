// Generated case values for the installer properties (P1-P4).
//
// Plain structs: RapidCheck generators (gen.h) build them, the suites turn them
// into Python values, reports serialise them (toJson) and RapidCheck prints
// them through showValue.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// One kernel parameter of a mock LibEntry: kind is "spec" (specialised),
/// "dns" (do-not-specialise) or "constexpr"; constexprs may carry a default.
struct ParamSpec {
  std::string name;
  std::string kind;
  bool hasDefault = false;
  int64_t defaultValue = 0;
};

/// Spec of a mock FlagGems (python/flagprop/mocks.py documents each field).
struct MockSpec {
  std::string helper = "present";  ///< present | absent | raising | wrong_signature
  std::string keySignature = "standard";
  std::string runSignature = "standard";
  std::string cache = "tuple";  ///< tuple | cpu
  bool flagtuneTuner = false;
  int divisibility = 16;
  std::string vendor = "nvidia";
  int deviceCount = 1;
  std::vector<ParamSpec> params;
  std::vector<std::string> wrappers;  ///< autotuner | heuristics | hook
};

/// Values the two installer gates return for a case.
struct Gates {
  std::string accelerator = "dcu";  ///< what torch_fl._build_accelerator() returns
  bool routesToFlagGems = true;     ///< what torch_fl._conf_routes_to_flaggems() returns
};

/// P1 / P2 case: a mock FlagGems and the gates.
struct InstallCase {
  MockSpec mock;
  Gates gates;
};

/// One argument value in a generated key or launch argument list.
struct ArgValue {
  enum class Kind { Tensor, Int, Float, Bool, Str, None, Descriptor };
  Kind kind = Kind::Int;
  // Int: value = (negative ? -1 : 1) * magnitude, covering +-(2^64 - 1).
  bool negative = false;
  uint64_t magnitude = 0;
  double real = 0.0;
  bool flag = false;
  std::string text;
  // Tensor
  std::string dtype = "float32";
  int64_t numel = 4;
  int64_t offset = 0;
  int seed = 0;
  // Descriptor: "triton" (the TensorDescriptor class) or "duck" (same name, other class)
  std::string descriptorKind = "triton";
  std::vector<int64_t> shape, strides, blockShape;
};

/// P4 case: one argument list per key section.
struct KeyCase {
  MockSpec mock;
  std::vector<ArgValue> specArgs, dnsArgs, constArgs;
};

/// One launch of a mock kernel as FlagGems' wrappers issue it.
/// kind: positional | extra_kwargs | partial | callable_grid.
struct Launch {
  std::string kind = "positional";
  int argSet = 0;          ///< which generated argument set (repeats make cache hits)
  int positional = 0;      ///< for "partial": how many leading params are positional
  std::vector<int64_t> grid = {1};
};

/// P3 case: a mock (helper present), argument sets and a launch sequence.
struct LaunchCase {
  MockSpec mock;
  std::vector<std::vector<ArgValue>> argSets;  ///< one value per param
  std::vector<Launch> launches;
};

/// JSON forms of the case values: what reports record as the counterexample
/// and what python/flagprop receives (mocks.py reads MockSpec's keys; launch.py
/// `value_from_json` / `build_launches` read ArgValue and LaunchCase).
json toJson(const ParamSpec& p);
json toJson(const MockSpec& m);
json toJson(const Gates& g);
json toJson(const InstallCase& c);
json toJson(const ArgValue& a);
json toJson(const KeyCase& c);
json toJson(const Launch& l);
json toJson(const LaunchCase& c);

/// Decimal text of an Int ArgValue.
std::string intText(const ArgValue& a);

/// RapidCheck's rendering of a counterexample: the JSON form on one line.
void showValue(const MockSpec& v, std::ostream& os);
void showValue(const Gates& v, std::ostream& os);
void showValue(const InstallCase& v, std::ostream& os);
void showValue(const ArgValue& v, std::ostream& os);
void showValue(const KeyCase& v, std::ostream& os);
void showValue(const LaunchCase& v, std::ostream& os);

}  // namespace flagprop
