#include "catalog/samplers.h"

#include "generators/choice.h"

#include <algorithm>

namespace flagprop {

json placeholder(int i) { return {{"tensor", i}}; }

namespace args {
rc::Gen<json> boolean() { return gen::element<json>(json(false), json(true)); }
rc::Gen<json> fixed(json value) { return rc::gen::just(std::move(value)); }
}  // namespace args

namespace {

rc::Gen<json> scalarFor(const ScalarSet& s, const std::string& dtype) {
  const auto& pool = floatingDtype(dtype) ? s.floating : s.integral;
  return gen::atNominalSize(rc::gen::elementOf(pool));
}

// Adds a tensor to `c` and returns its placeholder.
json add(OpCall& c, TensorLayout t) {
  c.tensors.push_back(std::move(t));
  return placeholder(static_cast<int>(c.tensors.size()) - 1);
}

// A valid dim of a rank-r tensor, written d or d - r at random (ATen takes both).
rc::Gen<int64_t> dimOf(int r) {
  if (r == 0) return gen::element<int64_t>(0, -1);
  return rc::gen::exec([r]() {
    const int d = *gen::atNominalSize(rc::gen::inRange(0, r));
    return static_cast<int64_t>(*gen::weighted<bool>({{3, false}, {1, true}}) ? d - r : d);
  });
}

// A non-empty list of distinct dims of a rank-r tensor, either sign.
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

}  // namespace

namespace args {
rc::Gen<int64_t> dim(int rank) { return dimOf(rank); }
rc::Gen<json> dims(int rank) { return dimList(rank); }
}  // namespace args

namespace {

int64_t norm(int64_t d, size_t r) { return r == 0 ? 0 : (d % int64_t(r) + int64_t(r)) % int64_t(r); }

}  // namespace

namespace samplers {

Sampler unary(ValueSpec values) {
  return [values](const SampleContext& ctx) {
    return rc::gen::exec([ctx, values]() {
      OpCall c;
      c.args = json::array({add(c, *gen::layout(*gen::shape(0, 5, ctx.lim), ctx.dtype, ctx.lim, values))});
      return c;
    });
  };
}

Sampler tensorScalar(ScalarSet scalars) {
  return [scalars](const SampleContext& ctx) {
    return rc::gen::exec([ctx, scalars]() {
      OpCall c;
      const json self = add(c, *gen::layout(*gen::shape(0, 5, ctx.lim), ctx.dtype, ctx.lim));
      c.args = json::array({self, *scalarFor(scalars, ctx.dtype)});
      return c;
    });
  };
}

Sampler tensorTwoOptionalScalars(ScalarSet scalars) {
  return [scalars](const SampleContext& ctx) {
    return rc::gen::exec([ctx, scalars]() {
      OpCall c;
      const json self = add(c, *gen::layout(*gen::shape(0, 5, ctx.lim), ctx.dtype, ctx.lim));
      const int which = *gen::element(0, 1, 2);  // both, first only, second only
      const json lo = which == 2 ? json(nullptr) : *scalarFor(scalars, ctx.dtype);
      const json hi = which == 1 ? json(nullptr) : *scalarFor(scalars, ctx.dtype);
      c.args = json::array({self, lo, hi});
      return c;
    });
  };
}

Sampler binary(ValueSpec other, const ScalarSet* alphas) {
  const bool withAlpha = alphas != nullptr;
  const ScalarSet a = alphas ? *alphas : ScalarSet{};
  return [other, withAlpha, a](const SampleContext& ctx) {
    return rc::gen::exec([ctx, other, withAlpha, a]() {
      OpCall c;
      const auto s = *gen::shape(0, 5, ctx.lim);
      const auto o = *gen::broadcastableTo(s, ctx.lim);
      const bool swap = *gen::weighted<bool>({{3, false}, {1, true}});
      const json x = add(c, *gen::layout(swap ? o : s, ctx.dtype, ctx.lim));
      const json y = add(c, *gen::layout(swap ? s : o, ctx.dtype, ctx.lim, other));
      c.args = json::array({x, y});
      if (withAlpha) c.kwargs = {{"alpha", *scalarFor(a, ctx.dtype)}};
      return c;
    });
  };
}

Sampler where() {
  return [](const SampleContext& ctx) {
    return rc::gen::exec([ctx]() {
      OpCall c;
      const auto s = *gen::shape(0, 5, ctx.lim);
      const json cond = add(c, *gen::layout(*gen::broadcastableTo(s, ctx.lim), "bool", ctx.lim));
      const json x = add(c, *gen::layout(*gen::broadcastableTo(s, ctx.lim), ctx.dtype, ctx.lim));
      const json y = add(c, *gen::layout(*gen::broadcastableTo(s, ctx.lim), ctx.dtype, ctx.lim));
      c.args = json::array({cond, x, y});
      return c;
    });
  };
}

Sampler maskedFill(ScalarSet scalars) {
  return [scalars](const SampleContext& ctx) {
    return rc::gen::exec([ctx, scalars]() {
      OpCall c;
      const auto s = *gen::shape(0, 5, ctx.lim);
      const json self = add(c, *gen::layout(s, ctx.dtype, ctx.lim));
      const json mask = add(c, *gen::layout(*gen::broadcastableTo(s, ctx.lim), "bool", ctx.lim));
      c.args = json::array({self, mask, *scalarFor(scalars, ctx.dtype)});
      return c;
    });
  };
}

Sampler dimListReduction() {
  return [](const SampleContext& ctx) {
    return rc::gen::exec([ctx]() {
      OpCall c;
      const auto s = *gen::shape(1, 5, ctx.lim);
      const json self = add(c, *gen::layout(s, ctx.dtype, ctx.lim));
      c.args = json::array({self, *dimList(static_cast<int>(s.size())), *args::boolean()});
      return c;
    });
  };
}

Sampler alongDim(std::vector<rc::Gen<json>> trailing, bool optionalDim, int minRank, ValueSpec values) {
  return [trailing, optionalDim, minRank, values](const SampleContext& ctx) {
    return rc::gen::exec([ctx, trailing, optionalDim, minRank, values]() {
      OpCall c;
      const auto s = *gen::shape(minRank, 5, ctx.lim);
      const json self = add(c, *gen::layout(s, ctx.dtype, ctx.lim, values));
      json dim = *dimOf(static_cast<int>(s.size()));
      if (optionalDim && *gen::weighted<bool>({{3, false}, {1, true}})) dim = nullptr;
      c.args = json::array({self, dim});
      for (const auto& g : trailing) c.args.push_back(*g);
      return c;
    });
  };
}

Sampler layerNorm() {
  return [](const SampleContext& ctx) {
    // Only well-conditioned rows: no special values (a row holding inf or
    // nan gives results that depend on how the kernel writes the formula,
    // inf - inf, in ATen too), N(0, 1) inputs, not expanded, and at least 8
    // normalized elements: a (nearly) constant row has variance ~0, and rstd
    // ~ eps^-1/2 then amplifies every rounding of the mean past any tolerance
    // (two bfloat16 draws are often equal); and no zero-size dims (ATen
    // 1.13's CPU and meta kernels disagree on the statistics' shape there).
    const ValueSpec rows{"normal", 0, false, false};
    auto general = rc::gen::exec([ctx, rows]() {
      OpCall c;
      auto s = *gen::shape(1, 4, ctx.lim);
      const int k = *gen::atNominalSize(rc::gen::inRange<int>(1, std::min<int>(2, static_cast<int>(s.size())) + 1));
      for (auto& d : s) d = std::max<int64_t>(d, 1);
      if (numelOf(std::vector<int64_t>(s.end() - k, s.end())) < 8) s.back() = 8;
      const json x = add(c, *gen::layout(s, ctx.dtype, ctx.lim, rows));
      const std::vector<int64_t> norm(s.end() - k, s.end());
      json w = nullptr, b = nullptr;
      if (*gen::weighted<bool>({{2, true}, {1, false}})) w = add(c, *gen::layout(norm, ctx.dtype, ctx.lim));
      if (*gen::weighted<bool>({{2, true}, {1, false}})) b = add(c, *gen::layout(norm, ctx.dtype, ctx.lim));
      c.args = json::array({x, norm, w, b, *gen::element<double>(1e-5, 1e-6, 1e-3)});
      return c;
    });
    if (ctx.dtype != "float32") return general;
    return rc::gen::weightedOneOf<OpCall>({{19, general}, {1, rc::gen::just(layerNormSeedCall())}});
  };
}

Sampler gather() {
  return [](const SampleContext& ctx) {
    return rc::gen::exec([ctx]() {
      OpCall c;
      const auto s = *gen::shape(1, 4, ctx.lim);
      const int64_t d = *dimOf(static_cast<int>(s.size()));
      const size_t dn = static_cast<size_t>(norm(d, s.size()));
      std::vector<int64_t> idx(s.size());
      for (size_t k = 0; k < s.size(); ++k)
        idx[k] = k == dn ? *gen::weighted<int64_t>({{2, s[k]}, {1, 1}, {1, 2 * s[k] + 1}})
                         : *gen::weighted<int64_t>({{3, s[k]}, {1, std::min<int64_t>(s[k], 1)}});
      if (s[dn] == 0 || numelOf(idx) > ctx.lim.maxElements) idx[dn] = 0;  // nothing to index, or too big
      const json self = add(c, *gen::layout(s, ctx.dtype, ctx.lim));
      const json index = add(c, *gen::layout(idx, "int64", ctx.lim, ValueSpec{"index", s[dn], false, true}));
      c.args = json::array({self, d, index});
      return c;
    });
  };
}

Sampler indexSelect() {
  return [](const SampleContext& ctx) {
    return rc::gen::exec([ctx]() {
      OpCall c;
      const auto s = *gen::shape(1, 4, ctx.lim);
      const int64_t d = *dimOf(static_cast<int>(s.size()));
      const int64_t size = s[static_cast<size_t>(norm(d, s.size()))];
      int64_t n = size == 0 ? 0 : *gen::element<int64_t>(1, 3, 0, 2, 5, 17);
      if (n * (numelOf(s) / std::max<int64_t>(size, 1)) > ctx.lim.maxElements) n = 1;
      const json self = add(c, *gen::layout(s, ctx.dtype, ctx.lim));
      const json index = add(c, *gen::layout({n}, "int64", ctx.lim, ValueSpec{"index", size, false, true}));
      c.args = json::array({self, d, index});
      return c;
    });
  };
}

Sampler searchsorted() {
  return [](const SampleContext& ctx) {
    return rc::gen::exec([ctx]() {
      OpCall c;
      const ValueSpec sorted{"sorted", 0, false, false};
      const ValueSpec plain{"any", 0, false, true};
      const int64_t m = *gen::element<int64_t>(8, 1, 0, 3, 17, 64);
      if (*gen::weighted<bool>({{1, true}, {1, false}})) {  // a 1-D sequence, queries of any shape
        const json seq = add(c, *gen::layout({m}, ctx.dtype, ctx.lim, sorted));
        const json self = add(c, *gen::layout(*gen::shape(0, 4, ctx.lim), ctx.dtype, ctx.lim, plain));
        c.args = json::array({seq, self});
      } else {  // sequences and queries sharing their leading dims
        auto lead = *gen::shape(1, 3, ctx.lim);
        if (numelOf(lead) * std::max<int64_t>(m, 8) > ctx.lim.maxElements) lead = {1};
        auto seqShape = lead, selfShape = lead;
        seqShape.push_back(m);
        selfShape.push_back(*gen::element<int64_t>(4, 1, 0, 5));
        const json seq = add(c, *gen::layout(seqShape, ctx.dtype, ctx.lim, sorted));
        const json self = add(c, *gen::layout(selfShape, ctx.dtype, ctx.lim, plain));
        c.args = json::array({seq, self});
      }
      c.kwargs = {{"out_int32", *args::boolean()}, {"right", *args::boolean()}};
      return c;
    });
  };
}

Sampler withKwarg(Sampler s, std::string name, rc::Gen<json> value) {
  return [s, name, value](const SampleContext& ctx) {
    return rc::gen::map(rc::gen::tuple(s(ctx), value), [name](const std::tuple<OpCall, json>& t) {
      OpCall c = std::get<0>(t);
      c.kwargs[name] = std::get<1>(t);
      return c;
    });
  };
}

}  // namespace samplers

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
  c.args = json::array({placeholder(0), json::array({320}), placeholder(1), placeholder(2), 1e-5});
  return c;
}

}  // namespace flagprop
