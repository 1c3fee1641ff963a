// P1 install status: after the installer returns, every component is active
// (marker set, __wrapped__ is the original) or reported skipped with a reason.
// A silent skip or a silent partial install fails. Exceptions raised and
// caught inside the installer are attached to the finding.
#include "generators/gen.h"
#include "suites/property.h"


namespace flagprop {

namespace {

const char* kComponents[] = {"descriptor_helper", "key", "type_promotion_memo", "run", "broadcast_memo"};

bool reported(const json& call, const std::string& component) {
  const auto& status = call.at("status");
  if (!status.empty()) {
    for (const char* k : {component.c_str(), "*", "all"})
      if (status.contains(k) && status.at(k).get<std::string>() != "active") return true;
    return false;
  }
  // Only what a user can see and what the installer itself said counts: a
  // warning issued by installer code in a category Python shows by default,
  // or a WARNING+ log record emitted from installer code.
  for (const auto& w : call.at("warnings"))
    if (w.value("from_installer", false) && w.value("visible", false)) return true;
  for (const auto& r : call.at("logs")) {
    const std::string lvl = r.at("level").get<std::string>();
    if ((lvl == "WARNING" || lvl == "ERROR" || lvl == "CRITICAL") && r.value("from_installer", false)) return true;
  }
  return false;
}

std::string exceptionLine(const json& e) {
  return e.at("type").get<std::string>() + " at " + e.at("file").get<std::string>() + ":" +
         std::to_string(e.at("line").get<int>()) + " (" + e.at("message").get<std::string>() + ")";
}

}  // namespace

json classifyInstall(const json& obs, bool gatesOpen) {
  const json& call = obs.at("calls").at(0);
  const json& comps = obs.at("components").at(0);
  json classes = json::object();
  int active = 0, silent = 0, broken = 0, reportedSkips = 0, gated = 0;
  std::string brokenWhy;
  for (const char* c : kComponents) {
    const json& f = comps.at(c);
    std::string cls;
    const bool supplied = !f.at("present_before").get<bool>() && f.at("present_after").get<bool>();
    if (f.at("changed").get<bool>()) {
      // Active: marked, and __wrapped__ is the object it replaced -- or, for a
      // component that did not exist before (a supplied helper), just marked.
      if (!f.at("markers").empty() && (f.at("wrapped_is_original").get<bool>() || supplied)) {
        cls = "active";
        ++active;
      } else {
        cls = "broken-wrap";
        ++broken;
        if (brokenWhy.empty())
          brokenWhy = std::string(c) + (f.at("markers").empty() ? " replaced without a _torch_fl_ marker"
                                        : !f.at("has_wrapped").get<bool>() ? " replaced without __wrapped__"
                                                                             : " has __wrapped__ that is not the original");
      }
    } else if (reported(call, c)) {
      cls = "reported-skip";
      ++reportedSkips;
    } else if (!gatesOpen) {
      cls = "gated-off";
      ++gated;
    } else {
      cls = "silent-skip";
      ++silent;
    }
    classes[c] = cls;
  }
  std::string install;
  const int n = static_cast<int>(std::size(kComponents));
  const std::string raised = call.at("raised").get<std::string>();
  const bool outsideGates = !gatesOpen && (active || broken);
  if (!raised.empty()) install = "raised";
  else if (outsideGates) install = "outside-gates";
  else if (broken) install = "broken-wrap";
  else if (active && silent) install = "partial";
  else if (silent) install = "silent-skip";
  else if (active == n) install = "active";
  else if (active) install = "partial-reported";
  else if (reportedSkips) install = "reported-skip";
  else install = "gated-off";
  // An optional performance installer runs at device init: an exception
  // escaping it takes device init down, which is never an acceptable report.
  const bool pass = !(broken || silent || !raised.empty() || outsideGates);
  std::string reason;
  if (!pass) {
    if (install == "raised") {
      reason = "raised: the installer let " + raised + " escape (device init would fail)";
    } else if (install == "outside-gates") {
      reason = "outside-gates: the installer changed " + std::to_string(active + broken) +
               " component(s) although its gates are closed for this case";
    } else if (install == "broken-wrap") {
      reason = "broken-wrap: " + brokenWhy;
    } else {
      reason = install + ": ";
      std::string names;
      for (const char* c : kComponents)
        if (classes[c] == "silent-skip") names += (names.empty() ? "" : ", ") + std::string(c);
      reason += names + " not installed and nothing reported (no warning, log record or status)";
      if (active) reason += "; " + std::to_string(active) + " other component(s) active";
      // The last exception before the installer gave up is the likeliest cause.
      const auto& ex = call.at("exceptions");
      if (!ex.empty()) reason += "; caught inside the installer: " + exceptionLine(ex.back());
      if (call.value("trace_lost", false)) reason += "; the installer replaced the trace function, so exceptions may be missing";
      if (call.at("returned_normally").get<bool>()) reason += "; the installer returned normally";
    }
  } else {
    reason = install;
  }
  return {{"components", classes}, {"install", install}, {"pass", pass}, {"reason", reason}};
}

/// Observations attached to a P1 finding: the published ones (helper present,
/// exceptions caught with file:line, returned normally, methods unchanged,
/// markers) plus the raw reports.
json p1Observations(const json& obs, const json& verdict) {
  const json& call = obs.at("calls").at(0);
  const json& comps = obs.at("components").at(0);
  json unchanged = json::object(), markers = json::object();
  for (const char* c : kComponents) {
    unchanged[c] = !comps.at(c).at("changed").get<bool>();
    markers[c] = comps.at(c).at("markers");
  }
  json caught = json::array();
  for (const auto& e : call.at("exceptions")) caught.push_back(e);
  return {{"install", verdict.at("install")},
          {"components", verdict.at("components")},
          {"helper", obs.at("helper")},
          {"exceptions_caught", call.at("returned_normally").get<bool>() ? caught : json::array()},
          {"exceptions_seen", caught},
          {"returned_normally", call.at("returned_normally")},
          {"raised", call.at("raised")},
          {"unchanged", unchanged},
          {"markers", markers},
          {"warnings", call.at("warnings")},
          {"logs", call.at("logs")},
          {"status", call.at("status")},
          {"trace_lost", call.value("trace_lost", false)},
          {"witness", obs.at("witness")}};
}

PropertyOutcome runP1(TargetSession& session, const RunOptions& opts) {
  FailureRecord last;
  std::string skipped;
  const auto fixed = session.target().gates;
  auto body = [&]() {
    const InstallCase c = *gen::installCase(fixed);
    const json obs = guarded(last, toJson(c), "install", [&] { return session.installCase(c.mock, c.gates, 1); });
    const json verdict = classifyInstall(obs, session.target().gatesOpen(c.gates));
    RC_TAG(verdict.at("install").get<std::string>());
    if (!verdict.at("pass").get<bool>()) {
      last = {toJson(c), p1Observations(obs, verdict), verdict.at("reason").get<std::string>(), "install"};
      RC_FAIL(last.why);
    }
  };
  return runProperty("P1", "install status", session, opts, body, last, skipped);
}

}  // namespace flagprop
