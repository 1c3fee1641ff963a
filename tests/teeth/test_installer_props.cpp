// The installer properties as RapidCheck properties under GoogleTest over the
// well-behaved fixture: every generated case holds, judged by the same
// flagprop.judging.checks / flagprop.judging.verdicts functions the suites and the
// reproducers use.
#include "generators/installer_cases.h"
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace flagprop {
namespace {

TargetSession& wellBehaved() { return test::fixtureSession("well-behaved"); }

template <typename T>
json judged(const std::string& kind, const T& c) {
  return wellBehaved().check(kind, toJson(c));
}

RC_GTEST_PROP(P1InstallStatus, EveryComponentActiveOrReportedSkip, ()) {
  const InstallCase c = *gen::installCases(gen::mockSchema());
  const json r = judged("install", c);
  RC_ASSERT(r.at("pass").get<bool>());
  if (wellBehaved().gatesOpen(c.gates) && c.mock.at("helper") == "present" && c.mock.at("key_signature") == "standard")
    RC_ASSERT(r.at("tag") == "active");
}

RC_GTEST_PROP(P2Idempotence, TwoInstallsEqualOne, ()) {
  RC_ASSERT(judged("install2", *gen::installCases(gen::mockSchema())).at("pass").get<bool>());
}

RC_GTEST_PROP(P3StockFallback, InexpressibleLaunchesReachStockRun, ()) {
  const json r = judged("launch", *gen::launchCases(gen::mockSchema()));
  RC_ASSERT(!r.contains("inactive"));
  RC_ASSERT(r.at("pass").get<bool>());
}

RC_GTEST_PROP(P4KeyEquivalence, FastKeyHelperAndMemosEqualStock, ()) {
  const json r = judged("key", *gen::keyCases(gen::mockSchema()));
  RC_ASSERT(!r.contains("inactive"));
  RC_ASSERT(r.at("pass").get<bool>());
}

}  // namespace
}  // namespace flagprop
