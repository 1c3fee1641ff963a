// The op catalog and the layout generators: reachability of the seed case
// and of every layout kind, the palette, the schema-derived samplers, the
// reference stage and OpInfo's samples. Tests of the Python functions alone
// are in tests/unit/*.py; the teeth of P5 - P8 in tests/teeth/test_op_teeth.cpp.
#include "catalog/opinfo_sampler.h"
#include "catalog/schema_ops.h"
#include "core/files.h"
#include "core/tensor_bridge.h"
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace flagprop {
namespace {

using test::judgeOpCase;

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

}  // namespace
}  // namespace flagprop
