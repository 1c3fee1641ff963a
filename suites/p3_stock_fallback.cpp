// P3 stock fallback: launches the fast path cannot express (keyword arguments
// beyond grid / warmup, partial argument lists, callable grid, tuner /
// heuristic constexprs, launch hooks, flagtune tuners, cache misses) reach the
// stock run (witnessed) and give the same result as an unpatched LibEntry.
#include "generators/gen.h"
#include "suites/property.h"

namespace flagprop {

/// P3's judgement of a launch-case observation: {"pass", "reason", "launch"}.
json judgeFallback(const LaunchCase& c, const json& obs) {
  const bool entryNeedsStock = !c.mock.wrappers.empty() || c.mock.flagtuneTuner;
  const auto& ls = obs.at("launches");
  for (size_t i = 0; i < ls.size(); ++i) {
    const auto& l = ls[i];
    const std::string kind = l.at("kind");
    const std::string ra = l.at("raised_a"), rb = l.at("raised_b");
    const std::string at = "launch " + std::to_string(i) + " (" + kind + ")";
    if (ra.empty() != rb.empty())
      return {{"pass", false}, {"launch", i}, {"reason", at + ": patched raised '" + ra + "', stock raised '" + rb + "'"}};
    if (!l.at("equal").get<bool>())
      return {{"pass", false},
              {"launch", i},
              {"reason", at + ": result differs from the stock path (patched " + std::to_string(l.at("a_out").get<double>()) +
                             ", stock " + std::to_string(l.at("b_out").get<double>()) + ")"}};
    if (ra.empty() && !l.value("return_equal", true))
      return {{"pass", false},
              {"launch", i},
              {"reason", at + ": run returned " + l.value("return_a", std::string()) + ", the stock path returned " +
                             l.value("return_b", std::string())}};
    if (ra.empty() && !l.value("grid_equal", true))
      return {{"pass", false},
              {"launch", i},
              {"reason", at + ": launched with grid " + l.at("grid_a").dump() + ", the stock path with " + l.at("grid_b").dump()}};
    const bool mustStock = kind != "positional" || entryNeedsStock || l.at("cache_grew").get<bool>();
    if (mustStock && ra.empty() && l.at("stock_calls").get<int>() < 1)
      return {{"pass", false},
              {"launch", i},
              {"reason", at + ": the fast path cannot express this launch but the stock run was not entered"}};
  }
  return {{"pass", true}, {"reason", "all launches matched"}};
}

PropertyOutcome runP3(TargetSession& session, const RunOptions& opts) {
  FailureRecord last;
  std::string skipped;
  const Gates gates = session.defaultGates();
  {
    LaunchCase probe;
    probe.mock.params = {{"in_ptr", "spec"}, {"out_ptr", "spec"}};
    if (auto skipped = skipIfInactive("P3", "stock fallback", session.launchCase(probe, gates))) return *skipped;
  }
  auto body = [&]() {
    const LaunchCase c = *gen::launchCase();
    const json obs = guarded(last, toJson(c), "launch", [&] { return session.launchCase(c, gates); });
    if (!obs.at("active").get<bool>()) RC_DISCARD("patch not active");
    const json verdict = judgeFallback(c, obs);
    if (!verdict.at("pass").get<bool>()) {
      last = {toJson(c), obs, verdict.at("reason").get<std::string>(), "launch"};
      RC_FAIL(last.why);
    }
  };
  return runProperty("P3", "stock fallback", session, opts, body, last, skipped);
}

}  // namespace flagprop
