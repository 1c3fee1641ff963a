// The op catalog, the layout generators and P5 / P6: reachability of the
// seed case and of every layout kind, the palette, and the teeth of P5 and
// P6 (each op mutant caught by the property meant for it, the well-behaved
// ops passing both).
#include "ops/catalog.h"
#include "ops/op_run.h"
#include "suites/property.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace flagprop {
namespace {

TargetSession& session(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TargetSession>> sessions;
  auto& s = sessions[name];
  if (!s) {
    s = std::make_unique<TargetSession>(loadTarget(fixturesDir() + "/targets/" + name + ".json"));
    setupOps(*s);
  }
  return *s;
}

PropertyOutcome runOp(const std::string& target, const std::string& prop, const std::string& op,
                      const std::string& dtype, int cases = 60) {
  RunOptions o;
  o.cases = cases;
  o.seed = 20261130;
  const OpEntry* e = findOp(op);
  if (!e) throw std::runtime_error("no op " + op);
  return prop == "P5" ? runP5(session(target), o, *e, dtype) : runP6(session(target), o, *e, dtype);
}

TEST(Layouts, SeedCaseStridesComeFromAPermutedContiguousBase) {
  const auto [strides, extent] = stridesFor({101, 3, 320}, {1, 0, 2}, {1, 1, 1}, {false, false, false});
  EXPECT_EQ(strides, (std::vector<int64_t>{320, 32320, 1}));
  EXPECT_EQ(extent, 3 * 32320);
  const auto sliced = stridesFor({4, 5}, {0, 1}, {1, 2}, {false, false});
  EXPECT_EQ(sliced.first, (std::vector<int64_t>{10, 2}));  // inner step 2 over a base row of 10
  const auto expanded = stridesFor({4, 5}, {0, 1}, {1, 1}, {true, false});
  EXPECT_EQ(expanded.first, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(stridesFor({3, 0}, {0, 1}, {1, 1}, {false, false}).second, 0);
}

TEST(Layouts, GeneratorReachesEveryLayoutKindWithinTheCap) {
  gen::LayoutLimits lim;
  lim.maxElements = 4096;
  std::set<std::string> kinds;
  std::set<size_t> ranks;
  bool zeroSize = false, special = false;
  const auto g = rc::gen::mapcat(gen::shape(0, 5, lim), [lim](std::vector<int64_t> s) {
    return gen::layout(s, "float32", lim);
  });
  rc::Random random(7);
  for (int i = 0; i < 3000; ++i) {
    const TensorLayout t = g(random.split(), rc::kNominalSize).value();
    ASSERT_LE(t.numel(), lim.maxElements);
    ASSERT_LE(t.storage, lim.maxElements + 7 + 3);  // + the storage offset and the tail slack
    ASSERT_EQ(t.shape.size(), t.strides.size());
    int64_t extent = 1;
    for (size_t d = 0; d < t.shape.size(); ++d) extent += t.shape[d] ? (t.shape[d] - 1) * t.strides[d] : 0;
    if (t.numel()) ASSERT_LE(t.offset + extent, t.storage) << toJson(t).dump();
    for (const std::string k : {"permuted", "sliced", "expanded", "offset"})
      if (t.how.find(k) != std::string::npos) kinds.insert(k);
    if (t.how == "contiguous") kinds.insert("contiguous");
    ranks.insert(t.shape.size());
    zeroSize |= t.numel() == 0;
    special |= !t.specials.empty();
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"contiguous", "permuted", "sliced", "expanded", "offset"}));
  EXPECT_EQ(ranks, (std::set<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(zeroSize);
  EXPECT_TRUE(special);
}

TEST(Catalog, LayerNormFloat32GeneratorReachesTheSeedCase) {
  const OpEntry* e = findOp("native_layer_norm");
  ASSERT_NE(e, nullptr);
  const json seed = toJson(layerNormSeedCall());
  const auto g = e->sample("float32", gen::LayoutLimits{});
  rc::Random random(11);
  int hits = 0;
  for (int i = 0; i < 400; ++i) hits += toJson(g(random.split(), rc::kNominalSize).value()) == seed;
  EXPECT_GT(hits, 0);
}

TEST(Catalog, SeedCasePassesOnTheWellBehavedOpsWithin1e4) {
  OpCase c;
  c.op = "native_layer_norm";
  c.dtype = "float32";
  c.calls = {layerNormSeedCall()};
  const json obs = runOpCase(session("well-behaved"), *findOp(c.op), c);
  EXPECT_TRUE(obs.at("numerics").empty()) << obs.dump(2);
  EXPECT_TRUE(obs.at("aliasing").empty()) << obs.dump(2);
  EXPECT_EQ(obs.at("calls").at(0).at("actual").at(0).at("shape"), json::array({101, 3, 320}));
  EXPECT_EQ(obs.at("fast_path"), "active");
  EXPECT_EQ(obs.at("patched_vs_unpatched"), "equal");
}

TEST(Catalog, EveryEntryIsCompleteAndNamesAnAtenOverload) {
  std::set<std::string> names;
  for (const auto& e : catalog()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_FALSE(e.dtypes.empty()) << e.name;
    EXPECT_TRUE(e.sample && e.reference && e.tolerance) << e.name;
    EXPECT_EQ(e.schema.rfind(e.name.substr(0, e.name.find('.')), 0), 0u) << e.schema;
  }
  for (const char* n : {"native_layer_norm", "where.self", "eq.Scalar", "masked_fill.Scalar", "add.Tensor",
                        "sum.dim_IntList", "mean.dim", "pow.Tensor_Scalar", "tanh", "rsqrt", "silu"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(Catalog, PaletteIsAFunctionOfSeedOpAndDtype) {
  gen::LayoutLimits lim;
  lim.palette = 8;
  const OpEntry& add = *findOp("add.Tensor");
  const auto a = buildPalette(add, "float32", lim);
  const auto b = buildPalette(add, "float32", lim);
  ASSERT_EQ(a.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(toJson(a[i]), toJson(b[i]));
  lim.paletteSeed = 1;
  const auto c = buildPalette(add, "float32", lim);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= toJson(a[i]) != toJson(c[i]);
  EXPECT_TRUE(differs);
}

TEST(OpTeeth, WellBehavedOpsPassP5AndP6ForEveryOpAndDtype) {
  for (const auto& [e, dtype] : opRuns(session("well-behaved").target()))
    for (const char* p : {"P5", "P6"}) {
      const auto o = runOp("well-behaved", p, e->name, dtype, 25);
      EXPECT_EQ(o.status, "pass") << p << " " << e->name << " " << dtype << ": " << o.reason << "\n"
                                  << o.counterexample.dump();
    }
}

TEST(OpTeeth, P6CatchesAnOpReturningAViewOfItsInput) {
  EXPECT_EQ(runOp("ops-returns-view", "P5", "pow.Tensor_Scalar", "float32").status, "pass");
  const auto o = runOp("ops-returns-view", "P6", "pow.Tensor_Scalar", "float32");
  ASSERT_EQ(o.status, "fail");
  EXPECT_NE(o.reason.find("shares storage with input 0"), std::string::npos) << o.reason;
  EXPECT_EQ(o.counterexample.at("calls").at(0).at("args").at(1), 1) << "shrinks to exponent 1";
}

TEST(OpTeeth, P6CatchesAnOpWritingIntoItsInput) {
  EXPECT_EQ(runOp("ops-writes-input", "P5", "silu", "float16").status, "pass");
  const auto o = runOp("ops-writes-input", "P6", "silu", "float16");
  ASSERT_EQ(o.status, "fail");
  const std::string all = o.observations.at("aliasing").dump();
  EXPECT_NE(all.find("version counter"), std::string::npos) << all;
  EXPECT_NE(all.find("values changed"), std::string::npos) << all;
}

TEST(OpTeeth, P5FindsTheRareLayoutWhereAnOpIsOneUlpOff) {
  EXPECT_EQ(runOp("ops-ulp-rare-layout", "P6", "where.self", "float32").status, "pass");
  const auto o = runOp("ops-ulp-rare-layout", "P5", "where.self", "float32");
  ASSERT_EQ(o.status, "fail");
  EXPECT_NE(o.reason.find("beyond rtol 0 atol 0"), std::string::npos) << o.reason;
  // The shrunk case keeps the rare layout: an expanded input with a storage offset.
  bool rare = false;
  for (const auto& call : o.counterexample.at("calls"))
    for (const auto& t : call.at("tensors")) {
      bool stride0 = false;
      for (const auto& s : t.at("strides")) stride0 |= s == 0;
      rare |= stride0 && t.at("offset").get<int64_t>() > 0;
    }
  EXPECT_TRUE(rare) << o.counterexample.dump();
}

TEST(OpTeeth, P6JudgesTheUnpatchedPathTooWhenTheFastPathIsOn) {
  const auto o = runOp("ops-stock-path-writes-input", "P6", "silu", "float32");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("fast_path"), "active");
  EXPECT_NE(o.reason.find("(unpatched): input 0"), std::string::npos) << o.reason;
}

TEST(OpTeeth, P5CatchesAnOpIgnoringTheStorageOffset) {
  EXPECT_EQ(runOp("ops-ignores-offset", "P6", "tanh", "bfloat16").status, "pass");
  const auto o = runOp("ops-ignores-offset", "P5", "tanh", "bfloat16");
  ASSERT_EQ(o.status, "fail");
  EXPECT_GT(o.counterexample.at("calls").at(0).at("tensors").at(0).at("offset").get<int64_t>(), 0);
}

TEST(OpTeeth, P6CatchesAnOpThatOverwritesAnEarlierOutput) {
  EXPECT_EQ(runOp("ops-reuses-output", "P5", "add.Tensor", "int32").status, "pass");
  const auto o = runOp("ops-reuses-output", "P6", "add.Tensor", "int32");
  ASSERT_EQ(o.status, "fail");
  EXPECT_GE(o.counterexample.at("calls").size(), 2u) << "needs a second call";
  EXPECT_NE(o.reason.find("shares storage with output 0 of call 0"), std::string::npos) << o.reason;
}

TEST(OpTeeth, P5ComparesPatchedWithUnpatchedBitwise) {
  // The stale broadcast_shapes memo only acts once the installer ran.
  const auto o = runOp("stale-memo", "P5", "add.Tensor", "float32");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("fast_path"), "active");
  EXPECT_EQ(o.observations.at("patched_vs_unpatched"), "differ");
  const std::string all = o.observations.at("numerics").dump();
  EXPECT_TRUE(all.find("patched differs bitwise from unpatched") != std::string::npos ||
              all.find("unpatched returned, patched raised") != std::string::npos)
      << all;
}

TEST(OpTeeth, ALostDeviceKeepsTheCaseUnshrunkAndStopsLaterRuns) {
  const auto first = runOp("ops-device-lost", "P5", "tanh", "float32", 200);
  ASSERT_EQ(first.status, "fail") << first.reason;
  EXPECT_NE(first.reason.find("device context was lost while running this case (unshrunk)"), std::string::npos)
      << first.reason;
  int64_t numel = 1;
  for (const auto& s : first.counterexample.at("calls").back().at("tensors").at(0).at("shape")) numel *= s.get<int64_t>();
  EXPECT_GT(numel, 100) << "the case in flight, not a shrunk one";
  const auto later = runOp("ops-device-lost", "P6", "tanh", "float16");
  EXPECT_EQ(later.status, "error");
  EXPECT_NE(later.reason.find("not run: the device context was lost during P5/tanh/float32"), std::string::npos)
      << later.reason;
}

TEST(OpTeeth, P5SaysSoWhenTheFastPathIsInactive) {
  OpCase c;
  c.op = "tanh";
  c.dtype = "float32";
  OpCall call;
  TensorLayout t;
  t.shape = {3};
  t.strides = {1};
  t.storage = 3;
  call.tensors = {t};
  call.args = json::array({{{"tensor", 0}}});
  c.calls = {call};
  const json obs = runOpCase(session("ops-fast-path-off"), *findOp("tanh"), c);
  EXPECT_EQ(obs.at("fast_path"), "inactive");
  EXPECT_NE(obs.at("patched_vs_unpatched").get<std::string>().find("not compared"), std::string::npos);
  EXPECT_TRUE(obs.at("numerics").empty()) << obs.dump(2);
}

TEST(Manifest, OpFieldsAreValidated) {
  const std::string dir = fixturesDir() + "/targets";
  auto bad = [&](const json& patch) {
    json j = {{"schema", "flagprop.target/1"}, {"name", "x"}, {"ops", {{"kind", "aten"}}}};
    j.merge_patch(patch);
    try {
      parseTarget(j, "m.json", dir);
    } catch (const ManifestError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(bad({{"catalog", {"nope.Tensor"}}}).find("unknown op 'nope.Tensor'"), std::string::npos);
  EXPECT_NE(bad({{"dtypes", {"float8"}}}).find("dtypes may name"), std::string::npos);
  EXPECT_NE(bad({{"ops", {{"kind", "module"}, {"path", "missing.py"}}}}).find("does not exist"), std::string::npos);
  EXPECT_NE(bad({{"properties", {"P1"}}}).find("needs an installer"), std::string::npos);
  EXPECT_NE(bad({{"op_cases", 0}}).find("op_cases must be"), std::string::npos);
  EXPECT_EQ(bad(json::object()), "");
  const Target t = parseTarget({{"schema", "flagprop.target/1"}, {"name", "x"}}, "m.json", dir);
  EXPECT_EQ(t.installerMode, "none");
  EXPECT_EQ(t.properties, (std::vector<std::string>{"P5", "P6"}));
}

}  // namespace
}  // namespace flagprop
