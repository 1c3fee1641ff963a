// The RapidCheck driver (runProperty) on made-up runs: what a run of no
// case is, shrinking under a budget, distinct and flaky failures, --distinct
// and --run-time.
#include "suites/property.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <chrono>

namespace flagprop {
namespace {

// A made-up run of `cases` cases under P1's name, for the RapidCheck driver
// alone: the caller gives its generator and judge.
PropertyRun madeUpRun(int cases) {
  PropertyRun run;
  run.id = "P1";
  run.title = "install status";
  run.checkKind = "install";
  run.cases = cases;
  return run;
}

// A run that judged nothing held nothing: whatever its count came from, it is
// a skip ("no case ran"), never a pass; one case of the same run fails.
TEST(Property, ARunOfNoCaseIsASkipNotAPass) {
  PropertyRun run = madeUpRun(0);
  run.judge = [](const Case&) { return json{{"pass", false}, {"reason", "always wrong"}}; };
  RunOptions opts;
  opts.seed = 1;
  const PropertyOutcome none = runProperty(run, opts);
  EXPECT_EQ(none.status, "skip") << none.reason;
  EXPECT_EQ(none.reason, "no case ran");
  EXPECT_EQ(none.casesRun, 0);
  run.cases = 1;
  EXPECT_EQ(runProperty(run, opts).status, "fail");
}

// --shrink-time: with no time to shrink, the counterexample is the first
// failing case as found (every candidate RapidCheck tries after it is
// discarded unjudged; RapidCheck's own runs of that case again fail without
// judging) and the reason says it may not be the smallest; without a budget
// RapidCheck shrinks it to the boundary. Either one's reproduce string
// replays its own counterexample, with or without a budget (a replay has
// none: its path is run, not searched).
TEST(Property, AShrinkBudgetKeepsTheSmallestFailingCaseFoundSoFar) {
  PropertyRun run = madeUpRun(100);
  run.generator = rc::gen::map(rc::gen::inRange(0, 1000000), [](int n) { return Case{json(n)}; });
  int judgings = 0;
  run.judge = [&](const Case& c) {
    ++judgings;
    return json{{"pass", c.value.get<int>() < 10}, {"reason", "at least 10"}};
  };
  RunOptions opts;
  opts.seed = 7;
  opts.flakyReplays = 0;
  const PropertyOutcome full = runProperty(run, opts);
  ASSERT_EQ(full.status, "fail") << full.reason;
  EXPECT_EQ(full.counterexample, json(10)) << "RapidCheck shrinks an int to the boundary";
  const json fullShrink = full.observations.at("shrink");
  EXPECT_FALSE(fullShrink.at("stopped").get<bool>());
  EXPECT_GT(fullShrink.at("accepted").get<int>(), 0);
  EXPECT_GE(fullShrink.at("tried").get<int>(), fullShrink.at("accepted").get<int>());
  EXPECT_EQ(fullShrink.at("discarded"), 0);
  EXPECT_EQ(full.reason.find("shrinking stopped"), std::string::npos) << full.reason;
  opts.shrinkSeconds = 0;
  judgings = 0;
  const PropertyOutcome first = runProperty(run, opts);
  ASSERT_EQ(first.status, "fail") << first.reason;
  EXPECT_GT(first.counterexample.get<int>(), 10) << "the first failing case of seed 7, unshrunk";
  EXPECT_EQ(judgings, first.casesRun) << "no candidate was judged after the first failure";
  EXPECT_EQ(first.counterexampleShown, std::to_string(first.counterexample.get<int>()));
  const json firstShrink = first.observations.at("shrink");
  EXPECT_TRUE(firstShrink.at("stopped").get<bool>());
  EXPECT_EQ(firstShrink.at("accepted"), 0);
  EXPECT_GT(firstShrink.at("discarded").get<int>(), 0);
  EXPECT_NE(first.reason.find("at least 10 (shrinking stopped after 0 s (--shrink-time)"), std::string::npos)
      << first.reason;
  for (const auto* o : {&full, &first})
    for (const int budget : {-1, 0}) {
      RunOptions replay;
      replay.reproduce = o->reproduce;
      replay.shrinkSeconds = budget;
      const PropertyOutcome again = runProperty(run, replay);
      EXPECT_EQ(again.status, "fail") << again.reason;
      EXPECT_EQ(again.counterexample, o->counterexample);
      EXPECT_FALSE(again.observations.contains("shrink")) << "a replay shrinks nothing";
    }
}

// A distinct failure is judged again as the first failure is: one that
// passes a replay is flaky, listed apart (observations.flaky_distinct) and
// not among the distinct failures. Values under 1000 fail for one reason
// every time; the others for another reason every second judging.
TEST(Property, AFlakyDistinctFailureIsNotReportedAsOne) {
  PropertyRun run = madeUpRun(20);
  run.generator = rc::gen::map(rc::gen::resize(100, rc::gen::inRange(0, 1000000)), [](int n) { return Case{json(n)}; });
  run.distinct = 3;
  int judgings = 0;
  auto verdict = [](bool pass, const std::string& kind) {
    json v = json::object();
    v["pass"] = pass;
    v["reason"] = kind;
    v["kinds"] = json::array({kind});
    json r = json::object();
    r["verdicts"]["P1"] = v;
    return r;
  };
  run.judge = [&](const Case& c) {
    if (c.value.get<int>() < 1000) return verdict(false, "small");
    return verdict(++judgings % 2 != 0, "large");
  };
  RunOptions opts;
  opts.seed = 3;
  opts.flakyReplays = 3;
  const PropertyOutcome o = runProperty(run, opts);
  ASSERT_EQ(o.status, "fail") << o.reason;
  for (const auto& d : o.observations.value("distinct_failures", json::array()))
    EXPECT_EQ(d.at("kinds"), json::array({"small"})) << "the flaky kind is no distinct failure: " << d.dump();
  const json flaky = o.observations.value("flaky_distinct", json::array());
  ASSERT_FALSE(flaky.empty()) << o.observations.dump();
  EXPECT_EQ(flaky.at(0).at("reason").get<std::string>().rfind("flaky:", 0), 0u) << flaky.dump();
}

// --distinct N caps the search for further failures: 1 ends a failing run
// at its first failure, however many distinct kinds the property has room
// for; without it the same run reports the second kind too.
TEST(Property, DistinctOneEndsAFailingRunAtItsFirstFailure) {
  PropertyRun run = madeUpRun(50);
  run.generator = rc::gen::map(rc::gen::resize(100, rc::gen::inRange(0, 1000000)), [](int n) { return Case{json(n)}; });
  run.distinct = 3;
  int judged = 0;
  run.judge = [&judged](const Case& c) {
    ++judged;
    const int n = c.value.get<int>();
    const std::string kind = n % 2 ? "odd" : "even";
    json v = {{"pass", n < 10}, {"reason", kind}, {"kinds", json::array({kind})}};
    json r = json::object();
    r["verdicts"]["P1"] = v;
    return r;
  };
  RunOptions opts;
  opts.seed = 11;
  const PropertyOutcome all = runProperty(run, opts);
  ASSERT_EQ(all.status, "fail") << all.reason;
  ASSERT_EQ(all.observations.value("distinct_failures", json::array()).size(), 1u) << all.observations.dump();
  const int judgedAll = judged;
  judged = 0;
  opts.distinct = 1;
  const PropertyOutcome first = runProperty(run, opts);
  ASSERT_EQ(first.status, "fail") << first.reason;
  EXPECT_FALSE(first.observations.contains("distinct_failures")) << first.observations.dump();
  EXPECT_EQ(first.counterexample, all.counterexample) << "the same first failure, shrunk the same way";
  EXPECT_LT(judged, judgedAll) << "no second search ran";
}

// --run-time: past the run's limit no new case or shrink candidate is
// judged once one case has been. A run that found no failure passes on the
// cases that held and says how many of those asked for ran; one with a
// failure keeps it, shrunk as far as it got. The run's clock is given as
// started 5 s ago (PropertyRun::clockStart, as the first run of an op and
// dtype gives it to the others), so a 1 s limit is past from the start: no
// waiting.
TEST(Property, ARunTimeEndsTheSearchKeepingWhatItFound) {
  PropertyRun run = madeUpRun(5);
  // Size 100 from the first case on: a value with smaller ones to shrink to.
  run.generator =
      rc::gen::map(rc::gen::resize(100, rc::gen::inRange(1000, 1000000)), [](int n) { return Case{json(n)}; });
  run.clockStart = []() { return std::chrono::steady_clock::now() - std::chrono::seconds(5); };
  int judgings = 0;
  bool failing = false;
  json first;
  run.judge = [&](const Case& c) {
    if (judgings++ == 0) first = c.value;
    return json{{"pass", !failing}, {"reason", "wrong"}};
  };
  RunOptions opts;
  opts.seed = 7;
  opts.flakyReplays = 0;
  opts.runSeconds = 1;
  const PropertyOutcome passed = runProperty(run, opts);
  EXPECT_EQ(passed.status, "pass") << passed.reason;
  EXPECT_EQ(judgings, 1);
  EXPECT_EQ(passed.casesRun, 1);
  EXPECT_EQ(passed.reason,
            "1 of the 5 generated cases asked for held (the run's --run-time of 1 s ran out before the others ran)");
  EXPECT_EQ(passed.observations.at("run_time"), json({{"limit_s", 1}, {"held", 1}, {"asked", 5}}));
  failing = true;
  judgings = 0;
  const PropertyOutcome failed = runProperty(run, opts);
  ASSERT_EQ(failed.status, "fail") << failed.reason;
  EXPECT_EQ(judgings, 1) << "no shrink candidate was judged once the run's time was up";
  EXPECT_EQ(failed.counterexample, first) << "the first failing case, unshrunk";
  EXPECT_EQ(failed.observations.at("shrink").value("by", ""), "run-time");
  EXPECT_NE(failed.reason.find("wrong (shrinking stopped when the run's --run-time ran out"), std::string::npos)
      << failed.reason;
  // A limit already past still judges one case: every run ends in a verdict.
  opts.runSeconds = 0;
  failing = false;
  judgings = 1;
  const PropertyOutcome one = runProperty(run, opts);
  EXPECT_EQ(one.status, "pass") << one.reason;
  EXPECT_EQ(judgings, 2);
  // A clock started now, with a limit not yet reached, judges every case asked for.
  opts.runSeconds = 3600;
  run.clockStart = nullptr;
  EXPECT_EQ(runProperty(run, opts).casesRun, 5);
  opts.runSeconds = -1;
  failing = false;
  judgings = 1;  // without a limit every case asked for is judged
  EXPECT_EQ(runProperty(run, opts).casesRun, 5);
}

}  // namespace
}  // namespace flagprop
