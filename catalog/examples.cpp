#include "catalog/examples.h"

#include "catalog/opinfo_sampler.h"
#include "core/dtypes.h"
#include "core/tensor_bridge.h"

#include <algorithm>
#include <cstdint>

namespace flagprop {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// OpInfo's samples judged as given before the argument boundaries; the
// rest come after them.
constexpr size_t kFirstSamples = 8;

// The type without its optional mark, SymInt read as int, a list's size
// dropped: "SymInt[1]?" -> "int[]".
std::string plainType(std::string t) {
  if (!t.empty() && t.back() == '?') t.pop_back();
  for (size_t p; (p = t.find("SymInt")) != std::string::npos;) t.replace(p, 6, "int");
  const auto lb = t.find('[');
  if (lb != std::string::npos) t = t.substr(0, lb) + "[]";
  return t;
}

bool isDim(const std::string& n) { return has(n, "dim") || n == "axis"; }

// Counts and sizes: positive only (CPU ATen loops without end on some
// negative ones), as the schema sampler draws them.
bool isCount(const std::string& n) {
  return n.rfind("n_", 0) == 0 || n.rfind("num_", 0) == 0 || n == "n" || has(n, "bins") || has(n, "size") ||
         has(n, "steps") || has(n, "groups") || has(n, "length");
}

// Values of str arguments by name (ATen's documented choices).
std::vector<std::string> strValues(const std::string& n) {
  if (n == "reduce") return {"sum", "prod", "mean", "amax", "amin"};
  if (n == "rounding_mode") return {"trunc", "floor"};
  if (n == "padding") return {"valid", "same"};
  if (n == "side") return {"left", "right"};
  if (n == "approximate") return {"none", "tanh"};
  if (n == "interpolation") return {"linear", "lower", "higher", "midpoint", "nearest"};
  return {};
}

// The boundary values of one argument of type `t` (plain) named `n`.
std::vector<json> valuesOf(const SchemaArg& a, const std::string& t, const std::string& dtype) {
  const std::string& n = a.name;
  const bool floating = floatingDtype(dtype);
  if (t == "int") {
    if (isDim(n)) return {-1};
    if (n == "reduction") return {0, 1, 2};
    if (isCount(n)) return {};
    return {0, 1, -1};
  }
  if (t == "float") return {0.0, 1.0, -1.0, 1e4};
  if (t == "Scalar") {
    if (dtype == "bool") return {true, false};
    return floating ? std::vector<json>{0.0, 1.0, -1.0, 1e4} : std::vector<json>{0, 1, -1};
  }
  if (t == "bool") return {true, false};
  if (t == "str") {
    std::vector<json> out;
    for (const auto& v : strValues(n)) out.push_back(v);
    return out;
  }
  if (t == "int[]" && isDim(n) && a.hasDefault) return {json::array(), json::array({-1})};
  return {};
}

// An example of one call from `call`, named `name`.
ExampleGen oneCall(std::string name, const std::string& op, const std::string& dtype, rc::Gen<OpCall> call) {
  return {std::move(name), rc::gen::map(std::move(call), [op, dtype](OpCall c) {
            OpCase k;
            k.op = op;
            k.dtype = dtype;
            k.calls.push_back(std::move(c));
            return k;
          })};
}

// A sampler's call, with every dim argument of `op` at -1 (the "rows" and
// "empty" edges reduce or scan their last dim: the long rows, the empty one).
rc::Gen<OpCall> lastDim(rc::Gen<OpCall> call, const std::string& op) {
  const auto schema = atenOpSchema(op);
  if (!schema) return call;
  return rc::gen::map(std::move(call), [schema, op](OpCall c) {
    for (const auto& a : schema->args) {
      if (a.out || !isDim(a.name)) continue;
      const std::string t = plainType(a.type);
      if (t == "int") c = withArgument(std::move(c), op, a.name, -1);
      if (t == "int[]") c = withArgument(std::move(c), op, a.name, json::array({-1}));
    }
    return c;
  });
}

// The indices of `samples` that fit within the limits.
std::vector<size_t> fitting(const std::shared_ptr<const json>& samples, const gen::LayoutLimits& lim) {
  std::vector<size_t> fit;
  if (!samples || !samples->is_array()) return fit;
  for (size_t k = 0; k < samples->size(); ++k)
    if (fittingSamples(json::array({samples->at(k)}), lim.maxElements) == 1) fit.push_back(k);
  return fit;
}

// Each fitting OpInfo sample laid out as `force` says ("contiguous": as
// given; "noncontiguous": permuted, sliced or offset).
// Fitting OpInfo samples from the `from`-th up to (not including) the `to`-th.
void opinfoExamples(std::vector<ExampleGen>& out, const OpEntry& entry, const std::string& dtype,
                    const gen::LayoutLimits& lim, const std::shared_ptr<const json>& samples, const char* force,
                    size_t from = 0, size_t to = SIZE_MAX) {
  const auto fit = fitting(samples, lim);
  for (size_t i = from; i < fit.size() && i < to; ++i) {
    const size_t k = fit[i];
    gen::LayoutLimits l = lim;
    l.layoutForce = force;
    const Sampler s = opinfoSampleAt(samples, k);
    out.push_back(
        oneCall("OpInfo sample " + std::to_string(k) + (std::string(force) == "contiguous" ? "" : ", non-contiguous"),
                entry.name, dtype, s({dtype, l})));
  }
}

// Whether a boundary example is drawn as is only (false), or also with
// non-finite values in its first tensor (true): for a scale of 0 in a
// floating run (beta=0, alpha=0), since ATen ignores the input a scale of 0
// multiplies, non-finite values and all (addmm's documented contract),
// which a kernel computing 0 * x does not.
std::vector<bool> valueVariants(const Boundary& b, const std::string& dtype) {
  if (floatingDtype(dtype) && b.value.is_number() && b.value.get<double>() == 0.0) return {false, true};
  return {false};
}

// `call` with NaN, inf, -inf and -0 in its first tensor (the one a scale
// such as beta multiplies: addmm's self), where its values are free.
OpCall nonfiniteFirst(OpCall call) {
  if (call.tensors.empty()) return call;
  TensorLayout& t = call.tensors[0];
  if (!floatingDtype(t.dtype) || (t.values != "normal" && t.values != "grid")) return call;
  const char* kinds[] = {"nan", "inf", "-inf", "-0"};
  for (int64_t i = 0; i < 4 && t.offset + i < t.storage; ++i) t.specials.emplace_back(t.offset + i, kinds[i]);
  return call;
}

// Each argument of `entry` at its boundaries (valueLimits) in the calls of
// `sampler`, named `prefix` + "ARG=VALUE".
void boundaryExamples(std::vector<ExampleGen>& out, const OpEntry& entry, const std::string& dtype,
                      const gen::LayoutLimits& lim, const Sampler& sampler, const std::string& prefix) {
  for (const auto& b : boundaryValues(entry.name, dtype))
    for (const bool nonfinite : valueVariants(b, dtype)) {
      const std::string op = entry.name, arg = b.arg;
      const json value = b.value;
      out.push_back(oneCall(prefix + b.name + (nonfinite ? ", NaN, inf and -0 in the first tensor" : ""), entry.name,
                            dtype, rc::gen::map(sampler({dtype, lim}), [op, arg, value, nonfinite](OpCall c) {
                              c = withArgument(std::move(c), op, arg, value);
                              return nonfinite ? nonfiniteFirst(std::move(c)) : c;
                            })));
    }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> edgeKinds(const std::string& op, const std::string& dtype) {
  std::vector<std::pair<std::string, std::string>> out = {
      {"0-d", "0d"}, {"empty dim", "empty"}, {"size-1 dims", "ones"}, {"0-d others", "scalar-others"}};
  out.push_back({has(op, "backward") ? "0-d gradient" : "0-d first", "scalar-first"});
  out.push_back({"non-power-of-2 tail", "tail"});
  // Rows past one grid dimension: only where a dim is reduced or scanned
  // (a pairwise op over 65,537 rows, pdist, is billions of elements).
  bool reduces = false;
  if (const auto schema = atenOpSchema(op))
    for (const auto& a : schema->args) reduces |= !a.out && isDim(a.name);
  if (reduces) out.push_back({"65,537 rows", "rows"});
  if (floatingDtype(dtype)) out.push_back({"NaN, inf and -0", "nonfinite"});
  if (dtype == "int32" || dtype == "int64" || dtype == "float64") out.push_back({"values past float32", "wide"});
  return out;
}

std::vector<Boundary> boundaryValues(const std::string& op, const std::string& dtype) {
  std::vector<Boundary> out;
  const auto schema = atenOpSchema(op);
  if (!schema) return out;
  for (const auto& a : schema->args) {
    if (a.out || a.name == "pin_memory") continue;
    const std::string t = plainType(a.type);
    if (t == "Tensor" || t == "Tensor[]" || t == "Tensor?[]") continue;
    std::vector<json> values = valuesOf(a, t, dtype);
    const bool optional = !a.type.empty() && a.type.back() == '?';
    if (optional) values.insert(values.begin(), nullptr);
    if (a.defaultKnown) values.insert(values.begin(), a.defaultValue);
    std::vector<json> seen;
    for (const auto& v : values) {
      if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
      seen.push_back(v);
      out.push_back({a.name + "=" + (v.is_null() ? std::string("None") : v.dump()), a.name, v});
    }
  }
  return out;
}

bool schemaCompatible(const json& sample, const std::string& op) {
  const auto schema = atenOpSchema(op);
  if (!schema || !sample.is_object()) return true;
  // A number or bool where the schema takes a Tensor, or a tensor where it
  // takes an int, float, bool or list (max.dim given max.other's sample).
  const auto scalarFor = [](const SchemaArg& a, const json& v) {
    const std::string t = plainType(a.type);
    const bool tensor = v.is_object() && v.contains("tensor");
    if (t == "Tensor") return v.is_number() || v.is_boolean();
    return tensor && (t == "int" || t == "float" || t == "bool" || t == "int[]" || t == "float[]" || t == "bool[]");
  };
  const json args = sample.value("args", json::array()), kwargs = sample.value("kwargs", json::object());
  size_t position = 0;
  for (const auto& a : schema->args) {
    if (a.out) continue;
    if (!a.kwargOnly && position < args.size() && scalarFor(a, args[position])) return false;
    if (!a.kwargOnly) ++position;
    if (kwargs.is_object() && kwargs.contains(a.name) && scalarFor(a, kwargs.at(a.name))) return false;
  }
  return true;
}

json compatibleSamples(const json& samples, const std::string& op) {
  json out = json::array();
  if (!samples.is_array()) return out;
  for (const auto& s : samples)
    if (schemaCompatible(s, op)) out.push_back(s);
  return out;
}

OpCall withArgument(OpCall call, const std::string& op, const std::string& arg, const json& value) {
  const auto schema = atenOpSchema(op);
  if (!schema) return call;
  size_t position = 0;
  for (const auto& a : schema->args) {
    if (a.name == arg) {
      if (!a.kwargOnly && position < call.args.size())
        call.args[position] = value;
      else
        call.kwargs[arg] = value;
      return call;
    }
    if (!a.kwargOnly && !a.out) ++position;
  }
  return call;
}

std::vector<ExampleGen> explicitExamples(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                                         std::shared_ptr<const json> opinfo, int most) {
  std::vector<ExampleGen> out;
  if (most <= 0) return out;
  for (const auto& [name, edge] : edgeKinds(entry.name, dtype)) {
    gen::LayoutLimits l = lim;
    l.edge = edge;
    l.palette = 0;
    rc::Gen<OpCall> call = entry.sample({dtype, l});
    if (edge == "rows" || edge == "empty") call = lastDim(std::move(call), entry.name);
    out.push_back(oneCall(name, entry.name, dtype, std::move(call)));
  }
  gen::LayoutLimits free = lim;
  free.palette = 0;
  opinfoExamples(out, entry, dtype, free, opinfo, "contiguous", 0, kFirstSamples);
  boundaryExamples(out, entry, dtype, free, entry.sample, "");
  // The first fitting OpInfo sample with its own arguments at their
  // boundaries (a sample's beta also 0, its reduction every value).
  if (const auto fit = fitting(opinfo, free); !fit.empty())
    boundaryExamples(out, entry, dtype, free, opinfoSampleAt(opinfo, fit[0]),
                     "OpInfo sample " + std::to_string(fit[0]) + ", ");
  opinfoExamples(out, entry, dtype, free, opinfo, "contiguous", kFirstSamples);
  opinfoExamples(out, entry, dtype, free, opinfo, "noncontiguous");
  if (static_cast<int>(out.size()) > most) out.erase(out.begin() + most, out.end());
  return out;
}

}  // namespace flagprop
