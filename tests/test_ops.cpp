// The op catalog, the layout generators and P5 / P6: reachability of the
// seed case and of every layout kind, the palette, and the teeth of P5 and
// P6 (each op mutant caught by the property meant for it, the well-behaved
// ops passing both). Tests of the Python functions alone are in tests/unit/.
#include "catalog/opinfo_sampler.h"
#include "catalog/schema_ops.h"
#include "core/files.h"
#include "core/tensor_bridge.h"
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace flagprop {
namespace {

using test::judgeOpCase;
PropertyOutcome runOp(const std::string& target, const std::string& prop, const std::string& op,
                      const std::string& dtype, int cases = 60) {
  return test::runFixtureOp(target, prop, op, dtype, cases);
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
  const auto g =
      rc::gen::mapcat(gen::shape(0, 5, lim), [lim](std::vector<int64_t> s) { return gen::layout(s, "float32", lim); });
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
  const auto g = e->sample({"float32", gen::LayoutLimits{}});
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
  const json r = judgeOpCase("well-behaved", c);
  const json& obs = r.at("evidence");
  EXPECT_TRUE(obs.at("numerics").empty()) << obs.dump(2);
  EXPECT_TRUE(obs.at("aliasing").empty()) << obs.dump(2);
  EXPECT_EQ(obs.at("calls").at(0).at("actual").at(0).at("shape"), json::array({101, 3, 320}));
  EXPECT_EQ(obs.at("fast_path"), "active");
  EXPECT_EQ(obs.at("patched_vs_unpatched"), "equal");
}

TEST(Catalog, EveryEntryIsCompleteAndNamesARegisteredAtenOverload) {
  std::set<std::string> names;
  for (const auto& e : catalog()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_FALSE(e.dtypes.empty()) << e.name;
    for (const auto& d : e.dtypes) EXPECT_EQ(checkCatalogDtype(d), "") << e.name;
    EXPECT_TRUE(static_cast<bool>(e.sample)) << e.name;
    EXPECT_NE(atenSchema(e.name), "") << e.name << " is not an overload LibTorch's dispatcher knows";
    const std::string rule = e.judging.tolerance.at("rule");
    EXPECT_TRUE(rule == "pointwise" || rule == "exact" || rule == "reduction" || rule == "scan" ||
                rule == "normalization")
        << e.name;
  }
  for (const char* n : {"native_layer_norm",
                        "where.self",
                        "eq.Scalar",
                        "masked_fill.Scalar",
                        "add.Tensor",
                        "sum.dim_IntList",
                        "mean.dim",
                        "pow.Tensor_Scalar",
                        "tanh",
                        "rsqrt",
                        "silu",
                        "_log_softmax",
                        "argmin",
                        "max.dim",
                        "cumsum",
                        "gather",
                        "index_select",
                        "clamp",
                        "mul.Tensor",
                        "div.Tensor",
                        "sub.Tensor",
                        "exp",
                        "log",
                        "gelu",
                        "relu",
                        "sort",
                        "searchsorted.Tensor"})
    EXPECT_TRUE(names.count(n)) << n;
}

// Every op's sampler makes calls CPU ATen accepts (few discards) and every
// value constraint holds in the tensors flagprop.engine.ops builds.
TEST(Catalog, SamplersMakeValidCallsAndValueKindsHold) {
  py::gil_scoped_acquire gil;
  const py::module_ ops = pyImport("flagprop.engine.ops");
  gen::LayoutLimits lim;
  lim.maxElements = 4096;
  rc::Random random(3);
  for (const auto& e : catalog()) {
    int rejected = 0;
    const int n = 40;
    for (int i = 0; i < n; ++i) {
      const OpCall c = e.sample({e.dtypes.front(), lim})(random.split(), rc::kNominalSize).value();
      const py::object call = fromJson(toJson(c));
      const py::list cpu = ops.attr("build_cpu")(call);
      for (size_t t = 0; t < c.tensors.size(); ++t) {
        const auto& l = c.tensors[t];
        py::object x = cpu[t];
        if (py::int_(x.attr("numel")()).cast<int64_t>() == 0) continue;
        if (l.values == "index") {
          EXPECT_TRUE(x.attr("ge")(0).attr("all")().cast<bool>() && x.attr("lt")(l.high).attr("all")().cast<bool>())
              << e.name << " index out of [0, " << l.high << ")";
        } else if (l.values == "sorted" && !l.shape.empty()) {
          const py::object diff = x.attr("diff")(py::arg("dim") = -1);
          EXPECT_TRUE(diff.attr("ge")(0).attr("all")().cast<bool>()) << e.name << " not sorted";
        } else if (l.values == "positive") {
          EXPECT_TRUE(x.attr("gt")(0).attr("all")().cast<bool>()) << e.name;
        }
      }
      try {
        ops.attr("reference")(e.name, call, cpu, true);
      } catch (const py::error_already_set&) {
        ++rejected;
      }
    }
    EXPECT_LE(rejected, n / 4) << e.name << ": CPU ATen rejects " << rejected << " of " << n << " sampled calls";
  }
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

// The class of an overload comes from its schema's alias annotations and tags.
TEST(Schema, ClassesComeFromAliasAnnotationsAndTags) {
  const std::vector<std::pair<std::string, std::string>> want = {
      {"add.Tensor", "functional"}, {"add.out", "out"},         {"add_.Tensor", "inplace"},
      {"transpose.int", "view"},    {"split.Tensor", "view"},   {"zeros", "functional"},
      {"bernoulli.p", "excluded"},  {"as_strided", "excluded"}, {"empty.memory_format", "excluded"},
      {"is_nonzero", "excluded"}};
  for (const auto& [name, kind] : want) {
    const auto s = atenOpSchema(name);
    ASSERT_TRUE(s) << name;
    EXPECT_EQ(classifyOp(*s).kind, kind) << name << ": " << classifyOp(*s).reason;
  }
  EXPECT_NE(classifyOp(*atenOpSchema("bernoulli.p")).reason.find("random"), std::string::npos);
  // LibTorch 1.13 reads ScalarType as int; flagprop reads the type the schema writes.
  const auto zeros = atenOpSchema("zeros");
  EXPECT_EQ(zeros->args.at(1).type, "ScalarType?");
  EXPECT_FALSE(atenOpSchema("nope.Tensor"));
  EXPECT_EQ(findOp("nope.Tensor"), nullptr);
  EXPECT_NE(whyExcluded("nope.Tensor").find("no ATen overload"), std::string::npos);
}

// Schema-derived samples: a dim is valid for the first tensor, an out=
// argument is a placeholder, a dtype argument names the run's dtype.
TEST(Schema, SamplesFollowTheArgumentTypes) {
  const OpEntry* sum = findOp("sum.IntList_out");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->judging.mode, "out");
  const auto g = sum->sample({"float32", {}});
  for (int i = 0; i < 200; ++i) {
    const OpCall c = g(rc::Random(i), 50).value();
    ASSERT_FALSE(c.tensors.empty());
    const int64_t rank = static_cast<int64_t>(c.tensors[0].shape.size());
    for (const auto& d : c.args.at(1))
      if (!d.is_null())
        EXPECT_TRUE(d.get<int64_t>() >= -std::max<int64_t>(rank, 1) && d.get<int64_t>() < std::max<int64_t>(rank, 1))
            << c.args.dump();
    EXPECT_EQ(c.kwargs.at("out"), json({{"$out", 0}}));
    if (c.kwargs.contains("dtype") && !c.kwargs.at("dtype").is_null())
      EXPECT_EQ(c.kwargs.at("dtype"), json({{"$dtype", "float32"}}));
  }
}

// A bool run's scalar is a bool (bitwise_or_.Scalar cannot write an int
// result into a bool self), and a Device the schema requires is the call's
// device even after a tensor argument (_resize_output).
TEST(Schema, BoolRunsTakeBoolScalarsAndARequiredDeviceIsGiven) {
  const OpEntry* orInPlace = findOp("bitwise_or_.Scalar");
  ASSERT_NE(orInPlace, nullptr);
  const auto g = orInPlace->sample({"bool", {}});
  const auto h = orInPlace->sample({"int32", {}});
  bool sawInt = false;
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(g(rc::Random(i), 50).value().args.at(1).is_boolean()) << i;
    sawInt |= h(rc::Random(i), 50).value().args.at(1).is_number_integer();
  }
  EXPECT_TRUE(sawInt);
  const OpEntry* resize = findOp("_resize_output");
  ASSERT_NE(resize, nullptr);
  const auto r = resize->sample({"float32", {}});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(r(rc::Random(i), 50).value().args.at(2), json({{"$device", true}})) << i;
}

// Which of CPU ATen's rejections are for the run's dtype (the run then ends
// "not run in DTYPE"): the messages of LibTorch 1.13 and torch 2.11 for a
// missing kernel and for complex-, bool-, double- and uint8-only ops; a
// rejection for shapes or for another argument's dtype is none.
TEST(Schema, DtypeRejectionsAreToldFromShapeRejections) {
  for (const char* yes : {
           "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
           "RuntimeError: isComplexType(typeMetaToScalarType(dtype())) INTERNAL ASSERT FAILED at "
           "\"/pytorch/c10/core/TensorImpl.h\":1439, please report a bug to PyTorch.",
           "RuntimeError: the base given to float_power_ has dtype Float but the operation's result requires dtype "
           "Double",
           "RuntimeError: self.scalar_type() == at::kBool INTERNAL ASSERT FAILED at \"ReduceOps.cpp\":2207",
           "RuntimeError: _dyn_quant_pack_4bit_weight_cpu : expect weight to be kByte.",
       })
    EXPECT_TRUE(isDtypeRejection(yes)) << yes;
  for (const char* no :
       {"RuntimeError: mat1 must be a matrix", "RuntimeError: expected scalar type Long but found Double",
        "RuntimeError: result type Long can't be cast to the desired output type Bool"})
    EXPECT_FALSE(isDtypeRejection(no)) << no;
}

// An in-place op's self is never expanded (stride 0): ATen leaves a write
// to a tensor whose elements overlap unsupported, so such a case says
// nothing of the op. Its other tensors still may be.
TEST(Schema, AnInPlaceOpsSelfIsNeverExpanded) {
  const OpEntry* triu = findOp("triu_");
  ASSERT_NE(triu, nullptr);
  ASSERT_EQ(triu->judging.mode, "inplace");
  const auto g = triu->sample({"float32", {}});
  int expandedElsewhere = 0;
  for (int i = 0; i < 400; ++i) {
    const OpCall c = g(rc::Random(i), 100).value();
    ASSERT_FALSE(c.tensors.empty());
    const auto& self = c.tensors[0];
    for (size_t d = 0; d < self.shape.size(); ++d)
      EXPECT_FALSE(self.strides[d] == 0 && self.shape[d] > 1) << "case " << i << ": " << self.how;
  }
  const OpEntry* add = findOp("add.Tensor");  // a functional op's first tensor is expanded in some cases
  const auto h = add->sample({"float32", {}});
  for (int i = 0; i < 400; ++i)
    expandedElsewhere += h(rc::Random(i), 100).value().tensors[0].how.find("expanded") != std::string::npos;
  EXPECT_GT(expandedElsewhere, 0);
}

// Where the op under test is CPU ATen itself (stock ATen on the CPU), its
// calls are the reference's too: the stage file says "reference" while they
// run, so a process that dies there (LibTorch 1.13's
// max_pool3d_with_indices_backward aborting on a heap the reference stage
// corrupted, found from a default run's random seed) is a health skip, not a
// finding. A module fixture's op is the op under test: "device".
TEST(Ops, WhereTheOpIsCpuATenItsCallsAreTheReferenceStage) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("flagprop-op-stage-" + std::to_string(getpid()))).string();
  const json tanhCase = json::parse(R"({"op": "tanh", "dtype": "float32", "calls": [{
      "args": [{"tensor": 0}], "kwargs": {},
      "tensors": [{"dtype": "float32", "offset": 0, "seed": 3, "shape": [4], "specials": [],
                   "storage": 4, "strides": [1], "values": "normal"}]}]})");
  auto point = [&path](bool on) {
    py::gil_scoped_acquire gil;
    py::dict scope;
    scope["path"] = path;
    scope["on"] = on;
    py::exec(R"(
from flagprop.engine import ops
if on:
    ops._STAGE.clear()
    ops._STAGE.update({"path": path, "fd": None})
else:
    ops._STAGE.clear()
)",
             scope);
  };
  std::vector<std::string> stages;
  for (const char* target : {"aten-cpu", "well-behaved"}) {
    point(true);
    const json r = test::fixtureSession(target).check("op", tanhCase, findOp("tanh")->judging);
    point(false);
    std::string stage = readFile(path).substr(0, 16);
    stage.erase(stage.find_last_not_of(' ') + 1);
    stages.push_back(stage);
    EXPECT_TRUE(r.contains("verdicts")) << target << ": " << r.dump();
  }
  std::filesystem::remove(path);
  EXPECT_EQ(stages, (std::vector<std::string>{"reference", "device"}));
}

// The judging of in-place and view ops has teeth: an in-place op that
// returns a copy of self and a view op that returns a copy are caught, the
// correct ones pass.
TEST(OpTeeth, P6JudgesInPlaceAndViewOpsAsATenAliasesThem) {
  for (const char* op : {"add_.Tensor", "transpose.int"}) {
    const auto good = test::runFixtureOp("ops-schema-modes", "P6", op, "float32", 40);
    EXPECT_EQ(good.status, "pass") << op << ": " << good.reason;
    const auto bad = test::runFixtureOp("ops-schema-modes-mutant", "P6", op, "float32", 40);
    EXPECT_EQ(bad.status, "fail") << op;
    EXPECT_NE(bad.reason.find("does not share storage with input 0"), std::string::npos) << bad.reason;
  }
}

// The schema is the contract on aliasing. atleast_1d's return carries no
// alias annotation, so fresh storage is within it although ATen returns its
// input itself (as CUDA's channel_shuffle does with one group): P6 holds and
// the case's class says so. Judged by what ATen did instead, P6 failed.
TEST(OpTeeth, FreshStorageWhereTheSchemaReturnsANewTensorIsNoFinding) {
  const auto o = test::runFixtureOp("ops-schema-modes", "P6", "atleast_1d", "float32", 40);
  EXPECT_EQ(o.status, "pass") << o.reason;
  bool noted = false;
  for (const auto& d : o.observations.value("distribution", json::array()))
    noted |= d.value("class", "").find("fresh storage where ATen's output is a view") != std::string::npos;
  EXPECT_TRUE(noted) << o.observations.dump();
}

// A fault planted on a storage offset, with 15 of 16 calls from a layout
// palette: the counterexample shrinks to a minimal layout (one element or a
// 0-d view at offset 1), not to the palette's shape.
// A recorded OpInfo sample keeps its shapes, its arguments and the values
// it must keep (an index, a given factor); the sample index shrinks to the
// smallest; a malformed sample is refused.
TEST(OpInfo, SamplerKeepsShapesArgumentsAndGivenValues) {
  const json samples = json::parse(R"([
    {"tensors": [{"shape": [2, 3], "dtype": "run"}, {"shape": [2], "dtype": "int64", "data": [2, 0]}],
     "args": [{"tensor": 0}, {"tensor": 1}], "kwargs": {"reduction": 1}},
    {"tensors": [{"shape": [4, 5], "dtype": "run", "data": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]}],
     "args": [{"tensor": 0}, 3], "kwargs": {}}])");
  const Sampler s = opinfoSampler(std::make_shared<const json>(samples));
  gen::LayoutLimits lim;
  lim.maxElements = 4096;
  rc::Random random(11);
  std::set<std::vector<int64_t>> shapes;
  for (int i = 0; i < 60; ++i) {
    const auto shrinkable = s({"float16", lim})(random.split(), rc::kNominalSize);
    const OpCall c = shrinkable.value();
    ASSERT_FALSE(c.tensors.empty());
    shapes.insert(c.tensors[0].shape);
    EXPECT_EQ(c.tensors[0].dtype, "float16") << "a run tensor is in the run's dtype";
    if (c.tensors.size() == 2) {
      EXPECT_EQ(c.args, json::array({{{"tensor", 0}}, {{"tensor", 1}}}));
      EXPECT_EQ(c.kwargs, json({{"reduction", 1}}));
      EXPECT_EQ(c.tensors[1].dtype, "int64");
      EXPECT_EQ(c.tensors[1].values, "given");
      ASSERT_TRUE(c.tensors[1].data);
      EXPECT_EQ(*c.tensors[1].data, json::array({2, 0}));
    } else {
      EXPECT_EQ(c.tensors[0].values, "given") << "values the op needs are kept";
      EXPECT_EQ(c.args.at(1), 3);
      // Shrinking the sample index reaches the smallest sample.
      bool toSmallest = false;
      auto seq = shrinkable.shrinks();
      while (const auto next = seq.next()) toSmallest |= next->value().tensors.size() == 2;
      EXPECT_TRUE(toSmallest);
    }
  }
  EXPECT_EQ(shapes, (std::set<std::vector<int64_t>>{{2, 3}, {4, 5}}));
  lim.maxElements = 10;
  EXPECT_EQ(fittingSamples(samples, lim.maxElements), 1u);
  EXPECT_THROW(opinfoSampler(std::make_shared<const json>(
                   json::parse(R"([{"tensors": [{"shape": [2], "dtype": "int64"}], "args": []}])"))),
               std::invalid_argument)
      << "an index without its values";
  EXPECT_THROW(opinfoSampler(std::make_shared<const json>(
                   json::parse(R"([{"tensors": [{"shape": [2], "dtype": "run", "data": [1]}], "args": []}])"))),
               std::invalid_argument)
      << "data that does not match the shape";
}

// The bank is built by a child interpreter of the same Python that finds
// the same torch (an embedded interpreter's sys.executable may be another
// Python on PATH, without torch).
TEST(OpInfo, TheBuilderInterpreterFindsThisTorch) {
  py::gil_scoped_acquire gil;
  py::dict scope;
  py::exec(R"PY(
import subprocess, torch
from flagprop.engine import opinfo
exe = opinfo.python_executable()
p = subprocess.run([exe, "-c", "import torch; print(torch.__version__)"], env=opinfo._child_env(),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
got = p.stdout.decode().strip().splitlines()[-1:] == [torch.__version__]
)PY",
           scope);
  EXPECT_TRUE(scope["got"].cast<bool>());
}

// mm: the schema's samples are two tensors of any ranks, which CPU ATen
// rejects nearly always; the run falls back to OpInfo's samples and judges
// it, and a dropped term is caught on them.
TEST(OpTeeth, OpInfoSamplesFeedAnOpTheSchemaCannot) {
  for (const char* p : {"P5", "P6"}) {
    const auto o = runOp("ops-opinfo-mm", p, "mm", "float32", 30);
    EXPECT_EQ(o.status, "pass") << p << ": " << o.reason;
    EXPECT_EQ(o.casesRun, 30) << p;
    EXPECT_EQ(o.observations.value("sampler", ""), "opinfo") << p << ": " << o.observations.dump();
    EXPECT_NE(o.reason.find("OpInfo's samples"), std::string::npos) << o.reason;
  }
  const auto o = runOp("ops-opinfo-mm-drops-term", "P5", "mm", "float32", 30);
  ASSERT_EQ(o.status, "fail") << o.reason;
  const auto& t = o.counterexample.at("calls").at(0).at("tensors");
  EXPECT_EQ(t.at(0).at("shape").at(1), t.at(1).at("shape").at(0)) << "a valid mm call: " << t.dump();
  EXPECT_GT(t.at(0).at("shape").at(1).get<int>(), 1) << "the inner size the fault needs";
}

TEST(OpTeeth, APaletteCallShrinksLikeAFreeOne) {
  for (const char* dtype : {"float32", "bfloat16"}) {
    const auto o = test::runFixtureOp("ops-ignores-offset-palette", "P5", "tanh", dtype, 100);
    ASSERT_EQ(o.status, "fail") << o.reason;
    const json& calls = o.counterexample.at("calls");
    ASSERT_EQ(calls.size(), 1u) << o.counterexample.dump();
    const json& t = calls.at(0).at("tensors").at(0);
    int64_t numel = 1;
    for (const auto& s : t.at("shape")) numel *= s.get<int64_t>();
    EXPECT_LE(numel, 1) << t.dump();
    EXPECT_EQ(t.at("offset"), 1) << t.dump();
  }
}

// Two independent faults in one op (tanh rejects 0-d inputs, and reads from
// storage offset 0): P5 reports both, each shrunk on its own, instead of
// stopping at the first.
TEST(OpTeeth, TwoDistinctFaultsInOneOpAreBothReportedEachShrunk) {
  const auto o = test::runFixtureOp("ops-two-faults", "P5", "tanh", "float32", 100);
  ASSERT_EQ(o.status, "fail") << o.reason;
  ASSERT_TRUE(o.observations.contains("distinct_failures")) << o.observations.dump();
  const json& more = o.observations.at("distinct_failures");
  ASSERT_EQ(more.size(), 1u) << more.dump();
  std::set<std::string> kinds;
  std::vector<json> cases = {o.counterexample, more[0].at("counterexample")};
  for (const auto& k : more[0].at("kinds")) kinds.insert(k.get<std::string>());
  // A values finding is kinded by its input class too ("values (storage offset)").
  EXPECT_TRUE(kinds.count("values (storage offset)") || kinds.count("raised AssertionError: Invalid dim"))
      << more.dump();
  bool zeroD = false, offset = false;
  for (const auto& c : cases) {
    ASSERT_EQ(c.at("calls").size(), 1u) << c.dump();
    const json& t = c.at("calls").at(0).at("tensors").at(0);
    zeroD |= t.at("shape").empty() && t.at("offset") == 0;
    offset |= t.at("shape") == json::array({1}) && t.at("offset") == 1;
  }
  EXPECT_TRUE(zeroD && offset) << o.counterexample.dump() << "\n" << more[0].at("counterexample").dump();
}

TEST(OpTeeth, WellBehavedOpsPassP5AndP6ForEveryOpAndDtype) {
  auto& s = test::fixtureSession("well-behaved");
  const auto runs = opRuns(s, {findProperty("P5"), findProperty("P6")}, Selection{});
  ASSERT_EQ(runs.size(), 2u * 39);
  for (const auto& run : runs) {
    const auto o = runProperty(run, test::fixedSeed(25));
    EXPECT_EQ(o.status, "pass") << o.key() << ": " << o.reason << "\n" << o.counterexample.dump();
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

// In float16 too, where LibTorch 1.13's CPU tanh has no kernel: the
// float64 reference judges it, and a failing case is not discarded for the
// same-dtype call raising again.
TEST(OpTeeth, P5CatchesAnOpIgnoringTheStorageOffset) {
  for (const char* dtype : {"bfloat16", "float16"}) {
    EXPECT_EQ(runOp("ops-ignores-offset", "P6", "tanh", dtype).status, "pass") << dtype;
    const auto o = runOp("ops-ignores-offset", "P5", "tanh", dtype);
    ASSERT_EQ(o.status, "fail") << dtype << ": " << o.reason;
    EXPECT_GT(o.counterexample.at("calls").at(0).at("tensors").at(0).at("offset").get<int64_t>(), 0) << dtype;
  }
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
  for (const auto& s : first.counterexample.at("calls").back().at("tensors").at(0).at("shape"))
    numel *= s.get<int64_t>();
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
  const json obs = judgeOpCase("ops-fast-path-off", c).at("evidence");
  EXPECT_EQ(obs.at("fast_path"), "inactive");
  EXPECT_NE(obs.at("patched_vs_unpatched").get<std::string>().find("not compared"), std::string::npos);
  EXPECT_TRUE(obs.at("numerics").empty()) << obs.dump(2);
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

// P8: an installed fast path that takes none of the op's launches is caught;
// one that takes them passes with the counts; without a fast path the counts
// say how often the stock run was entered.
TEST(OpTeeth, P8CatchesAFastPathThatIsNeverTaken) {
  const auto o = test::runFixtureOp("ops-never-fast", "P8", "add.Tensor", "float32", 10);
  ASSERT_EQ(o.status, "fail") << o.reason;
  EXPECT_NE(o.reason.find("none of the op's 1 LibEntry launch(es) after warm-up took it"), std::string::npos)
      << o.reason;
  ASSERT_EQ(o.observations.at("kernels").size(), 1u) << o.observations.dump();  // [{name, run, run_stock, ...}]
  EXPECT_EQ(o.observations.at("kernels").at(0).at("name"), "add_Tensor_kernel");
  EXPECT_EQ(o.observations.at("kernels").at(0).at("run_stock"), 1);
  EXPECT_EQ(test::runFixture("ops-never-fast", "P1", 20).status, "pass") << "P1 sees a properly installed patch";
  const auto good = test::runFixtureOp("well-behaved", "P8", "add.Tensor", "float32", 10);
  ASSERT_EQ(good.status, "pass") << good.reason;
  EXPECT_GT(good.observations.at("hits").at("fast_runs").get<int>(), 0) << good.observations.dump();
  EXPECT_EQ(good.observations.at("hits").at("fast_runs"), good.observations.at("hits").at("runs"));
  // With the fast path off there is nothing to count: no case is judged, and that is a skip, not a pass.
  const auto off = test::runFixtureOp("ops-fast-path-off", "P8", "tanh", "float32", 5);
  EXPECT_EQ(off.status, "skip") << off.reason;
  EXPECT_NE(off.reason.find("not judged: fast path"), std::string::npos) << off.reason;
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

// P7 on the mock stream model: a fast path that keeps launching a cached
// kernel on the stream of its first launch is caught; the well-behaved one
// follows every switch.
TEST(OpTeeth, P7CatchesAStaleStream) {
  const auto o = test::runFixtureOp("ops-stale-stream", "P7", "add.Tensor", "float32", 10);
  ASSERT_EQ(o.status, "fail") << o.reason;
  EXPECT_NE(o.reason.find("launched on the old one (a stale stream)"), std::string::npos) << o.reason;
  EXPECT_FALSE(o.observations.at("switch_follows_the_stream").get<bool>());
  EXPECT_TRUE(o.observations.at("ordered_after_earlier_work").get<bool>());
  const auto good = test::runFixtureOp("well-behaved", "P7", "add.Tensor", "float32", 10);
  EXPECT_EQ(good.status, "pass") << good.reason;
  EXPECT_EQ(test::runFixtureOp("well-behaved", "P7", "native_layer_norm", "float16", 5).status, "pass");
}

}  // namespace
}  // namespace flagprop

namespace flagprop {
namespace {

json hostTiming(TargetSession& s) {
  Selection sel;
  sel.properties = {"P9/tanh/float32"};
  const auto runs = opRuns(s, {findProperty("P9")}, sel);
  const auto o = runProperty(runs.at(0), test::fixedSeed(1));
  EXPECT_EQ(o.status, "pass") << o.reason;
  return o.observations.at("timing").at("summary").at("host");
}

// Sums are allowed the worst-case rounding error of a float32 accumulation
// of their terms (verdicts.accumulation_bound): a sum of 1024 terms that are
// two values repeated 512 times (an expanded input) is 0.0063 off in CPU
// ATen's own float32 sum, beyond the old atol 1e-4 * sqrt(n) (a false
// positive on stock ATen, found from a default run's seed). A sum that leaves
// out one term is still caught.
TEST(OpTeeth, SumsMayRoundAsAFloat32AccumulationButNotDropATerm) {
  const json repeated = json::parse(R"({"op": "sum.dim_IntList", "dtype": "float32", "calls": [{
      "args": [{"tensor": 0}, [0, 3, 4], false], "kwargs": {},
      "tensors": [{"dtype": "float32", "offset": 1, "seed": 1, "shape": [64, 8, 1, 8, 2], "specials": [],
                   "storage": 116, "strides": [0, 16, 8, 0, 2], "values": "normal"}]}]})");
  const json r = test::fixtureSession("aten-cpu").check("op", repeated, findOp("sum.dim_IntList")->judging);
  EXPECT_TRUE(r.at("evidence").at("numerics").empty()) << r.at("evidence").at("numerics").dump();
  const auto dropped = test::runFixtureOp("ops-sum-drops-element", "P5", "sum.dim_IntList", "float32", 100);
  ASSERT_EQ(dropped.status, "fail") << dropped.reason;
  EXPECT_NE(dropped.reason.find("with the accumulation's rounding bound"), std::string::npos) << dropped.reason;
  EXPECT_EQ(test::runFixtureOp("well-behaved", "P5", "sum.dim_IntList", "float32", 100).status, "pass");
}

// In float16 an element whose value CPU ATen's own answer changes on between
// float32 and float64 compute is no finding: native_layer_norm with an
// expanded weight of -inf gives -inf or +inf by the sign of x - mean next to
// 0 (CPU ATen: -inf in float64, +inf in float32; the well-behaved op, which
// computes in float32 as Triton kernels do, +inf). Found by the default run
// with a random seed.
TEST(OpTeeth, AnElementNotSettledAtFloat32IsNoFinding) {
  const json c = json::parse(R"({"op": "native_layer_norm", "dtype": "float16", "calls": [{
      "args": [{"tensor": 0}, [8], {"tensor": 1}, {"tensor": 2}, 1e-06], "kwargs": {},
      "tensors": [{"dtype": "float16", "how": "permuted+offset", "offset": 7, "seed": 743877, "shape": [8, 3, 101, 8],
                   "specials": [], "storage": 19399, "strides": [2424, 1, 24, 3], "values": "normal"},
                  {"dtype": "float16", "how": "expanded", "offset": 0, "seed": 0, "shape": [8],
                   "specials": [[0, "-0"], [0, "-inf"]], "storage": 1, "strides": [0], "values": "normal"},
                  {"dtype": "float16", "how": "contiguous", "offset": 0, "seed": 0, "shape": [8], "specials": [],
                   "storage": 8, "strides": [1], "values": "normal"}]}]})");
  const json r = test::fixtureSession("well-behaved").check("op", c, findOp("native_layer_norm")->judging);
  EXPECT_TRUE(r.at("evidence").at("numerics").empty()) << r.at("evidence").at("numerics").dump();
}

// In float16 and bfloat16 an output close to CPU ATen's own answer in the
// dtype is within the contract (verdicts.judging_for: LibTorch's half-
// precision CPU kernels differ from the float64 answer by more than the
// dtype's resolution), yet a dropped term is still a finding there.
TEST(OpTeeth, HalfPrecisionRunsStillCatchADroppedTerm) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    const auto dropped = test::runFixtureOp("ops-sum-drops-element", "P5", "sum.dim_IntList", dtype, 100);
    ASSERT_EQ(dropped.status, "fail") << dtype << ": " << dropped.reason;
    EXPECT_NE(dropped.reason.find("CPU ATen in " + std::string(dtype) + " differs from it as well"), std::string::npos)
        << dropped.reason;
    EXPECT_EQ(test::runFixtureOp("well-behaved", "P5", "sum.dim_IntList", dtype, 100).status, "pass") << dtype;
  }
}

// The stage file (what the case in flight is doing, which the parent reads
// to stop a hanging CPU reference early and to tell a reference crash from
// the op's) is the case's own: every case starts with none, so that a P7 /
// P8 / P9 case after an op case that ended in its reference is not taken
// for a reference that hangs.
TEST(OpTeeth, EveryCaseStartsWithoutTheLastCasesStage) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("flagprop-test-stage-" + std::to_string(getpid()))).string();
  writeText(path, "reference       ");
  auto opts = test::fixedSeed(1);
  opts.stagePath = path;
  const auto o = runProperty(installerRun(test::fixtureSession("well-behaved"), *findProperty("P1")), opts);
  EXPECT_EQ(o.status, "pass") << o.reason;
  EXPECT_EQ(readFile(path), "");
  std::filesystem::remove(path);
}

// The 10th percentile of what the mock's stock runs took since
// `clearStockRuns`, µs per call, from entry to return: the same statistic
// as P9's p10_delta_us, which a loaded or noisy host disturbs least.
double p10StockRunUs() {
  py::gil_scoped_acquire gil;
  auto took = py::module_::import("flagprop_mocks.libentry").attr("STOCK_RUN_US").cast<std::vector<double>>();
  if (took.empty()) return 0;
  std::nth_element(took.begin(), took.begin() + took.size() / 10, took.end());
  return took[took.size() / 10];
}

void clearStockRuns() {
  py::gil_scoped_acquire gil;
  py::module_::import("flagprop_mocks.libentry").attr("STOCK_RUN_US").attr("clear")();
}

// Replaces Python's time.perf_counter, for its lifetime, with a virtual
// clock that moves one tick (2^-20 s, about 0.95 µs: a binary fraction, so
// sums of ticks are exact) each time it is read. Host time is then a count
// of reads: the same on an idle machine and a loaded one.
class VirtualClock {
 public:
  static constexpr double kTickUs = 1e6 / (1 << 20);
  VirtualClock() {
    py::gil_scoped_acquire gil;
    time_ = py::module_::import("time");
    real_ = time_.attr("perf_counter");
    py::dict scope;
    py::exec(R"(
import itertools
_ticks = itertools.count(1)
def perf_counter():
    return next(_ticks) / 1048576.0
)",
             scope);
    time_.attr("perf_counter") = scope["perf_counter"];
  }
  ~VirtualClock() {
    py::gil_scoped_acquire gil;
    time_.attr("perf_counter") = real_;
  }
  VirtualClock(const VirtualClock&) = delete;
  VirtualClock& operator=(const VirtualClock&) = delete;

 private:
  py::object time_, real_;
};

// P9's calibration: the mock's stock run spends a known delay per call
// (100 µs asked, spun on the clock) that the fast run skips. Patch off minus
// patch on, less the same difference without the delay, must equal the
// delay's whole cost to the stock path: the stock run with the delay less
// the one without (10th percentiles, as P9's delta), measured inside the
// mock. On the virtual clock both sides are exact counts, so they must agree
// to a tick per call; a P9 that swapped A and B, timed outside its loop,
// divided by the wrong number of calls or paired the wrong samples would
// not. (The same calibration on the real clock is a figure that
// flagprop_bench prints, not a test: a loaded CI host moves it by 10 %.)
TEST(Timing, P9MeasuresAKnownHostDelayToATickOnAVirtualClock) {
  auto& delayed = test::fixtureSession("ops-timing-calibration");
  json j = json::parse(readFile(fixturesDir() + "/targets/ops-timing-calibration.json"));
  const double asked = j["flag_gems"]["mock"]["run_delay_us"].get<double>();
  ASSERT_GE(asked, 50.0) << "the calibration needs a delay long enough to dwarf the Python around it";
  j["flag_gems"]["mock"]["run_delay_us"] = 0;
  j["name"] = "timing-baseline";
  TargetSession baseline(parseTarget(j, fixturesDir() + "/targets/baseline.json", fixturesDir() + "/targets"));
  baseline.setupOps({});
  VirtualClock clock;
  clearStockRuns();
  const double withDelay = hostTiming(delayed).at("p10_delta_us").get<double>();
  const double slow = p10StockRunUs();
  clearStockRuns();
  const double without = hostTiming(baseline).at("p10_delta_us").get<double>();
  const double fast = p10StockRunUs();
  ASSERT_GE(slow, asked) << "the mock's delayed runs did not run (or not for the delay asked)";
  ASSERT_LT(fast, asked) << "the baseline's stock runs spun the delay too";
  const double delta = withDelay - without, cost = slow - fast;
  RecordProperty("measured_us", std::to_string(delta));
  RecordProperty("cost_us", std::to_string(cost));
  EXPECT_GE(delta, asked - VirtualClock::kTickUs);
  EXPECT_NEAR(delta, cost, VirtualClock::kTickUs) << "with the delay minus without, µs: " << withDelay << " - "
                                                  << without << " (cost " << slow << " - " << fast << ")";
}

TEST(Timing, P9RefusesWhenThePatchIsNotActiveAndSaysWhy) {
  const auto o = test::runFixtureOp("ops-timing-refused", "P9", "tanh", "float32", 1);
  EXPECT_EQ(o.status, "skip");
  EXPECT_NE(o.reason.find("refused: P1 does not show the patch active"), std::string::npos) << o.reason;
  const auto never = test::runFixtureOp("ops-never-fast", "P9", "tanh", "float32", 1);
  EXPECT_EQ(never.status, "skip");
  EXPECT_NE(never.reason.find("refused: P8 shows no fast hits"), std::string::npos) << never.reason;
}

}  // namespace
}  // namespace flagprop
