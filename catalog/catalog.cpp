// The op catalog (see catalog.h). Tolerance figures are FlagGems' own (its
// tests/accuracy_utils.py: RESOLUTION per dtype as rtol, atol 1e-4), except
// for sums and scans, whose atol grows with the square root of the count.
#include "catalog/catalog.h"
#include "core/dtypes.h"

#include <algorithm>

#include "catalog/schema_ops.h"
#include "generators/choice.h"

#include <map>
#include <mutex>

namespace flagprop {

const std::vector<std::string> kFloating = {"float32", "float16", "bfloat16"};
const std::vector<std::string> kFloatingAndInt32 = {"float32", "float16", "bfloat16", "int32"};
const std::vector<std::string> kAllDtypes = [] {
  std::vector<std::string> out;
  for (const auto& d : dtypes()) out.push_back(d.name);
  return out;
}();
const std::vector<std::string> kSchemaDefaultDtypes = {"float32", "float16", "bfloat16", "int32", "int64", "bool"};

namespace tol {
json pointwise() { return {{"rule", "pointwise"}}; }
json exact() { return {{"rule", "exact"}}; }
json reduction(int dimsArg) { return {{"rule", "reduction"}, {"dims_arg", dimsArg}}; }
json scan(int dimArg) { return {{"rule", "scan"}, {"dim_arg", dimArg}}; }
json normalization() { return {{"rule", "normalization"}}; }
}  // namespace tol

namespace out {
json values() { return {{"kind", "values"}}; }
json indices(int input, int dimArg, int keepdimArg) {
  json j = {{"kind", "indices"}, {"input", input}, {"dim_arg", dimArg}};
  if (keepdimArg >= 0) j["keepdim_arg"] = keepdimArg;
  return j;
}
json indices(int input, const json& dimArg, const json& keepdimArg) {
  json j = {{"kind", "indices"}, {"input", input}, {"dim_arg", dimArg}};
  if (!keepdimArg.is_null()) j["keepdim_arg"] = keepdimArg;
  return j;
}
json exactIf(json rule, const json& arg) {
  rule["exact_if"] = arg;
  return rule;
}
json unorderedIf(json rule, const json& arg, const json& dimArg) {
  rule["unordered_if_not"] = arg;
  rule["dim_arg"] = dimArg;
  return rule;
}

json namedArgs(json rules, const std::string& op) {
  const auto schema = atenOpSchema(op);
  if (!schema || !rules.is_array()) return rules;
  std::vector<const SchemaArg*> positional;
  for (const auto& a : schema->args)
    if (!a.kwargOnly && !a.out) positional.push_back(&a);
  for (auto& rule : rules) {
    if (!rule.is_object()) continue;
    for (const char* key : {"dim_arg", "keepdim_arg", "unordered_if_not", "exact_if"}) {
      if (!rule.contains(key) || !rule.at(key).is_number_integer()) continue;
      const auto at = rule.at(key).get<size_t>();
      if (at >= positional.size()) continue;
      rule[std::string(key) + "_name"] = positional[at]->name;
      if (positional[at]->defaultKnown) rule[std::string(key) + "_default"] = positional[at]->defaultValue;
    }
  }
  return rules;
}

json freeOutputs(const std::string& name) {
  // Argument positions and keyword names as the overload's schema has them
  // (LibTorch 1.13 and 2.x agree on these); see docs/aten-freedom.md.
  static const std::map<std::string, json> table = [] {
    const json byValue = indices(0, json(1), json(2));  // (self, dim, keepdim): any index among ties
    std::map<std::string, json> t;
    for (const char* n :
         {"max.dim", "min.dim", "median.dim", "median.dim_values", "nanmedian.dim", "nanmedian.dim_values", "mode"})
      t[n] = json::array({values(), byValue});
    t["kthvalue"] = json::array({values(), indices(0, json(2), json(3))});  // (self, k, dim, keepdim)
    t["sort"] = json::array({values(), indices(0, json(1))});               // (self, dim, descending)
    t["argsort"] = json::array({indices(0, json(1))});                      // (self, dim, descending)
    // (self, *, stable, dim, descending): stable=True documents the order among ties.
    t["sort.stable"] = json::array({values(), exactIf(indices(0, json("dim")), "stable")});
    t["argsort.stable"] = json::array({exactIf(indices(0, json("dim")), "stable")});
    // (self, k, dim, largest, sorted): sorted=False leaves the order of the k free.
    t["topk"] = json::array({unorderedIf(values(), 4, 2), unorderedIf(indices(0, json(2)), 4, 2)});
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? json::array() : it->second;
}
}  // namespace out

void to_json(json& j, const Judging& g) {
  j = {{"upcast", g.upcast}, {"tolerance", g.tolerance}, {"outputs", g.outputs}};
  if (!g.mode.empty()) j["mode"] = g.mode;
  if (!g.reference.empty()) j["reference"] = g.reference;
  if (g.integerOnly) j["integer_only"] = true;
  if (!g.schema.empty()) j["schema"] = g.schema;
}

void from_json(const json& j, Judging& g) {
  g = Judging{};
  g.upcast = j.value("upcast", g.upcast);
  g.tolerance = j.value("tolerance", g.tolerance);
  g.outputs = j.value("outputs", g.outputs);
  g.mode = j.value("mode", g.mode);
  g.reference = j.value("reference", g.reference);
  g.integerOnly = j.value("integer_only", g.integerOnly);
  g.schema = j.value("schema", g.schema);
}

Op::Op(std::string name, std::vector<std::string> dtypes, Sampler sample) {
  entry_.name = std::move(name);
  entry_.dtypes = std::move(dtypes);
  entry_.sample = std::move(sample);
}

Op& Op::tolerance(json rule) {
  entry_.judging.tolerance = std::move(rule);
  return *this;
}

Op& Op::exact() {
  entry_.judging.tolerance = tol::exact();
  entry_.judging.upcast = false;
  return *this;
}

Op& Op::outputs(json kinds) {
  entry_.judging.outputs = out::namedArgs(std::move(kinds), entry_.name);
  return *this;
}

namespace {

using namespace samplers;

// Scalar arguments by family (floating runs / integer runs).
const ScalarSet kCompareScalars{{0.5, 0, 1, -1.5, 2.0, -0.0}, {0, 1, -3, 2.0, 0.5}};
const ScalarSet kFillValues{{0.0, 1.5, -2, -0.0, 1e-3}, {0, 7, -3}};
const ScalarSet kAlphas{{1, 2, -1, 0.5, 1.0}, {1, 2, -3}};
const ScalarSet kExponents{{2, 2.0, 3, 0.5, -1, 1, 0, 2.5, -2.0}, {2, 3, 1, 0, 2.0, 0.5}};
const ScalarSet kBounds{{-0.5, 0.5, 0, 2.0, -1.5, 1}, {-3, 0, 2, 5}};

std::vector<OpEntry> buildCatalog() {
  return {
      // Normalization: the published seed case's op.
      Op("native_layer_norm", kFloating, layerNorm()).tolerance(tol::normalization()),
      // Selection: exact.
      Op("where.self", kFloatingAndInt32, where()).exact(),
      Op("eq.Scalar", kFloatingAndInt32, tensorScalar(kCompareScalars)).exact(),
      Op("masked_fill.Scalar", kFloatingAndInt32, maskedFill(kFillValues)).exact(),
      Op("gather", kFloatingAndInt32, gather()).exact(),
      Op("index_select", kFloatingAndInt32, indexSelect()).exact(),
      Op("searchsorted.Tensor", kFloatingAndInt32, searchsorted()).exact(),
      // Binary, broadcasting.
      Op("add.Tensor", kFloatingAndInt32, binary({}, &kAlphas)),
      Op("sub.Tensor", kFloatingAndInt32, binary({}, &kAlphas)),
      Op("mul.Tensor", kFloatingAndInt32, binary()),
      Op("div.Tensor", kFloatingAndInt32, binary()),
      // Tensor and scalars.
      Op("pow.Tensor_Scalar", kFloatingAndInt32, tensorScalar(kExponents)),
      Op("clamp", kFloatingAndInt32, tensorTwoOptionalScalars(kBounds)),
      // Unary.
      Op("tanh", kFloating, unary()),
      Op("rsqrt", kFloating, unary()),
      Op("silu", kFloating, unary()),
      Op("exp", kFloating, unary()),
      Op("log", kFloating, unary()),
      Op("relu", kFloatingAndInt32, unary()),
      Op("gelu", kFloating, withKwarg(unary(), "approximate", gen::element<json>("none", "tanh"))),
      // Reductions and scans.
      Op("sum.dim_IntList", kFloatingAndInt32, dimListReduction()).tolerance(tol::reduction(1)),
      Op("mean.dim", kFloating, dimListReduction()).tolerance(tol::reduction(1)),
      Op("cumsum", kFloatingAndInt32, alongDim()).tolerance(tol::scan(1)),
      Op("_log_softmax", kFloating, alongDim({args::fixed(false)})),
      // argmin: the first of equal values, as ATen documents (exact); the
      // others: indices among ties judged by the values they select.
      Op("argmin", kFloatingAndInt32, alongDim({args::boolean()}, /*optionalDim=*/true)).exact(),
      Op("max.dim", kFloatingAndInt32, alongDim({args::boolean()}))
          .exact()
          .outputs({out::values(), out::indices(0, 1, 2)}),
      Op("sort", kFloatingAndInt32, alongDim({args::boolean()})).exact().outputs({out::values(), out::indices(0, 1)}),
  };
}

}  // namespace

const std::vector<OpEntry>& catalog() {
  static const std::vector<OpEntry> cat = buildCatalog();
  return cat;
}

namespace {

// Schema-derived entries made so far (nullptr: excluded or unknown), and why.
struct Derived {
  std::unique_ptr<OpEntry> entry;
  std::string why;
};

// Thread-safe: the supervisor's shard threads judge crashed cases with it.
// (A std::map's elements stay where they are as others are added.)
const Derived& derived(const std::string& name) {
  static std::mutex lock;
  static std::map<std::string, Derived> made;
  const std::lock_guard<std::mutex> held(lock);
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  Derived d;
  const auto schema = atenOpSchema(name);
  if (!schema) {
    d.why = "no ATen overload " + name + " in this LibTorch (" + libtorchVersion() + ")";
  } else {
    const OpClass k = classifyOp(*schema);
    if (k.kind == "excluded")
      d.why = k.reason;
    else
      d.entry = std::make_unique<OpEntry>(schemaEntry(*schema));
  }
  return made.emplace(name, std::move(d)).first->second;
}

}  // namespace

const OpEntry* findOp(const std::string& name) {
  for (const auto& e : catalog())
    if (e.name == name) return &e;
  return derived(name).entry.get();
}

namespace {
bool holds(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}
}  // namespace

const OpEntry* opIn(const std::string& name, const std::string& dtype, bool schemaFallback) {
  const OpEntry* e = findOp(name);
  if (e && holds(e->dtypes, dtype)) return e;
  if (!schemaFallback) return nullptr;
  const OpEntry* s = derived(name).entry.get();
  return s && holds(s->dtypes, dtype) ? s : nullptr;
}

std::vector<std::string> defaultDtypesOf(const std::string& name) {
  std::vector<std::string> out;
  for (const OpEntry* e : {findOp(name), static_cast<const OpEntry*>(derived(name).entry.get())}) {
    if (!e) continue;
    for (const auto& d : e->defaultDtypes.empty() ? e->dtypes : e->defaultDtypes)
      if (!holds(out, d)) out.push_back(d);
  }
  return out;
}

std::string whyNotIn(const std::string& name, const std::string& dtype, bool schemaFallback) {
  if (opIn(name, dtype, schemaFallback)) return "";
  const OpEntry* e = findOp(name);
  if (!e) return whyExcluded(name);
  const OpEntry* s = schemaFallback ? derived(name).entry.get() : nullptr;
  std::string why = "flagprop runs " + name + " in " + joined(e->dtypes) + ", not " + dtype;
  if (s && s != e)
    why += " (nor does the entry derived from its schema: " + joined(s->dtypes) + ")";
  else if (!schemaFallback && e != derived(name).entry.get())
    why += " (an op file's ops are run in the hand-written entry's dtypes only)";
  return why;
}

std::string whyExcluded(const std::string& name) {
  for (const auto& e : catalog())
    if (e.name == name) return "";
  return derived(name).why;
}

std::string catalogNames() {
  std::string out;
  for (const auto& e : catalog()) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

std::vector<rc::Random> paletteRandoms(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim) {
  std::vector<rc::Random> out;
  uint64_t seed = lim.paletteSeed ^ 0x9E3779B97F4A7C15ull;
  for (char ch : entry.name + "/" + dtype) seed = (seed ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;  // FNV-1a
  rc::Random random(seed);
  for (int i = 0; i < lim.palette; ++i) out.push_back(random.split());
  return out;
}

std::vector<OpCall> buildPalette(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim) {
  std::vector<OpCall> out;
  const auto g = entry.sample({dtype, lim});
  for (const auto& r : paletteRandoms(entry, dtype, lim)) out.push_back(g(r, rc::kNominalSize).value());
  return out;
}

rc::Gen<OpCase> opCases(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                        std::shared_ptr<const std::vector<rc::Random>> palette) {
  rc::Gen<OpCall> call = entry.sample({dtype, lim});
  if (palette && !palette->empty()) {
    // A palette call is the sampler replayed from the palette's Random: the
    // same call every time, and once failing it shrinks as a free call does
    // (shape, rank, strides, offset, values, specials).
    auto fromPalette = rc::gen::exec([palette, call]() {
      const rc::Random r = (*palette)[*gen::atNominalSize(rc::gen::inRange<size_t>(0, palette->size()))];
      OpCall c = *rc::Gen<OpCall>([call, r](const rc::Random&, int) { return call(r, rc::kNominalSize); });
      for (auto& t : c.tensors) t.seed = *gen::atNominalSize(rc::gen::inRange<uint64_t>(0, 1u << 20));
      return c;
    });
    call = rc::gen::weightedOneOf<OpCall>({{15, fromPalette}, {1, call}});
  }
  const std::string op = entry.name;
  return rc::gen::exec([op, dtype, call]() {
    OpCase c;
    c.op = op;
    c.dtype = dtype;
    // Up to three calls, each kept by a flag that shrinks toward "dropped",
    // so that shrinking can remove any call, not only the last ones.
    const int n = *gen::weighted<int>({{3, 1}, {2, 2}, {1, 3}});
    for (int i = 0; i < n; ++i) {
      OpCall k = *call;
      if (i + 1 == n || *gen::weighted<bool>({{1, false}, {6, true}})) c.calls.push_back(std::move(k));
    }
    return c;
  });
}

}  // namespace flagprop
