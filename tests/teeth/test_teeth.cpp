// Teeth: every installer property catches the fixture mutant meant for it,
// and the well-behaved fixtures pass them all.
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

namespace flagprop {
namespace {

using test::runFixture;

TEST(Teeth, WellBehavedFixturePassesP1ToP4) {
  for (const char* p : {"P1", "P2", "P3", "P4"}) {
    const auto o = runFixture("well-behaved", p);
    EXPECT_EQ(o.status, "pass") << p << ": " << o.reason << "\n" << o.counterexample.dump();
  }
}

TEST(Teeth, P1CatchesR5SilentSkipWithTheAttributeErrorAndItsLine) {
  const auto o = runFixture("r5-silent-skip", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "silent-skip") << o.observations.dump(2);
  EXPECT_EQ(o.counterexample.at("mock").at("helper"), "absent") << "shrinks to the R5 shape";
  const auto& ex = o.observations.at("exceptions_caught");
  ASSERT_FALSE(ex.empty());
  EXPECT_EQ(ex[0].at("type"), "AttributeError");
  EXPECT_NE(ex[0].at("message").get<std::string>().find("_descriptor_cache_key"), std::string::npos);
  EXPECT_GT(ex[0].at("line").get<int>(), 0);
  EXPECT_TRUE(o.observations.at("returned_normally").get<bool>());
  EXPECT_FALSE(o.reproduce.empty());
  for (const char* c : {"key", "run"}) EXPECT_TRUE(o.observations.at("unchanged").at(c).get<bool>());
}

// The R5 component set has no type_promotion memo: with the helper the
// installer is judged on the four components it has (no false positive);
// without it, it is a silent skip.
TEST(Teeth, R5ShapedInstallerIsJudgedOnTheComponentsItHas) {
  for (const char* p : {"P1", "P2", "P3", "P4"}) {
    const auto o = runFixture("r5-shaped-with-helper", p);
    EXPECT_EQ(o.status, "pass") << p << ": " << o.reason;
  }
  const auto p1 = runFixture("r5-shaped-with-helper", "P1");
  int activeOrGatedOff = 0;
  for (const auto& d : p1.observations.at("distribution"))  // [{class, cases}]
    if (d.at("class") == "active" || d.at("class") == "gated-off") activeOrGatedOff += d.at("cases").get<int>();
  EXPECT_EQ(activeOrGatedOff, p1.casesRun) << p1.observations.dump();
  const auto o = runFixture("r5-shaped-no-helper", "P1", 20);
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "silent-skip");
  EXPECT_EQ(o.observations.at("components").at("type_promotion_memo"), "not-applicable");
  EXPECT_EQ(o.observations.at("claims"), json::array({"descriptor_helper", "key", "run", "broadcast_memo"}));
  EXPECT_EQ(o.observations.at("exceptions_caught").at(0).at("type"), "AttributeError");
  EXPECT_EQ(runFixture("r5-shaped-no-helper", "P3", 5).status, "skip");
}

TEST(Teeth, P1CatchesPartialInstall) {
  const auto o = runFixture("partial-install", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "partial") << o.observations.dump(2);
  EXPECT_EQ(o.observations.at("components").at("key"), "active");
}

TEST(Teeth, P1CatchesWrapperWithoutWrapped) {
  const auto o = runFixture("no-wrapped", "P1");
  ASSERT_EQ(o.status, "fail");
  EXPECT_EQ(o.observations.at("install"), "broken-wrap");
  EXPECT_NE(o.reason.find("__wrapped__"), std::string::npos) << o.reason;
}

TEST(Teeth, P2CatchesDoubleWrap) {
  EXPECT_EQ(runFixture("double-wrap", "P1").status, "pass");
  const auto o = runFixture("double-wrap", "P2");
  ASSERT_EQ(o.status, "fail");
  EXPECT_TRUE(o.reason.find("deep") != std::string::npos || o.reason.find("replaced") != std::string::npos) << o.reason;
}

TEST(Teeth, P3CatchesDroppedKeywordLaunch) {
  const auto o = runFixture("kwargs-dropped", "P3");
  ASSERT_EQ(o.status, "fail");
  EXPECT_NE(o.reason.find("launch"), std::string::npos) << o.reason;
}

TEST(Teeth, P3CatchesAFastRunThatIgnoresTheKey) {
  const auto r = runFixture("any-kernel", "P3");
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("result differs"), std::string::npos) << r.reason;
}

TEST(Teeth, P4CatchesMergedIntKeyAndShrinksToABoundaryInt) {
  const auto o = runFixture("merged-int-key", "P4");
  ASSERT_EQ(o.status, "fail");
  const auto& dns = o.counterexample.at("dns_args");
  ASSERT_EQ(dns.size(), 1u) << o.counterexample.dump();
  // Shrunk to one int the stock key does not call i32 (outside [-2^31, 2^31 - 1]).
  const std::string v = dns[0].at("int");
  const long double x = std::stold(v);
  EXPECT_TRUE(x > 2147483647.0L || x < -2147483648.0L) << v;
  EXPECT_TRUE(o.counterexample.at("spec_args").empty());
  EXPECT_TRUE(o.counterexample.at("const_args").empty());
}

TEST(Teeth, P4CatchesAStaleBroadcastMemo) {
  const auto r = runFixture("stale-memo", "P4");
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("broadcast_shapes"), std::string::npos) << r.reason;
}

TEST(Teeth, P4CatchesAValueKeyedTypePromotionMemo) {
  const auto r = runFixture("value-keyed-memo", "P4", 20);
  ASSERT_EQ(r.status, "fail");
  EXPECT_NE(r.reason.find("type_promotion"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace flagprop
