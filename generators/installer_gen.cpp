#include "generators/installer_cases.h"

#include "core/dtypes.h"
#include "core/python.h"
#include "generators/choice.h"

#include <algorithm>
#include <stdexcept>

namespace flagprop::gen {

const json& mockSchema() {
  static const json schema = [] {
    ensureInterpreter();
    py::gil_scoped_acquire gil;
    try {
      return toJson(pyImport("flagprop_mocks").attr("SPEC_SCHEMA"));
    } catch (const py::error_already_set& e) {
      throw std::runtime_error("flagprop: cannot read the mock spec schema: " + describe(e));
    }
  }();
  return schema;
}

rc::Gen<json> params() {
  auto kind = weighted<std::string>({{3, "spec"}, {2, "dns"}, {2, "constexpr"}});
  return rc::gen::exec([kind]() {
    const int extra = *rc::gen::inRange<int>(0, 5);
    json out = json::array({{{"name", "in_ptr"}, {"kind", "spec"}}});
    for (int i = 0; i < extra; ++i) {
      json p = {{"name", "a" + std::to_string(i + 1)}, {"kind", *kind}};
      const int dflt = *rc::gen::inRange<int>(-1, 9);
      if (p["kind"] == "constexpr" && dflt >= 0) p["default"] = dflt * 16;
      out.push_back(p);
    }
    out.push_back({{"name", "out_ptr"}, {"kind", "spec"}});
    return out;
  });
}

rc::Gen<json> mockSpec(const json& schema, const json& fixed) {
  std::vector<std::pair<std::string, rc::Gen<json>>> fields;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (fixed.contains(it.key())) continue;
    if (it.value().contains("values")) {
      std::vector<std::pair<int, json>> choices;
      for (const auto& v : it.value().at("values")) choices.emplace_back(v.at(1).get<int>(), v.at(0));
      fields.emplace_back(it.key(), weighted<json>(choices));
    } else if (it.value().value("generator", "") == "params") {
      fields.emplace_back(it.key(), params());
    } else {
      throw std::runtime_error("flagprop: mock spec field '" + it.key() + "' has neither values nor a known generator");
    }
  }
  return rc::gen::exec([fields, fixed]() {
    json spec = fixed;
    for (const auto& [name, g] : fields) spec[name] = *g;
    return spec;
  });
}

rc::Gen<Gates> gates(std::optional<Gates> fixed) {
  if (fixed) return rc::gen::just(*fixed);
  return rc::gen::build<Gates>(
      rc::gen::set(&Gates::accelerator, weighted<std::string>({{6, "dcu"}, {2, "cuda"}, {1, "cpu"}, {1, "npu"}})),
      rc::gen::set(&Gates::routesToFlagGems, weighted<bool>({{5, true}, {1, false}})));
}

rc::Gen<InstallCase> installCases(const json& schema, std::optional<Gates> fixed, const json& pinned) {
  return rc::gen::build<InstallCase>(rc::gen::set(&InstallCase::mock, mockSpec(schema, pinned)),
                                     rc::gen::set(&InstallCase::gates, gates(fixed)));
}

namespace {
std::vector<std::string> dtypeNames() {
  std::vector<std::string> out;
  for (const auto& d : dtypes()) out.emplace_back(d.name);
  return out;
}
}  // namespace

rc::Gen<ArgValue> boundaryInt() {
  const std::vector<uint64_t> bases = {0ull,       1ull, (1ull << 31) - 1, 1ull << 31, 1ull << 32, (1ull << 63) - 1,
                                       1ull << 63, ~0ull};
  return rc::gen::map(rc::gen::tuple(atNominalSize(rc::gen::elementOf(bases)),
                                     atNominalSize(rc::gen::inRange<int>(-2, 3)), rc::gen::arbitrary<bool>()),
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
  return rc::gen::map(rc::gen::tuple(atNominalSize(rc::gen::elementOf(dtypeNames())), rc::gen::inRange<int64_t>(0, 65),
                                     rc::gen::inRange<int64_t>(0, 6), rc::gen::inRange(0, 50)),
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
      return rc::gen::map(element(0.0, 1.5, -2.0, 1e300, -0.0, 3.25), [](double d) {
        ArgValue a;
        a.kind = ArgValue::Kind::Float;
        a.real = d;
        return a;
      });
    case ArgValue::Kind::Bool:
      return rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) {
        ArgValue a;
        a.kind = ArgValue::Kind::Bool;
        a.flag = b;
        return a;
      });
    case ArgValue::Kind::Str:
      return rc::gen::map(element<std::string>("", "fp32", "i32", "TensorDescriptor"), [](const std::string& s) {
        ArgValue a;
        a.kind = ArgValue::Kind::Str;
        a.text = s;
        return a;
      });
    default: {
      ArgValue a;
      a.kind = ArgValue::Kind::None;
      return rc::gen::just(a);
    }
  }
}

rc::Gen<ArgValue> descriptorArg() {
  return rc::gen::map(rc::gen::tuple(element<std::string>("triton", "duck"), rc::gen::inRange<int64_t>(1, 64),
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

namespace {
// `pinned` with the helper present: P3 and P4 compare an installed fast path.
json withHelper(json pinned) {
  pinned["helper"] = "present";
  return pinned;
}
}  // namespace

rc::Gen<KeyCase> keyCases(const json& schema, const json& pinned) {
  auto section = rc::gen::mapcat(rc::gen::inRange(0, 5),
                                 [](int n) { return rc::gen::container<std::vector<ArgValue>>(n, keyArg()); });
  return rc::gen::build<KeyCase>(rc::gen::set(&KeyCase::mock, mockSpec(schema, withHelper(pinned))),
                                 rc::gen::set(&KeyCase::specArgs, section), rc::gen::set(&KeyCase::dnsArgs, section),
                                 rc::gen::set(&KeyCase::constArgs, section));
}

namespace {
rc::Gen<ArgValue> valueFor(const json& p) {
  const std::string kind = p.at("kind");
  if (kind == "spec") return rc::gen::weightedOneOf<ArgValue>({{5, tensorArg()}, {1, boundaryInt()}});
  if (kind == "dns")
    return rc::gen::weightedOneOf<ArgValue>({{3, boundaryInt()}, {1, simpleArg(ArgValue::Kind::Float)}});
  return rc::gen::map(rc::gen::inRange<int64_t>(0, 9), [](int64_t v) {
    ArgValue a;
    a.kind = ArgValue::Kind::Int;
    a.magnitude = uint64_t(v * 16);
    return a;
  });
}

rc::Gen<std::vector<ArgValue>> argSet(const json& ps) {
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

rc::Gen<LaunchCase> launchCases(const json& schema, const json& pinned) {
  return rc::gen::mapcat(mockSpec(schema, withHelper(pinned)), [](const json& spec) {
    const int n = static_cast<int>(spec.at("params").size());
    auto sets = rc::gen::mapcat(rc::gen::inRange(1, 4), [spec](int k) {
      return rc::gen::container<std::vector<std::vector<ArgValue>>>(k, argSet(spec.at("params")));
    });
    return rc::gen::mapcat(sets, [spec, n](const std::vector<std::vector<ArgValue>>& s) {
      const int nsets = static_cast<int>(s.size());
      auto launch = rc::gen::build<Launch>(
          rc::gen::set(
              &Launch::kind,
              weighted<std::string>({{5, "positional"}, {1, "extra_kwargs"}, {1, "partial"}, {1, "callable_grid"}})),
          rc::gen::set(&Launch::argSet, rc::gen::inRange(0, nsets)),
          rc::gen::set(&Launch::positional, rc::gen::inRange(0, std::max(1, n - 1))),
          rc::gen::set(&Launch::grid, rc::gen::container<std::vector<int64_t>>(1, rc::gen::inRange<int64_t>(1, 9))));
      auto launches = rc::gen::mapcat(rc::gen::inRange(1, 9),
                                      [launch](int k) { return rc::gen::container<std::vector<Launch>>(k, launch); });
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
