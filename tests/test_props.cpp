// The property suites as RapidCheck properties under GoogleTest, over the
// well-behaved fixture: each generated case must hold.
#include "generators/gen.h"
#include "suites/property.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace flagprop {
json judgeIdempotence(const json& obs, bool gatesOpen, bool reportsOnce);
json judgeFallback(const LaunchCase& c, const json& obs);

namespace {
TargetSession& wellBehaved() {
  static TargetSession s(loadTarget(fixturesDir() + "/targets/well-behaved.json"));
  return s;
}
}  // namespace

RC_GTEST_PROP(P1InstallStatus, EveryComponentActiveOrReportedSkip, ()) {
  const InstallCase c = *gen::installCase();
  const json obs = wellBehaved().installCase(c.mock, c.gates, 1);
  const json v = classifyInstall(obs, wellBehaved().target().gatesOpen(c.gates));
  RC_ASSERT(v.at("pass").get<bool>());
  if (wellBehaved().target().gatesOpen(c.gates) && c.mock.helper == "present" && c.mock.keySignature == "standard")
    RC_ASSERT(v.at("install") == "active");
}

RC_GTEST_PROP(P2Idempotence, TwoInstallsEqualOne, ()) {
  const InstallCase c = *gen::installCase();
  const json obs = wellBehaved().installCase(c.mock, c.gates, 2);
  RC_ASSERT(judgeIdempotence(obs, wellBehaved().target().gatesOpen(c.gates), false).at("pass").get<bool>());
}

RC_GTEST_PROP(P3StockFallback, InexpressibleLaunchesReachStockRun, ()) {
  const LaunchCase c = *gen::launchCase();
  const json obs = wellBehaved().launchCase(c, wellBehaved().defaultGates());
  RC_ASSERT(obs.at("active").get<bool>());
  RC_ASSERT(judgeFallback(c, obs).at("pass").get<bool>());
}

RC_GTEST_PROP(P4KeyEquivalence, FastKeyEqualsStockKey, ()) {
  const KeyCase c = *gen::keyCase();
  const json obs = wellBehaved().keyCase(c, wellBehaved().defaultGates());
  RC_ASSERT(obs.at("active").get<bool>());
  RC_ASSERT(obs.at("equal").get<bool>());
}

}  // namespace flagprop
