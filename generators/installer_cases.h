// Generated case values for the installer properties (P1-P4) and their
// RapidCheck generators.
//
// Plain values: the generators build them, the suites hand their JSON form
// to Python (flagprop.engine.session reads it), reports record it as the
// counterexample and RapidCheck prints it through showValue. A mock spec is
// JSON checked against the one mock spec schema,
// mocks/flagprop_mocks/spec.py (SPEC_SCHEMA).
#pragma once

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace flagprop {

using json = nlohmann::json;

/// Values the two installer gates return for a case.
struct Gates {
  std::string accelerator = "dcu";  ///< what torch_fl._build_accelerator() returns
  bool routesToFlagGems = true;     ///< what torch_fl._conf_routes_to_flaggems() returns
};

/// P1 / P2 case: a mock FlagGems spec and the gates.
struct InstallCase {
  json mock = json::object();
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
  // Tensor: `numel` elements `offset` elements into a fresh 1-D storage
  // (flagprop.engine.launch.make_tensor builds it).
  std::string dtype = "float32";
  int64_t numel = 4;
  int64_t offset = 0;
  int seed = 0;
  // Descriptor: "triton" (the TensorDescriptor class) or "duck" (same name, other class)
  std::string descriptorKind = "triton";
  std::vector<int64_t> shape, strides, blockShape;
};

/// P4 case: a mock spec and one argument list per key section.
struct KeyCase {
  json mock = json::object();
  std::vector<ArgValue> specArgs, dnsArgs, constArgs;
};

/// One launch of a mock kernel as FlagGems' wrappers issue it.
/// kind: positional | extra_kwargs | partial | callable_grid.
struct Launch {
  std::string kind = "positional";
  int argSet = 0;      ///< which generated argument set (repeats make cache hits)
  int positional = 0;  ///< for "partial": how many leading params are positional
  std::vector<int64_t> grid = {1};
};

/// P3 case: a mock spec (helper present), argument sets and a launch sequence.
struct LaunchCase {
  json mock = json::object();
  std::vector<std::vector<ArgValue>> argSets;  ///< one value per kernel param
  std::vector<Launch> launches;
};

/// JSON forms: what reports record as the counterexample and what
/// flagprop.engine.session receives (key_case_json, launch_case_json,
/// install_case).
json toJson(const Gates& g);
json toJson(const InstallCase& c);
json toJson(const ArgValue& a);
json toJson(const KeyCase& c);
json toJson(const Launch& l);
json toJson(const LaunchCase& c);

/// RapidCheck's rendering of a counterexample: the JSON form on one line.
void showValue(const Gates& v, std::ostream& os);
void showValue(const InstallCase& v, std::ostream& os);
void showValue(const ArgValue& v, std::ostream& os);
void showValue(const KeyCase& v, std::ostream& os);
void showValue(const LaunchCase& v, std::ostream& os);

namespace gen {

/// The mock spec schema (flagprop_mocks.SPEC_SCHEMA) as JSON, read once per
/// process from the embedded interpreter. Throws std::runtime_error if it
/// cannot be read.
const json& mockSchema();

/// Kernel parameter lists of 2..6 params ({name, kind, default?}); the first
/// and the last are specialised pointers (input and output).
rc::Gen<json> params();

/// Mock specs drawn from `schema`: each field by its weighted values
/// (shrinking toward the first), `params` by params(). Fields in `fixed` are
/// not drawn.
rc::Gen<json> mockSpec(const json& schema, const json& fixed = json::object());

/// Gate values; `fixed` pins them (a manifest's gates) instead of generating.
rc::Gen<Gates> gates(std::optional<Gates> fixed = std::nullopt);

/// P1 / P2 cases; `pinned` mock spec fields are not drawn.
rc::Gen<InstallCase> installCases(const json& schema, std::optional<Gates> fixed = std::nullopt,
                                  const json& pinned = json::object());

/// Integers at the key classifier's boundaries: 0, +-1, +-(2^31 - 1), +-2^31,
/// 2^32, +-(2^63 - 1), 2^63, 2^64 - 1, each +-2 (clamped to +-(2^64 - 1)).
rc::Gen<ArgValue> boundaryInt();

/// 1-D tensor arguments of every dtype flagprop knows, 0..64 elements,
/// storage offset 0..5 elements (misaligned data_ptr for most dtypes when
/// non-zero).
rc::Gen<ArgValue> tensorArg();

/// Any key argument: boundary ints, bools, floats, strings, None, tensors,
/// descriptor-like objects (Triton's class or a same-named duck type).
rc::Gen<ArgValue> keyArg();

/// P4 cases: helper present; 0..4 arguments in each of the three sections;
/// `pinned` mock spec fields are not drawn.
rc::Gen<KeyCase> keyCases(const json& schema, const json& pinned = json::object());

/// P3 cases: helper present; 1..3 argument sets; 1..8 launches of the kinds
/// positional (weighted, so cache hits happen), extra_kwargs, partial,
/// callable_grid; tuner / heuristics / hook wrappers and flagtune tuners vary;
/// `pinned` mock spec fields are not drawn.
rc::Gen<LaunchCase> launchCases(const json& schema, const json& pinned = json::object());

}  // namespace gen
}  // namespace flagprop
