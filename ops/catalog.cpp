// The op catalog (see catalog.h). Tolerance figures are FlagGems' own (its
// tests/accuracy_utils.py: RESOLUTION per dtype as rtol, atol 1e-4), except
// for sums, whose atol grows with the square root of the reduced count.
#include "ops/catalog.h"

#include "generators/choice.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace flagprop {

namespace {

using Tensors = std::vector<at::Tensor>;

json ref(int i) { return {{"tensor", i}}; }


// The Scalar an argument holds, keeping Python's int / float / bool apart.
at::Scalar scalarOf(const json& v) {
  if (v.is_boolean()) return at::Scalar(v.get<bool>());
  if (v.is_number_integer()) return at::Scalar(v.get<int64_t>());
  return at::Scalar(v.get<double>());
}

std::vector<int64_t> intList(const json& v) { return v.get<std::vector<int64_t>>(); }

c10::optional<at::Tensor> optTensor(const json& v, const Tensors& in) {
  if (v.is_null()) return c10::nullopt;
  return in.at(v.at("tensor").get<size_t>());
}

Tolerance pointwise(const std::string& dtype, const std::string& outDtype, size_t, const OpCall&) {
  if (!floatingDtype(outDtype)) return {0.0, 0.0};
  return {resolution(floatingDtype(dtype) ? dtype : outDtype), 1e-4};
}

Tolerance exact(const std::string&, const std::string&, size_t, const OpCall&) { return {0.0, 0.0}; }

// Elements reduced into one output element by a dim-list reduction.
int64_t reducedCount(const OpCall& c) {
  const auto& shape = c.tensors.at(0).shape;
  const auto dims = intList(c.args.at(1));
  int64_t n = 1;
  for (auto d : dims) {
    if (shape.empty()) continue;
    const int64_t r = static_cast<int64_t>(shape.size());
    n *= shape.at(static_cast<size_t>((d % r + r) % r));
  }
  return std::max<int64_t>(n, 1);
}

// A non-empty list of distinct dims of a rank-r tensor, each written as
// d or d - r at random (ATen accepts both).
rc::Gen<json> dimList(int r) {
  return rc::gen::exec([r]() {
    if (r == 0) return json::array({*gen::element<int64_t>(0, -1)});
    std::vector<int> pick = *rc::gen::container<std::vector<int>>(r, gen::weighted<int>({{1, 0}, {1, 1}}));
    json out = json::array();
    for (int d = 0; d < r; ++d)
      if (pick[d]) out.push_back(*gen::weighted<bool>({{3, false}, {1, true}}) ? d - r : d);
    if (out.empty()) out.push_back(r - 1);
    return out;
  });
}

// A unary float op: one input of any layout.
rc::Gen<OpCall> unarySample(const std::string& dtype, const gen::LayoutLimits& lim) {
  return rc::gen::exec([dtype, lim]() {
    OpCall c;
    const auto s = *gen::shape(0, 5, lim);
    c.tensors.push_back(*gen::layout(s, dtype, lim));
    c.args = json::array({ref(0)});
    return c;
  });
}

OpEntry unaryEntry(const std::string& name, const std::string& schema, at::Tensor (*fn)(const at::Tensor&)) {
  OpEntry e;
  e.name = name;
  e.schema = schema;
  e.dtypes = {"float32", "float16", "bfloat16"};
  e.sample = unarySample;
  e.reference = [fn](const Tensors& in, const OpCall&) { return Tensors{fn(in.at(0))}; };
  e.tolerance = pointwise;
  return e;
}

std::vector<OpEntry> buildCatalog() {
  std::vector<OpEntry> cat;

  {
    OpEntry e;
    e.name = "native_layer_norm";
    e.schema = "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)";
    e.dtypes = {"float32", "float16", "bfloat16"};
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      // Only well-conditioned rows: no special values (a row holding inf or
      // nan gives results that depend on how the kernel writes the formula,
      // inf - inf, in ATen too), N(0, 1) inputs, not expanded, and at least
      // 8 normalized elements: a (nearly) constant row has variance ~0, and
      // rstd ~ eps^-1/2 then amplifies every rounding of the mean past any
      // tolerance (two bfloat16 draws are often equal), and no
      // zero-size dims (ATen 1.13's CPU and meta kernels disagree on the
      // statistics' shape there).
      gen::LayoutLimits finite = lim;
      finite.specials = false;
      auto general = rc::gen::exec([dtype, finite]() {
        const auto& lim = finite;
        OpCall c;
        auto s = *gen::shape(1, 4, lim);
        const int k = *gen::uniform(rc::gen::inRange<int>(1, std::min<int>(2, static_cast<int>(s.size())) + 1));
        for (auto& d : s) d = std::max<int64_t>(d, 1);
        if (numelOf(std::vector<int64_t>(s.end() - k, s.end())) < 8) s.back() = 8;
        c.tensors.push_back(*gen::layout(s, dtype, lim, /*allowExpand=*/false));  // an expanded row is constant
        c.tensors.back().values = "normal";
        const std::vector<int64_t> norm(s.end() - k, s.end());
        json w = nullptr, b = nullptr;
        if (*gen::weighted<bool>({{2, true}, {1, false}})) {
          c.tensors.push_back(*gen::layout(norm, dtype, lim));
          w = ref(static_cast<int>(c.tensors.size()) - 1);
        }
        if (*gen::weighted<bool>({{2, true}, {1, false}})) {
          c.tensors.push_back(*gen::layout(norm, dtype, lim));
          b = ref(static_cast<int>(c.tensors.size()) - 1);
        }
        c.args = json::array({ref(0), norm, w, b, *gen::element<double>(1e-5, 1e-6, 1e-3)});
        return c;
      });
      if (dtype != "float32") return general;
      return rc::gen::weightedOneOf<OpCall>({{19, general}, {1, rc::gen::just(layerNormSeedCall())}});
    };
    e.reference = [](const Tensors& in, const OpCall& c) {
      const auto& a = c.args;
      auto [y, mean, rstd] = at::native_layer_norm(in.at(0), intList(a.at(1)), optTensor(a.at(2), in),
                                                   optTensor(a.at(3), in), a.at(4).get<double>());
      return Tensors{y, mean, rstd};
    };
    e.tolerance = [](const std::string& dtype, const std::string&, size_t, const OpCall&) {
      return Tolerance{std::max(resolution(dtype), 1e-5), 1e-4};
    };
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "where.self";
    e.schema = "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.upcast = false;
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        const auto s = *gen::shape(0, 5, lim);
        c.tensors.push_back(*gen::layout(*gen::broadcastableTo(s), "bool", lim));
        c.tensors.push_back(*gen::layout(*gen::broadcastableTo(s), dtype, lim));
        c.tensors.push_back(*gen::layout(*gen::broadcastableTo(s), dtype, lim));
        c.args = json::array({ref(0), ref(1), ref(2)});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall&) { return Tensors{at::where(in.at(0), in.at(1), in.at(2))}; };
    e.tolerance = exact;
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "eq.Scalar";
    e.schema = "eq.Scalar(Tensor self, Scalar other) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.upcast = false;
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        c.tensors.push_back(*gen::layout(*gen::shape(0, 5, lim), dtype, lim));
        json other = floatingDtype(dtype) ? *gen::element<json>(json(0.5), json(0), json(1), json(-1.5), json(2.0), json(-0.0))
                                    : *gen::element<json>(json(0), json(1), json(-3), json(2.0), json(0.5));
        c.args = json::array({ref(0), other});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) { return Tensors{at::eq(in.at(0), scalarOf(c.args.at(1)))}; };
    e.tolerance = exact;
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "masked_fill.Scalar";
    e.schema = "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.upcast = false;
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        const auto s = *gen::shape(0, 5, lim);
        c.tensors.push_back(*gen::layout(s, dtype, lim));
        c.tensors.push_back(*gen::layout(*gen::broadcastableTo(s), "bool", lim));
        json value = floatingDtype(dtype) ? *gen::element<json>(json(0.0), json(1.5), json(-2), json(-0.0), json(1e-3))
                                    : *gen::element<json>(json(0), json(7), json(-3));
        c.args = json::array({ref(0), ref(1), value});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) {
      return Tensors{at::masked_fill(in.at(0), in.at(1), scalarOf(c.args.at(2)))};
    };
    e.tolerance = exact;
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "add.Tensor";
    e.schema = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        const auto s = *gen::shape(0, 5, lim);
        const auto o = *gen::broadcastableTo(s);
        const bool swap = *gen::weighted<bool>({{3, false}, {1, true}});
        c.tensors.push_back(*gen::layout(swap ? o : s, dtype, lim));
        c.tensors.push_back(*gen::layout(swap ? s : o, dtype, lim));
        c.args = json::array({ref(0), ref(1)});
        const json alpha = floatingDtype(dtype) ? *gen::element<json>(json(1), json(2), json(-1), json(0.5), json(1.0))
                                          : *gen::element<json>(json(1), json(2), json(-3));
        c.kwargs = {{"alpha", alpha}};
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) {
      return Tensors{at::add(in.at(0), in.at(1), scalarOf(c.kwargs.value("alpha", json(1))))};
    };
    e.tolerance = pointwise;
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "sum.dim_IntList";
    e.schema = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        const auto s = *gen::shape(1, 5, lim);
        c.tensors.push_back(*gen::layout(s, dtype, lim));
        c.args = json::array({ref(0), *dimList(static_cast<int>(s.size())), *gen::element<bool>(false, true)});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) {
      return Tensors{at::sum(in.at(0), intList(c.args.at(1)), c.args.at(2).get<bool>())};
    };
    e.tolerance = [](const std::string& dtype, const std::string& outDtype, size_t, const OpCall& c) {
      if (!floatingDtype(outDtype)) return Tolerance{0.0, 0.0};
      // Rounding errors of a float32 accumulation grow like sqrt(n) for N(0, 1)
      // inputs; a bound linear in n (FlagGems' own test bound) would hide a
      // dropped element of a large reduction.
      return Tolerance{resolution(dtype), 1e-4 * std::sqrt(static_cast<double>(reducedCount(c)))};
    };
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "mean.dim";
    e.schema = "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16"};
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        const auto s = *gen::shape(1, 5, lim);
        c.tensors.push_back(*gen::layout(s, dtype, lim));
        c.args = json::array({ref(0), *dimList(static_cast<int>(s.size())), *gen::element<bool>(false, true)});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) {
      return Tensors{at::mean(in.at(0), intList(c.args.at(1)), c.args.at(2).get<bool>())};
    };
    e.tolerance = pointwise;
    cat.push_back(e);
  }

  {
    OpEntry e;
    e.name = "pow.Tensor_Scalar";
    e.schema = "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor";
    e.dtypes = {"float32", "float16", "bfloat16", "int32"};
    e.sample = [](const std::string& dtype, const gen::LayoutLimits& lim) {
      return rc::gen::exec([dtype, lim]() {
        OpCall c;
        c.tensors.push_back(*gen::layout(*gen::shape(0, 5, lim), dtype, lim));
        const json exponent = floatingDtype(dtype)
                                  ? *gen::element<json>(json(2), json(2.0), json(3), json(0.5), json(-1), json(1),
                                                        json(0), json(2.5), json(-2.0))
                                  : *gen::element<json>(json(2), json(3), json(1), json(0), json(2.0), json(0.5));
        c.args = json::array({ref(0), exponent});
        return c;
      });
    };
    e.reference = [](const Tensors& in, const OpCall& c) { return Tensors{at::pow(in.at(0), scalarOf(c.args.at(1)))}; };
    e.tolerance = pointwise;
    cat.push_back(e);
  }

  cat.push_back(unaryEntry("tanh", "tanh(Tensor self) -> Tensor", [](const at::Tensor& t) { return at::tanh(t); }));
  cat.push_back(unaryEntry("rsqrt", "rsqrt(Tensor self) -> Tensor", [](const at::Tensor& t) { return at::rsqrt(t); }));
  cat.push_back(unaryEntry("silu", "silu(Tensor self) -> Tensor", [](const at::Tensor& t) { return at::silu(t); }));
  return cat;
}

}  // namespace

double resolution(const std::string& dtype) {
  if (dtype == "float16") return 1e-3;
  if (dtype == "float32") return 1.3e-6;
  if (dtype == "bfloat16") return 0.016;
  if (dtype == "float64") return 1e-7;
  return 0.0;
}

const std::vector<OpEntry>& catalog() {
  static const std::vector<OpEntry> cat = buildCatalog();
  return cat;
}

bool knownDtype(const std::string& d) { return d == "float32" || d == "float16" || d == "bfloat16" || d == "int32"; }

std::string checkRunKey(const std::string& key) {
  const auto a1 = key.find('/');
  const std::string head = key.substr(0, a1);
  if (head != "P1" && head != "P2" && head != "P3" && head != "P4" && head != "P5" && head != "P6")
    return "names no property (P1 .. P6, or P5/OP, P5/OP/DTYPE)";
  if (a1 == std::string::npos) return "";
  if (head != "P5" && head != "P6") return "only P5 and P6 take /OP or /OP/DTYPE";
  const auto a2 = key.find('/', a1 + 1);
  const std::string op = key.substr(a1 + 1, a2 == std::string::npos ? std::string::npos : a2 - a1 - 1);
  if (!findOp(op)) return "no catalog op '" + op + "'";
  if (a2 != std::string::npos && !knownDtype(key.substr(a2 + 1)))
    return "no dtype '" + key.substr(a2 + 1) + "' (float32, float16, bfloat16, int32)";
  return "";
}

const OpEntry* findOp(const std::string& name) {
  for (const auto& e : catalog())
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<OpCall> buildPalette(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim) {
  std::vector<OpCall> out;
  uint64_t seed = lim.paletteSeed ^ 0x9E3779B97F4A7C15ull;
  for (char ch : entry.name + "/" + dtype) seed = (seed ^ static_cast<unsigned char>(ch)) * 0x100000001B3ull;  // FNV-1a
  rc::Random random(seed);
  const auto g = entry.sample(dtype, lim);
  for (int i = 0; i < lim.palette; ++i) out.push_back(g(random.split(), rc::kNominalSize).value());
  return out;
}

rc::Gen<OpCase> opCase(const OpEntry& entry, const std::string& dtype, const gen::LayoutLimits& lim,
                       std::shared_ptr<const std::vector<OpCall>> palette) {
  const OpEntry* e = &entry;
  rc::Gen<OpCall> call = e->sample(dtype, lim);
  if (palette && !palette->empty()) {
    auto fromPalette = rc::gen::exec([palette]() {
      OpCall c = (*palette)[*gen::uniform(rc::gen::inRange<size_t>(0, palette->size()))];
      for (auto& t : c.tensors) t.seed = *gen::uniform(rc::gen::inRange<uint64_t>(0, 1u << 20));
      return c;
    });
    call = rc::gen::weightedOneOf<OpCall>({{15, fromPalette}, {1, call}});
  }
  return rc::gen::exec([e, dtype, call]() {
    OpCase c;
    c.op = e->name;
    c.dtype = dtype;
    // Up to three calls, each kept by a flag that shrinks toward "dropped",
    // so that shrinking can remove any call, not only the last ones.
    const int n = *gen::weighted<int>({{3, 1}, {2, 2}, {1, 3}});
    std::vector<OpCall> calls;
    for (int i = 0; i < n; ++i) {
      OpCall k = *call;
      if (i + 1 == n || *gen::weighted<bool>({{1, false}, {6, true}})) calls.push_back(std::move(k));
    }
    c.calls = std::move(calls);
    return c;
  });
}

OpCall layerNormSeedCall() {
  OpCall c;
  TensorLayout x;
  x.dtype = "float32";
  x.shape = {101, 3, 320};
  x.strides = {320, 32320, 1};
  x.storage = 3 * 32320;
  x.how = "permuted";
  x.seed = 1;
  TensorLayout w;
  w.dtype = "float32";
  w.shape = {320};
  w.strides = {1};
  w.storage = 320;
  w.seed = 2;
  TensorLayout b = w;
  b.seed = 3;
  c.tensors = {x, w, b};
  c.args = json::array({ref(0), json::array({320}), ref(1), ref(2), 1e-5});
  return c;
}

}  // namespace flagprop
