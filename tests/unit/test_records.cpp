// The typed records of core/records.h read what the writers write: a
// result as PropertyOutcome::toJson and the supervisor write it, its
// observations as suites/property.cpp and the example database write them.
#include "core/records.h"
#include "reports/report.h"
#include "suites/property.h"
#include "suites/registry.h"

#include <gtest/gtest.h>

namespace {

using flagprop::json;

flagprop::PropertyOutcome failingOutcome() {
  flagprop::PropertyOutcome o;
  o.property = "P5";
  o.title = "numerics";
  o.op = "tanh";
  o.dtype = "float16";
  o.status = "flaky";
  o.reason = "flaky: output 0 differs";
  o.casesRun = 17;
  o.seconds = 2.5;
  o.counterexample = {{"op", "tanh"}, {"calls", json::array()}};
  o.reproduce = "abc";
  o.observations = {
      {"shrink",
       {{"tried", 9}, {"accepted", 3}, {"discarded", 2}, {"seconds", 1.25}, {"stopped", true}, {"budget_s", 1}}},
      {"replays", {{"failed", 2}, {"of", 4}}},
      {"stats", {{"compilations", 7}}},
      {"discarded", 5},
      {"sampler", "opinfo"},
      {"crash", "target process died with signal 11 (Segmentation fault)"},
      {"crash_in", "reference"},
      {"db", {{"replayed", 2}, {"still_failing", {{"file", "x.json"}}}, {"fixed", {{{"stored_at", "t"}}}}}},
      {"distinct_failures",
       {{{"reason", "second"},
         {"reproduce", "def"},
         {"kinds", {"numerics"}},
         {"counterexample", {{"op", "tanh"}}},
         {"observations", {{"shrink", {{"seconds", 0.5}}}}}}}}};
  return o;
}

TEST(Records, AResultReadsBackAsPropertyOutcomeWroteIt) {
  const auto o = failingOutcome();
  const flagprop::ResultRecord r = flagprop::resultRecord(o.toJson());
  EXPECT_EQ(r.key, "P5/tanh/float16");
  EXPECT_EQ(r.property, "P5");
  EXPECT_EQ(r.title, "numerics");
  EXPECT_EQ(r.op, "tanh");
  EXPECT_EQ(r.dtype, "float16");
  EXPECT_EQ(r.status, "flaky");
  EXPECT_EQ(r.reason, o.reason);
  EXPECT_EQ(r.casesRun, 17);
  EXPECT_DOUBLE_EQ(r.seconds, 2.5);
  EXPECT_EQ(r.counterexample, o.counterexample);
  EXPECT_EQ(r.reproduce, "abc");
  EXPECT_EQ(r.replayId(), "P5/tanh/float16");
  EXPECT_TRUE(r.hasOp());
  EXPECT_TRUE(r.failed());
  EXPECT_FALSE(r.expected.has_value());
  EXPECT_FALSE(r.asExpected.has_value());

  const flagprop::Observations& obs = r.observations;
  EXPECT_EQ(obs.raw, o.observations);
  ASSERT_TRUE(obs.shrink.has_value());
  EXPECT_EQ(obs.shrink->tried, 9);
  EXPECT_EQ(obs.shrink->accepted, 3);
  EXPECT_EQ(obs.shrink->discarded, 2);
  EXPECT_TRUE(obs.shrink->stopped);
  EXPECT_DOUBLE_EQ(obs.shrink->budget_s, 1.0);
  ASSERT_TRUE(obs.replays.has_value());
  EXPECT_EQ(obs.replays->failed, 2);
  EXPECT_EQ(obs.replays->of, 4);
  EXPECT_EQ(obs.compilations, 7);
  EXPECT_EQ(obs.discarded, 5);
  EXPECT_EQ(obs.sampler, "opinfo");
  EXPECT_EQ(obs.crash.value_or(""), "target process died with signal 11 (Segmentation fault)");
  EXPECT_EQ(obs.crashIn, "reference");
  ASSERT_TRUE(obs.db.has_value());
  EXPECT_EQ(obs.db->replayed, 2);
  EXPECT_EQ(obs.db->stillFailing.value("file", ""), "x.json");
  EXPECT_EQ(obs.db->fixed.size(), 1u);
  EXPECT_TRUE(obs.db->dropped.empty());
  ASSERT_EQ(obs.distinctFailures.size(), 1u);
  EXPECT_EQ(obs.distinctFailures[0].reason, "second");
  EXPECT_EQ(obs.distinctFailures[0].kinds, json({"numerics"}));
  EXPECT_DOUBLE_EQ(obs.distinctFailures[0].shrink.seconds, 0.5);
  EXPECT_DOUBLE_EQ(obs.shrinkSeconds(), 1.75);  // its own and its distinct failure's
}

TEST(Records, AbsentNullAndOddlyTypedKeysKeepTheirDefaults) {
  const flagprop::ResultRecord r =
      flagprop::resultRecord({{"property", "P1"}, {"status", "pass"}, {"reason", nullptr}, {"observations", nullptr}});
  EXPECT_EQ(r.property, "P1");
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.replayId(), "P1");  // no key: the property
  EXPECT_FALSE(r.hasOp());
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.counterexample.is_null());
  EXPECT_FALSE(r.observations.shrink.has_value());
  EXPECT_FALSE(r.observations.crash.has_value());
  EXPECT_TRUE(r.observations.distinctFailures.empty());
  // Another type than the field's: its default stands, the rest is read.
  const flagprop::ResultRecord odd = flagprop::resultRecord(
      {{"status", 3},
       {"reason", "why"},
       {"reproducer", json::array()},
       {"observations", {{"shrink", {{"tried", "many"}, {"accepted", 2}}}, {"crash", 11}, {"stats", "none"}}}});
  EXPECT_EQ(odd.status, "");
  EXPECT_EQ(odd.reason, "why");
  EXPECT_EQ(odd.reproducer, "");
  ASSERT_TRUE(odd.observations.shrink.has_value());
  EXPECT_EQ(odd.observations.shrink->tried, 0);
  EXPECT_EQ(odd.observations.shrink->accepted, 2);
  EXPECT_FALSE(odd.observations.crash.has_value());
  EXPECT_EQ(odd.observations.compilations, 0);
}

TEST(Records, AMergedReportsResultCarriesWhatItsManifestExpects) {
  auto o = failingOutcome();
  o.status = "fail";
  json target = {{"name", "t"},
                 {"manifest", "/m.json"},
                 {"status", "ok"},
                 {"expect", {{"P5/tanh/float16", "fail"}}},
                 {"results", {o.toJson()}}};
  const json report = flagprop::mergeReport(json::array({target}), {{"flagprop", "flagprop"}});
  const auto records = flagprop::resultRecords(report.at("targets").at(0));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].expected.value_or("?"), "fail");
  EXPECT_EQ(records[0].asExpected.value_or(false), true);
  EXPECT_NE(records[0].replay.find("--reproduce abc"), std::string::npos) << records[0].replay;
  EXPECT_NE(records[0].observations.distinctFailures.at(0).replay.find("--reproduce def"), std::string::npos);
}

}  // namespace

namespace {

// Every registry entry names what builds its runs, for its scope: the
// planner calls it without asking which property it is.
TEST(Registry, EveryPropertyNamesWhatBuildsItsRuns) {
  for (const auto& d : flagprop::properties()) {
    const bool op = d.scope == flagprop::PropertyDef::Scope::Op;
    EXPECT_EQ(d.opRun != nullptr, op) << d.id;
    EXPECT_EQ(d.installerCases != nullptr, !op) << d.id;
    EXPECT_FALSE(d.title.empty() || d.holds.empty() || d.checkKind.empty()) << d.id;
    EXPECT_TRUE(!d.probesFastPath || !op) << d.id;
  }
  // P5 and P6 report the ops flagprop excludes (the coverage counts them); the others do not.
  std::vector<std::string> reporting;
  for (const auto& d : flagprop::properties())
    if (d.reportsExcluded) reporting.push_back(d.id);
  EXPECT_EQ(reporting, (std::vector<std::string>{"P5", "P6"}));
}

}  // namespace
