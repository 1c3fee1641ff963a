// P5 numerics and P6 aliasing / metadata over the op catalog: one RapidCheck
// run per (property, op, dtype), each case judged by ops/op_run.cpp.
#include "ops/op_run.h"
#include "suites/property.h"

#include <algorithm>

namespace flagprop {

namespace {

// Totals over the cases of one run, for the report and the benchmark.
struct OpStats {
  int cases = 0;
  int reused = 0;  // judged from the other property's run of the same case
  int compilations = 0;
  double referenceUs = 0, deviceUs = 0, totalUs = 0;

  void add(const json& obs, bool fromMemo) {
    if (fromMemo) {
      ++reused;
      return;
    }
    ++cases;
    compilations += obs.value("compilations", 0);
    if (obs.contains("time_us")) {
      referenceUs += obs["time_us"].value("reference", 0.0);
      deviceUs += obs["time_us"].value("device", 0.0);
      totalUs += obs["time_us"].value("total", 0.0);
    }
  }
  json toJson() const {
    const double t = totalUs > 0 ? totalUs : 1;
    return {{"cases_executed", cases},
            {"cases_reused", reused},
            {"compilations", compilations},
            {"compilations_per_100_cases", cases ? 100.0 * compilations / cases : 0.0},
            {"share", {{"reference", referenceUs / t}, {"device_op", deviceUs / t},
                       {"harness", std::max(0.0, (totalUs - referenceUs - deviceUs) / t)}}},
            {"us_per_case", cases ? totalUs / cases : 0.0}};
  }
};

// Whether a message says the device context is gone for this process.
bool deviceLostText(const std::string& s) {
  for (const char* k : {"illegal memory access", "CUDA error", "HIP error", "hipError", "AcceleratorError",
                        "device-side assert", "unspecified launch failure"})
    if (s.find(k) != std::string::npos) return true;
  return false;
}

PropertyOutcome runOpProperty(const char* id, const char* title, const char* findings, TargetSession& session,
                              const RunOptions& optsIn, const OpEntry& entry, const std::string& dtype) {
  const Target& t = session.target();
  RunOptions opts = optsIn;
  if (opts.cases <= 0) opts.cases = t.opCases;
  gen::LayoutLimits lim;
  lim.maxElements = t.maxElements;
  lim.specials = t.specials;
  lim.palette = t.layoutPalette;
  lim.paletteSeed = t.paletteSeed;
  const auto palette = std::make_shared<const std::vector<OpCall>>(buildPalette(entry, dtype, lim));
  const std::string key = std::string(id) + "/" + entry.name + "/" + dtype;
  if (!session.deviceLost.empty()) {
    PropertyOutcome out;
    out.property = id;
    out.title = title;
    out.op = entry.name;
    out.dtype = dtype;
    out.status = "error";
    out.reason = "not run: " + session.deviceLost + "; rerun it alone with --op " + entry.name;
    return out;
  }
  FailureRecord last;
  OpStats stats;
  bool lostHere = false;
  auto& memo = session.opMemo;
  if (memo.run != entry.name + "/" + dtype) {
    memo.run = entry.name + "/" + dtype;
    memo.byCase.clear();
  }
  const rc::Gen<OpCase> cases = opCase(entry, dtype, lim, palette);
  auto body = [&]() {
    // Once the device context is lost every later case fails the same way:
    // keep the case that lost it as the counterexample instead of shrinking.
    if (lostHere) RC_FAIL(session.deviceLost);
    const OpCase c = *cases;
    const std::string caseKey = toJson(c).dump();
    json obs;
    const auto hit = memo.byCase.find(caseKey);
    const bool fromMemo = hit != memo.byCase.end();
    try {
      obs = fromMemo ? hit->second : guarded(last, toJson(c), "op", [&] { return runOpCase(session, entry, c); });
      if (!fromMemo) memo.byCase.emplace(caseKey, obs);
    } catch (...) {
      if (deviceLostText(last.why)) {
        lostHere = true;
        session.deviceLost = "the device context was lost during " + key + " (" + last.why + ")";
        last.why = "the device context was lost while running this case (unshrunk): " + last.why;
      }
      throw;
    }
    for (const char* k : {"numerics", "aliasing"})
      for (const auto& f : obs.at(k))
        if (!lostHere && deviceLostText(f.get<std::string>())) {
          lostHere = true;
          session.deviceLost = "the device context was lost during " + key + " (" + f.get<std::string>() + ")";
          last = {toJson(c), obs, "the device context was lost while running this case (unshrunk): " + f.get<std::string>(), "op"};
        }
    if (lostHere) RC_FAIL(last.why);
    stats.add(obs, fromMemo);
    if (obs.contains("discard")) RC_DISCARD(obs.at("discard").get<std::string>());
    const std::string pvu = obs.value("patched_vs_unpatched", "");
    RC_TAG(obs.value("fast_path", "?") + (pvu == "equal" ? ", patched == unpatched" : "") +
           (obs.value("calls_raised", 0) ? ", the op raised (outputs unchecked)" : ""));
    const json& f = obs.at(findings);
    if (!f.empty()) {
      std::string why = f.at(0).get<std::string>();
      if (f.size() > 1) why += " (and " + std::to_string(f.size() - 1) + " more)";
      last = {toJson(c), obs, why, "op"};
      RC_FAIL(why);
    }
  };
  PropertyOutcome out = runProperty(id, title, session, opts, body, last, "", entry.name, dtype);
  if (lostHere && out.status == "error") out.status = "fail";  // a crash of the op under test is a finding
  if (!out.observations.is_object()) out.observations = json::object();
  out.observations["stats"] = stats.toJson();
  return out;
}

}  // namespace

PropertyOutcome runP5(TargetSession& s, const RunOptions& o, const OpEntry& e, const std::string& dtype) {
  return runOpProperty("P5", "numerics", "numerics", s, o, e, dtype);
}

PropertyOutcome runP6(TargetSession& s, const RunOptions& o, const OpEntry& e, const std::string& dtype) {
  return runOpProperty("P6", "aliasing and metadata", "aliasing", s, o, e, dtype);
}

std::vector<std::pair<const OpEntry*, std::string>> opRuns(const Target& t) {
  std::vector<std::pair<const OpEntry*, std::string>> out;
  for (const auto& e : catalog()) {
    if (!t.catalogOps.empty() && std::find(t.catalogOps.begin(), t.catalogOps.end(), e.name) == t.catalogOps.end())
      continue;
    for (const auto& d : e.dtypes)
      if (t.dtypes.empty() || std::find(t.dtypes.begin(), t.dtypes.end(), d) != t.dtypes.end()) out.emplace_back(&e, d);
  }
  return out;
}

}  // namespace flagprop
