#include "generators/gen.h"

#include "generators/choice.h"

#include <algorithm>

namespace flagprop::gen {


rc::Gen<std::vector<ParamSpec>> params() {
  auto kind = weighted<std::string>({{3, "spec"}, {2, "dns"}, {2, "constexpr"}});
  return rc::gen::mapcat(rc::gen::inRange<int>(0, 5), [kind](int extra) {
    return rc::gen::map(
        rc::gen::tuple(rc::gen::container<std::vector<std::string>>(extra, kind),
                       rc::gen::container<std::vector<int>>(extra, rc::gen::inRange<int>(-1, 9))),
        [](const std::tuple<std::vector<std::string>, std::vector<int>>& t) {
          const auto& [kinds, defaults] = t;
          std::vector<ParamSpec> out;
          out.push_back({"in_ptr", "spec", false, 0});
          for (size_t i = 0; i < kinds.size(); ++i) {
            ParamSpec p{"a" + std::to_string(i + 1), kinds[i], false, 0};
            if (p.kind == "constexpr" && defaults[i] >= 0) {
              p.hasDefault = true;
              p.defaultValue = defaults[i] * 16;
            }
            out.push_back(p);
          }
          out.push_back({"out_ptr", "spec", false, 0});
          return out;
        });
  });
}

rc::Gen<MockSpec> mockSpec(std::optional<std::string> helper) {
  auto helperGen = helper ? rc::gen::just(*helper)
                          : weighted<std::string>({{3, "present"}, {3, "absent"}, {1, "raising"}, {1, "wrong_signature"}});
  return rc::gen::build<MockSpec>(
      rc::gen::set(&MockSpec::helper, helperGen),
      rc::gen::set(&MockSpec::keySignature, element<std::string>("standard", "extra_keyword")),
      rc::gen::set(&MockSpec::runSignature, element<std::string>("standard", "grid_keyword")),
      rc::gen::set(&MockSpec::cache, element<std::string>("tuple", "cpu")),
      rc::gen::set(&MockSpec::flagtuneTuner, weighted<bool>({{4, false}, {1, true}})),
      rc::gen::set(&MockSpec::divisibility, element(16, 8, 32, 1)),
      rc::gen::set(&MockSpec::vendor, element<std::string>("nvidia", "hygon", "metax", "ascend")),
      rc::gen::set(&MockSpec::deviceCount, rc::gen::inRange(1, 3)),
      rc::gen::set(&MockSpec::params, params()),
      rc::gen::set(&MockSpec::wrappers,
                   weighted<std::vector<std::string>>({{6, {}}, {1, {"autotuner"}}, {1, {"heuristics"}}, {1, {"hook"}}})));
}

rc::Gen<Gates> gates(std::optional<Gates> fixed) {
  if (fixed) return rc::gen::just(*fixed);
  return rc::gen::build<Gates>(
      rc::gen::set(&Gates::accelerator,
                   weighted<std::string>({{6, "dcu"}, {2, "cuda"}, {1, "cpu"}, {1, "npu"}})),
      rc::gen::set(&Gates::routesToFlagGems, weighted<bool>({{5, true}, {1, false}})));
}

rc::Gen<InstallCase> installCase(std::optional<Gates> fixed) {
  return rc::gen::build<InstallCase>(rc::gen::set(&InstallCase::mock, mockSpec()),
                                     rc::gen::set(&InstallCase::gates, gates(fixed)));
}

rc::Gen<ArgValue> boundaryInt() {
  const std::vector<uint64_t> bases = {0ull,
                                       1ull,
                                       (1ull << 31) - 1,
                                       1ull << 31,
                                       1ull << 32,
                                       (1ull << 63) - 1,
                                       1ull << 63,
                                       ~0ull};
  return rc::gen::map(rc::gen::tuple(uniform(rc::gen::elementOf(bases)), uniform(rc::gen::inRange<int>(-2, 3)),
                                     rc::gen::arbitrary<bool>()),
                      [](const std::tuple<uint64_t, int, bool>& t) {
                        auto [base, delta, negative] = t;
                        uint64_t m = base;
                        if (delta < 0) m = (m >= uint64_t(-delta)) ? m - uint64_t(-delta) : 0;
                        if (delta > 0) m = (~0ull - m >= uint64_t(delta)) ? m + uint64_t(delta) : ~0ull;
                        ArgValue a;
                        a.kind = ArgValue::Kind::Int;
                        a.magnitude = m;
                        a.negative = negative && m != 0;
                        return a;
                      });
}

rc::Gen<ArgValue> tensorArg() {
  return rc::gen::map(
      rc::gen::tuple(element<std::string>("float32", "float16", "bfloat16", "float64", "int32", "int64",
                                                   "int8", "uint8", "bool"),
                     rc::gen::inRange<int64_t>(0, 65), rc::gen::inRange<int64_t>(0, 6), rc::gen::inRange(0, 50)),
      [](const std::tuple<std::string, int64_t, int64_t, int>& t) {
        ArgValue a;
        a.kind = ArgValue::Kind::Tensor;
        std::tie(a.dtype, a.numel, a.offset, a.seed) = t;
        return a;
      });
}

namespace {
rc::Gen<ArgValue> simpleArg(ArgValue::Kind kind) {
  switch (kind) {
    case ArgValue::Kind::Float:
      return rc::gen::map(element(0.0, 1.5, -2.0, 1e300, -0.0, 3.25),
                          [](double d) { ArgValue a; a.kind = ArgValue::Kind::Float; a.real = d; return a; });
    case ArgValue::Kind::Bool:
      return rc::gen::map(rc::gen::arbitrary<bool>(),
                          [](bool b) { ArgValue a; a.kind = ArgValue::Kind::Bool; a.flag = b; return a; });
    case ArgValue::Kind::Str:
      return rc::gen::map(element<std::string>("", "fp32", "i32", "TensorDescriptor"),
                          [](const std::string& s) { ArgValue a; a.kind = ArgValue::Kind::Str; a.text = s; return a; });
    default: {
      ArgValue a;
      a.kind = ArgValue::Kind::None;
      return rc::gen::just(a);
    }
  }
}

rc::Gen<ArgValue> descriptorArg() {
  return rc::gen::map(
      rc::gen::tuple(element<std::string>("triton", "duck"), rc::gen::inRange<int64_t>(1, 64),
                     rc::gen::inRange<int64_t>(1, 64)),
      [](const std::tuple<std::string, int64_t, int64_t>& t) {
        ArgValue a;
        a.kind = ArgValue::Kind::Descriptor;
        a.descriptorKind = std::get<0>(t);
        a.shape = {std::get<1>(t), std::get<2>(t)};
        a.strides = {std::get<2>(t), 1};
        a.blockShape = {16, 16};
        return a;
      });
}
}  // namespace

rc::Gen<ArgValue> keyArg() {
  return rc::gen::weightedOneOf<ArgValue>({{4, boundaryInt()},
                                           {3, tensorArg()},
                                           {1, simpleArg(ArgValue::Kind::Bool)},
                                           {1, simpleArg(ArgValue::Kind::Float)},
                                           {1, simpleArg(ArgValue::Kind::Str)},
                                           {1, simpleArg(ArgValue::Kind::None)},
                                           {1, descriptorArg()}});
}

rc::Gen<KeyCase> keyCase() {
  auto section = rc::gen::mapcat(rc::gen::inRange(0, 5), [](int n) {
    return rc::gen::container<std::vector<ArgValue>>(n, keyArg());
  });
  return rc::gen::build<KeyCase>(rc::gen::set(&KeyCase::mock, mockSpec(std::string("present"))),
                                 rc::gen::set(&KeyCase::specArgs, section),
                                 rc::gen::set(&KeyCase::dnsArgs, section),
                                 rc::gen::set(&KeyCase::constArgs, section));
}

namespace {
rc::Gen<ArgValue> valueFor(const ParamSpec& p) {
  if (p.kind == "spec") return rc::gen::weightedOneOf<ArgValue>({{5, tensorArg()}, {1, boundaryInt()}});
  if (p.kind == "dns") return rc::gen::weightedOneOf<ArgValue>({{3, boundaryInt()}, {1, simpleArg(ArgValue::Kind::Float)}});
  return rc::gen::map(rc::gen::inRange<int64_t>(0, 9), [](int64_t v) {
    ArgValue a;
    a.kind = ArgValue::Kind::Int;
    a.magnitude = uint64_t(v * 16);
    return a;
  });
}

rc::Gen<std::vector<ArgValue>> argSet(const std::vector<ParamSpec>& ps) {
  std::vector<rc::Gen<ArgValue>> gens;
  for (const auto& p : ps) gens.push_back(valueFor(p));
  // Build the vector one param at a time (each keeps its own shrinking).
  rc::Gen<std::vector<ArgValue>> acc = rc::gen::just(std::vector<ArgValue>{});
  for (auto& g : gens) {
    acc = rc::gen::map(rc::gen::tuple(acc, g), [](const std::tuple<std::vector<ArgValue>, ArgValue>& t) {
      auto v = std::get<0>(t);
      v.push_back(std::get<1>(t));
      return v;
    });
  }
  // The output (last param) must be a tensor with at least one element so
  // results can be compared.
  return rc::gen::map(acc, [](std::vector<ArgValue> v) {
    if (!v.empty() && (v.back().kind != ArgValue::Kind::Tensor || v.back().numel == 0)) {
      ArgValue out;
      out.kind = ArgValue::Kind::Tensor;
      out.dtype = "float64";
      out.numel = 4;
      v.back() = out;
    }
    return v;
  });
}
}  // namespace

rc::Gen<LaunchCase> launchCase() {
  return rc::gen::mapcat(mockSpec(std::string("present")), [](const MockSpec& spec) {
    const int n = static_cast<int>(spec.params.size());
    auto sets = rc::gen::mapcat(rc::gen::inRange(1, 4), [spec](int k) {
      return rc::gen::container<std::vector<std::vector<ArgValue>>>(k, argSet(spec.params));
    });
    return rc::gen::mapcat(sets, [spec, n](const std::vector<std::vector<ArgValue>>& s) {
      const int nsets = static_cast<int>(s.size());
      auto launch = rc::gen::build<Launch>(
          rc::gen::set(&Launch::kind, weighted<std::string>({{5, "positional"},
                                                             {1, "extra_kwargs"},
                                                             {1, "partial"},
                                                             {1, "callable_grid"}})),
          rc::gen::set(&Launch::argSet, rc::gen::inRange(0, nsets)),
          rc::gen::set(&Launch::positional, rc::gen::inRange(0, std::max(1, n - 1))),
          rc::gen::set(&Launch::grid, rc::gen::container<std::vector<int64_t>>(
                                          1, rc::gen::inRange<int64_t>(1, 9))));
      auto launches = rc::gen::mapcat(rc::gen::inRange(1, 9), [launch](int k) {
        return rc::gen::container<std::vector<Launch>>(k, launch);
      });
      return rc::gen::map(launches, [spec, s](const std::vector<Launch>& ls) {
        LaunchCase c;
        c.mock = spec;
        c.argSets = s;
        c.launches = ls;
        return c;
      });
    });
  });
}

}  // namespace flagprop::gen
