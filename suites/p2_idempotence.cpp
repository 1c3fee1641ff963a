// P2 idempotence: installing twice leaves the same objects, __wrapped__ chains
// are one deep, and a repeated install after a reported skip stays skipped and
// reports again.
#include "generators/gen.h"
#include "suites/property.h"

namespace flagprop {

json p1Observations(const json& obs, const json& verdict);

/// P2's judgement of a two-install observation: {"pass", "reason"}.
json judgeIdempotence(const json& obs, bool gatesOpen, bool reportsOnce) {
  const json& ids1 = obs.at("identities").at(0);
  const json& ids2 = obs.at("identities").at(1);
  const json& comps2 = obs.at("components").at(1);
  for (auto it = ids1.begin(); it != ids1.end(); ++it) {
    if (ids2.at(it.key()) != it.value())
      return {{"pass", false}, {"reason", "re-install replaced " + it.key() + " (a different object after the second call)"}};
    const int depth = comps2.at(it.key()).at("chain_depth").get<int>();
    if (depth > 1)
      return {{"pass", false},
              {"reason", it.key() + " has a __wrapped__ chain " + std::to_string(depth) + " deep after two installs"}};
  }
  json first = obs;
  first["calls"] = json::array({obs.at("calls").at(0)});
  first["components"] = json::array({obs.at("components").at(0)});
  json second = obs;
  second["calls"] = json::array({obs.at("calls").at(1)});
  second["components"] = json::array({obs.at("components").at(1)});
  const json v1 = classifyInstall(first, gatesOpen);
  const json v2 = classifyInstall(second, gatesOpen);
  if (!reportsOnce && v1.at("install") == "reported-skip" && v2.at("install") != "reported-skip")
    return {{"pass", false},
            {"reason", "the first install reported a skip, the second was " + v2.at("install").get<std::string>() +
                           " (a repeated install must stay skipped and report again)"}};
  const bool raised1 = !obs.at("calls").at(0).at("raised").get<std::string>().empty();
  const bool raised2 = !obs.at("calls").at(1).at("raised").get<std::string>().empty();
  if (raised2 && !raised1)
    return {{"pass", false}, {"reason", "the second install raised: " + obs.at("calls").at(1).at("raised").get<std::string>()}};
  return {{"pass", true}, {"reason", v2.at("install")}};
}

PropertyOutcome runP2(TargetSession& session, const RunOptions& opts) {
  FailureRecord last;
  std::string skipped;
  const auto fixed = session.target().gates;
  auto body = [&]() {
    const InstallCase c = *gen::installCase(fixed);
    const json obs = guarded(last, toJson(c), "install2", [&] { return session.installCase(c.mock, c.gates, 2); });
    const json verdict = judgeIdempotence(obs, session.target().gatesOpen(c.gates), session.target().reportsOnce);
    RC_TAG(verdict.at("reason").get<std::string>());
    if (!verdict.at("pass").get<bool>()) {
      json o = {{"first", obs.at("components").at(0)},
                {"second", obs.at("components").at(1)},
                {"identities", obs.at("identities")},
                {"calls", obs.at("calls")},
                {"helper", obs.at("helper")}};
      last = {toJson(c), o, verdict.at("reason").get<std::string>(), "install2"};
      RC_FAIL(last.why);
    }
  };
  return runProperty("P2", "idempotence", session, opts, body, last, skipped);
}

}  // namespace flagprop
