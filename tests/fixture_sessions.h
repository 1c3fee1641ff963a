// Test helpers: the fixture targets as sessions (one per process), and
// their property runs.
#pragma once

#include "catalog/catalog.h"
#include "suites/registry.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace flagprop::test {

/// The session of fixtures/targets/<name>.json (loaded once per process;
/// its op under test set up once).
inline TargetSession& fixtureSession(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TargetSession>> sessions;
  auto& s = sessions[name];
  if (!s) {
    s = std::make_unique<TargetSession>(loadTarget(fixturesDir() + "/targets/" + name + ".json"));
    s->setupOps({});
  }
  return *s;
}

inline RunOptions fixedSeed(int cases) {
  RunOptions o;
  o.cases = cases;
  o.seed = 20261130;
  return o;
}

/// Installer property `id` (P1-P4) on fixture `target`.
inline PropertyOutcome runFixture(const std::string& target, const std::string& id, int cases = 100) {
  const PropertyDef* d = findProperty(id);
  if (!d) throw std::runtime_error("no property " + id);
  return runProperty(installerRun(fixtureSession(target), *d), fixedSeed(cases));
}

/// Op property `id` (P5, P6) of `op` in `dtype` on fixture `target`.
inline PropertyOutcome runFixtureOp(const std::string& target, const std::string& id, const std::string& op,
                                    const std::string& dtype, int cases = 60) {
  Selection sel;
  sel.properties = {id + "/" + op + "/" + dtype};
  const auto runs = opRuns(fixtureSession(target), {findProperty(id)}, sel);
  if (runs.size() != 1) throw std::runtime_error("no run " + id + "/" + op + "/" + dtype + " on " + target);
  return runProperty(runs[0], fixedSeed(cases));
}

/// One op case judged (flagprop.judging.checks "op") on fixture `target`.
inline json judgeOpCase(const std::string& target, const OpCase& c) {
  return fixtureSession(target).check("op", toJson(c), findOp(c.op)->judging);
}

}  // namespace flagprop::test
