// P1-P4: the installer properties. Each is a generator of cases over the
// mock spec schema and a flagprop.judging.checks kind that observes and judges one.
#include "suites/installer_properties.h"

#include "generators/installer_cases.h"
#include "suites/registry.h"

namespace flagprop {

namespace {

template <typename T>
rc::Gen<Case> asCases(rc::Gen<T> g) {
  return rc::gen::map(std::move(g), [](const T& v) { return Case{toJson(v)}; });
}

// P3 / P4 compare a fast path with the stock one: a minimal case first
// shows whether there is a fast path to compare.
json probeCase(const std::string& kind) {
  const json mock = {
      {"helper", "present"},
      {"params", json::array({{{"name", "in_ptr"}, {"kind", "spec"}}, {{"name", "out_ptr"}, {"kind", "spec"}}})}};
  if (kind == "launch") return {{"mock", mock}, {"arg_sets", json::array()}, {"launches", json::array()}};
  return {{"mock", mock}, {"spec_args", json::array()}, {"dns_args", json::array()}, {"const_args", json::array()}};
}

}  // namespace

rc::Gen<Case> installCases(const Target& t) {
  return asCases(gen::installCases(gen::mockSchema(), t.gates, t.flagGems.mock));
}

rc::Gen<Case> launchCases(const Target& t) { return asCases(gen::launchCases(gen::mockSchema(), t.flagGems.mock)); }

rc::Gen<Case> keyCases(const Target& t) { return asCases(gen::keyCases(gen::mockSchema(), t.flagGems.mock)); }

PropertyRun installerRun(TargetSession& session, const PropertyDef& def) {
  PropertyRun run;
  run.id = def.id;
  run.title = def.title;
  run.checkKind = def.checkKind;
  run.cases = session.target().cases;
  run.generator = def.installerCases(session.target());
  const std::string kind = def.checkKind;
  TargetSession* s = &session;
  run.judge = [s, kind](const Case& c) { return s->check(kind, c.value); };
  if (def.probesFastPath) {
    run.precondition = [s, kind, run]() -> std::optional<PropertyOutcome> {
      const json probe = s->check(kind, probeCase(kind));
      if (!probe.contains("inactive")) return std::nullopt;
      PropertyOutcome o = outcomeFor(run, "skip", probe.at("inactive").get<std::string>());
      o.observations = probe.value("evidence", json::object());
      return o;
    };
  }
  return run;
}

}  // namespace flagprop
