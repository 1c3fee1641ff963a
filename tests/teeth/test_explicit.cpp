// The explicit examples (catalog/examples.h, the explicit phase of a
// property run): at 3 generated cases per op and dtype, only they reach the
// edges of fixtures/ops/edge_ops.py, and each edge fault is caught, shrunk
// and named; with no fault the same ops hold on every example.
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

#include <set>

namespace flagprop {
namespace {

// The explicit examples that failed in `o`: the first, and those of its
// distinct failures.
std::set<std::string> failedExamples(const PropertyOutcome& o) {
  std::set<std::string> out;
  const json ex = o.observations.value("explicit", json::object());
  if (ex.contains("failed")) out.insert(ex.at("failed").get<std::string>());
  for (const auto& d : o.observations.value("distinct_failures", json::array()))
    if (d.value("observations", json::object()).contains("explicit"))
      out.insert(d.at("observations").at("explicit").value("failed", std::string()));
  return out;
}

bool anyStartsWith(const std::set<std::string>& names, const std::string& prefix) {
  for (const auto& n : names)
    if (n.rfind(prefix, 0) == 0) return true;
  return false;
}

struct Edge {
  const char* op;
  const char* dtype;
  const char* example;  // the example (a prefix of its name) that must fail
};

// Every edge fault is caught at 3 generated cases, by the explicit example
// built for it: a 0-d input, an empty reduced dim, size-1 dims, a 0-d bias
// (an OpInfo sample), 65,537 scanned rows, beta=0 with a non-finite bias,
// values past float32, a 0-d loss gradient. (ceil_mode=True is reached by
// the samples that draw it, which edge_ops.py's docstring names.)
TEST(Explicit, EveryEdgeFaultIsCaughtAtThreeCases) {
  const Edge edges[] = {
      {"cumsum", "float32", "0-d"},
      {"cumsum", "float32", "65,537 rows"},
      {"prod.dim_int", "float32", "empty dim"},
      {"sort", "float32", "size-1 dims"},
      {"addmm", "float32", "OpInfo sample"},
      {"addmm", "float32", "OpInfo sample 0, beta=0.0, NaN, inf and -0"},
      {"add.Tensor", "int64", "values past float32"},
      {"mse_loss_backward", "float32", "0-d"},
  };
  for (const auto& e : edges) {
    const PropertyOutcome o = test::runFixtureOp("ops-edge-faults", "P5", e.op, e.dtype, 3);
    ASSERT_EQ(o.status, "fail") << e.op << " " << e.dtype << ": " << o.reason;
    const auto failed = failedExamples(o);
    EXPECT_TRUE(anyStartsWith(failed, e.example))
        << e.op << " " << e.dtype << " missed " << e.example << "; failed: " << json(failed).dump();
    EXPECT_NE(o.reason.find("found by the explicit example"), std::string::npos) << o.reason;
  }
  const PropertyOutcome pool = test::runFixtureOp("ops-edge-faults", "P5", "max_pool2d_with_indices", "float32", 3);
  EXPECT_EQ(pool.status, "fail") << pool.reason;
  EXPECT_NE(pool.reason.find("ceil_mode is not supported"), std::string::npos) << pool.reason;
}

// A failing explicit example is shrunk within its edge: the 0-d cumsum stays
// 0-d, and its counterexample is one call of one element.
TEST(Explicit, AFailingExampleShrinksWithinItsEdge) {
  const PropertyOutcome o = test::runFixtureOp("ops-edge-faults", "P5", "cumsum", "float32", 3);
  ASSERT_EQ(o.status, "fail") << o.reason;
  const json& calls = o.counterexample.at("calls");
  ASSERT_EQ(calls.size(), 1u) << o.counterexample.dump();
  EXPECT_EQ(calls.at(0).at("tensors").at(0).at("shape"), json::array()) << o.counterexample.dump();
  EXPECT_NE(o.reproduce.size(), 0u);
  // Its reproduce string replays the explicit example, not a generated case.
  RunOptions replay;
  replay.reproduce = o.reproduce;
  Selection sel;
  sel.properties = {"P5/cumsum/float32"};
  const auto runs = opRuns(test::fixtureSession("ops-edge-faults"), {findProperty("P5")}, sel);
  ASSERT_EQ(runs.size(), 1u);
  const PropertyOutcome again = runProperty(runs[0], replay);
  EXPECT_EQ(again.status, "fail") << again.reason;
  EXPECT_EQ(again.counterexample, o.counterexample);
}

// With no fault the same ops hold on every explicit example (each judged,
// none failing), and the examples do not count among the generated cases.
TEST(Explicit, TheSameOpsWithoutFaultsHoldOnEveryExample) {
  for (const char* op : {"cumsum", "prod.dim_int", "sort", "addmm", "mse_loss_backward"}) {
    const PropertyOutcome o = test::runFixtureOp("ops-edge-clean", "P5", op, "float32", 3);
    EXPECT_EQ(o.status, "pass") << op << ": " << o.reason;
    EXPECT_EQ(o.casesRun, 3) << op;
    const json ex = o.observations.value("explicit", json::object());
    EXPECT_GT(ex.value("held", 0), 5) << op << ": " << ex.dump();
    EXPECT_FALSE(ex.contains("failed")) << op << ": " << ex.dump();
  }
}

// A run that judged nothing is no pass: an op that raises on every call,
// in a dtype CPU ATen has no kernel for either (float16 tanh in LibTorch
// 1.13), is a skip that says so; it was "pass, 10 cases held".
TEST(HonestCount, AnOpRaisingWhereAtenHasNoKernelIsASkipNotAPass) {
  for (const char* p : {"P5", "P6"}) {
    const PropertyOutcome o = test::runFixtureOp("ops-raises-no-kernel", p, "tanh", "float16", 10);
    EXPECT_EQ(o.status, "skip") << p << ": " << o.reason;
    EXPECT_NE(o.reason.find("not run in float16"), std::string::npos) << o.reason;
    EXPECT_NE(o.reason.find("nothing judged"), std::string::npos) << o.reason;
  }
}

}  // namespace
}  // namespace flagprop
