// The coverage table of a target's op results (reports/report.h,
// opCoverage) and the op families it groups by (catalog/families.h).
#include "reports/report.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace flagprop {
namespace {

// The coverage table: every op counted once per family ("all") and once per
// family and dtype, each in one standing, with the reasons counted.
TEST(Coverage, FamiliesAndDtypesCountEveryOpOnce) {
  EXPECT_EQ(opFamily("mm"), "linear algebra");
  EXPECT_EQ(opFamily("addmm_"), "linear algebra");
  EXPECT_EQ(opFamily("convolution_backward"), "nn");
  EXPECT_EQ(opFamily("nll_loss_forward.output"), "nn");
  EXPECT_EQ(opFamily("sum.dim_IntList"), "reduction and scan");
  EXPECT_EQ(opFamily("index_select.out"), "index");
  EXPECT_EQ(opFamily("transpose.int"), "shape, copy and creation");
  EXPECT_EQ(opFamily("tanh_backward"), "pointwise");
  EXPECT_EQ(opFamily("add.Tensor"), "pointwise");
  // --jobs takes the costliest families first.
  EXPECT_LT(opCostRank("mm"), opCostRank("conv2d"));
  EXPECT_LT(opCostRank("conv2d"), opCostRank("sum.dim_IntList"));
  EXPECT_LT(opCostRank("sum.dim_IntList"), opCostRank("add.Tensor"));
  EXPECT_LT(opCostRank("add.Tensor"), opCostRank("index_select"));
  EXPECT_LT(opCostRank("index_select"), opCostRank("transpose.int"));
  auto r = [](const std::string& op, const std::string& dtype, const std::string& status, const std::string& reason) {
    return json{{"op", op}, {"dtype", dtype}, {"property", "P5"}, {"status", status}, {"reason", reason}};
  };
  const json target = {
      {"results",
       {r("add.Tensor", "float32", "pass", "ok"), r("add.Tensor", "int32", "fail", "values"),
        r("mm", "float32", "skip", "health: gave up after 0 cases; no fallback: OpInfo's samples reach no call of mm"),
        r("mm", "int32", "skip", "not run in int32: ..."), r("sum.dim_IntList", "float32", "skip", "excluded: why"),
        r("conv2d", "float32", "skip", "health: CPU ATen (the reference) ended the process (signal 11)")}}};
  const json c = opCoverage(target);
  EXPECT_EQ(c.at("ops"), 4);
  EXPECT_EQ(c.at("fail"), 1);
  EXPECT_EQ(c.at("gave_up"), 2);
  EXPECT_EQ(c.at("excluded"), 1);
  std::map<std::pair<std::string, std::string>, json> rows;
  for (const auto& row : c.at("by_family")) rows[{row.at("family"), row.at("dtype")}] = row;
  const json& pw = rows.at({"pointwise", "all"});
  EXPECT_EQ(pw.at("ops"), 1);
  EXPECT_EQ(pw.value("fail", 0), 1) << pw.dump();
  EXPECT_EQ(rows.at({"pointwise", "float32"}).value("pass", 0), 1);
  EXPECT_EQ(rows.at({"pointwise", "int32"}).value("fail", 0), 1);
  const json& la = rows.at({"linear algebra", "float32"});
  EXPECT_EQ(la.value("gave_up", 0), 1);
  EXPECT_EQ(la.at("gave_up_because").begin().key(), "CPU ATen rejected the schema's samples; OpInfo has none");
  EXPECT_EQ(rows.at({"linear algebra", "int32"}).value("excluded", 0), 1) << "a dtype ATen does not take";
  EXPECT_EQ(rows.at({"nn", "all"}).at("gave_up_because").begin().key(), "CPU ATen ended the process on its samples");
  EXPECT_EQ(rows.at({"reduction and scan", "all"}).value("excluded", 0), 1);
  for (const auto& row : c.at("by_family"))
    EXPECT_EQ(row.value("ops", 0),
              row.value("pass", 0) + row.value("fail", 0) + row.value("gave_up", 0) + row.value("excluded", 0))
        << row.dump();
}

// Where the time went per family: the runs' seconds, the part spent
// shrinking (the first failure's and each distinct one's), the Triton
// compilations and the cases' seconds in the op, the reference and flagprop,
// summed over the family's results, in "all" and per dtype; and the slowest op.
TEST(Coverage, FamiliesSumTheirRunsSecondsShrinkingAndCompilations) {
  auto r = [](const std::string& op, const std::string& dtype, double seconds, json obs) {
    return json{{"op", op},           {"dtype", dtype},     {"property", "P5"},   {"status", "fail"},
                {"reason", "values"}, {"seconds", seconds}, {"observations", obs}};
  };
  const json target = {
      {"results",
       {r("add.Tensor", "float32", 2.5, {{"stats", {{"compilations", 3}}}, {"shrink", {{"seconds", 1.5}}}}),
        r("add.Tensor", "float16", 4.0,
          {{"stats", {{"compilations", 5}}},
           {"shrink", {{"seconds", 1.0}}},
           {"distinct_failures", {{{"observations", {{"shrink", {{"seconds", 0.25}}}}}}}}}),
        r("mm", "float32", 7.0, {{"stats", {{"compilations", 11}}}}),
        // 400 cases of 5,000 µs: 2 s, a quarter in the op, half in the reference, a quarter in flagprop
        r("mul.Tensor", "float32", 3.0,
          {{"stats",
            {{"cases_executed", 400},
             {"us_per_case", 5000.0},
             {"share", {{"device_op", 0.25}, {"reference", 0.5}, {"harness", 0.25}}}}}})}}};
  std::map<std::pair<std::string, std::string>, json> rows;
  const json c = opCoverage(target);
  for (const auto& row : c.at("by_family")) rows[{row.at("family"), row.at("dtype")}] = row;
  const json& pw = rows.at({"pointwise", "all"});
  EXPECT_DOUBLE_EQ(pw.at("seconds").get<double>(), 9.5);
  EXPECT_DOUBLE_EQ(pw.at("shrink_seconds").get<double>(), 2.75);
  EXPECT_EQ(pw.at("compilations"), 8);
  EXPECT_DOUBLE_EQ(rows.at({"pointwise", "float16"}).at("shrink_seconds").get<double>(), 1.25);
  EXPECT_EQ(rows.at({"linear algebra", "float32"}).at("compilations"), 11);
  EXPECT_DOUBLE_EQ(rows.at({"linear algebra", "all"}).at("shrink_seconds").get<double>(), 0.0);
  EXPECT_EQ(pw.at("case_seconds"), (json{{"op", 0.5}, {"reference", 1.0}, {"flagprop", 0.5}}));
  EXPECT_EQ(rows.at({"linear algebra", "all"}).at("case_seconds"),
            (json{{"op", 0.0}, {"reference", 0.0}, {"flagprop", 0.0}}))
      << "no stats: nothing known, nothing made up";
  EXPECT_EQ(pw.at("slowest"), (json{{"op", "add.Tensor"}, {"seconds", 6.5}})) << "over its dtypes";
  EXPECT_EQ(rows.at({"pointwise", "float32"}).at("slowest"), (json{{"op", "mul.Tensor"}, {"seconds", 3.0}}));
  const std::string md = familyTable(c);  // report.md's table
  EXPECT_NE(
      md.find("| pointwise | all | 2 | 2 | 0 | 2 | 0 |  | 0 | 9.5 | 2.8 | 8 | 0.5 / 1.0 / 0.5 | add.Tensor (6.5) |"),
      std::string::npos)
      << md;
  EXPECT_EQ(familyTable(json::object()), "");
}

}  // namespace
}  // namespace flagprop
