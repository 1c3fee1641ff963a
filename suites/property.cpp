#include "suites/property.h"

#include "core/sandbox.h"
#include "core/tensor_bridge.h"
#include "reports/reproducer.h"

#include <rapidcheck/detail/TestListenerAdapter.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <unordered_map>

namespace rc::detail {
// Defined in librapidcheck (src/detail/ReproduceListener / Configuration);
// not declared in its public headers.
std::string reproduceMapToString(const std::unordered_map<std::string, Reproduce>& reproduceMap);
std::unordered_map<std::string, Reproduce> stringToReproduceMap(const std::string& str);
}  // namespace rc::detail

namespace flagprop {

namespace {

py::object toPy(const ArgValue& a) {
  switch (a.kind) {
    case ArgValue::Kind::Tensor: {
      TensorArgSpec s;
      s.dtype = a.dtype;
      s.numel = a.numel;
      s.offset = a.offset;
      s.seed = a.seed;
      return makeTensorArg(s);
    }
    case ArgValue::Kind::Int: {
      const std::string t = intText(a);
      return py::reinterpret_steal<py::object>(PyLong_FromString(t.c_str(), nullptr, 10));
    }
    case ArgValue::Kind::Float: return py::float_(a.real);
    case ArgValue::Kind::Bool: return py::bool_(a.flag);
    case ArgValue::Kind::Str: return py::str(a.text);
    case ArgValue::Kind::None: return py::none();
    case ArgValue::Kind::Descriptor: {
      py::dict d;
      d["descriptor"] = a.descriptorKind;
      d["shape"] = a.shape;
      d["strides"] = a.strides;
      d["block_shape"] = a.blockShape;
      return std::move(d);
    }
  }
  return py::none();
}

py::list toPyList(const std::vector<ArgValue>& v) {
  py::list out;
  for (const auto& a : v) out.append(toPy(a));
  return out;
}

std::string fileSha(const std::string& path) {
  try {
    return sha256File(path);
  } catch (const ManifestError&) {
    return "";
  }
}

}  // namespace

namespace {
// The target as python/flagprop/session.py reads it.
py::dict makeTargetDict(const Target& t) {
  py::dict inst;
  inst["mode"] = t.installerMode;
  inst["module"] = t.installerModule;
  inst["function"] = t.installerFunction;
  inst["path"] = t.installerPath;
  inst["python_path"] = t.pythonPath;
  inst["globals"] = fromJson(t.installerGlobals);
  py::dict fg;
  fg["kind"] = t.flagGemsKind;
  fg["path"] = t.flagGemsPath;
  py::dict d;
  d["installer"] = inst;
  d["flag_gems"] = fg;
  d["supply_helper"] = t.supplyHelper;
  py::dict ops;
  ops["kind"] = t.ops.kind;
  ops["path"] = t.ops.path;
  ops["globals"] = fromJson(t.ops.globals);
  ops["enable"] = t.ops.enable;
  d["ops"] = ops;
  return d;
}
}  // namespace

TargetSession::TargetSession(Target t) : target_(std::move(t)) {
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  targetDict_ = makeTargetDict(target_);
  const std::string& origin = target_.manifestPath;
  provenance_ = json::object();
  if (target_.installerMode == "source") {
    const std::string seen = sha256File(target_.installerPath);
    provenance_["installer_sha256"] = seen;
    if (!target_.installerSha256.empty() && seen != target_.installerSha256)
      throw ManifestError(origin + ": installer sha256 mismatch for " + target_.installerPath + ": expected " +
                          target_.installerSha256 + ", saw " + seen);
  }
  py::module_ loader = helper("loader");
  std::string libentryPath;
  try {
    if (target_.flagGemsKind == "source") {
      loader.attr("add_flag_gems_source")(target_.flagGemsPath);
      libentryPath = target_.flagGemsPath + "/flag_gems/utils/libentry.py";
    }
    if (target_.flagGemsKind != "mock") {
      py::module_ le = py::module_::import("flag_gems.utils.libentry");
      libentryPath = py::str(le.attr("__file__")).cast<std::string>();
    }
  } catch (const py::error_already_set& e) {
    throw ManifestError(origin + ": cannot import flag_gems (" + describe(e) + ")");
  }
  if (!libentryPath.empty()) {
    const std::string seen = fileSha(libentryPath);
    provenance_["libentry_path"] = libentryPath;
    provenance_["libentry_sha256"] = seen;
    if (!target_.libentrySha256.empty() && seen != target_.libentrySha256)
      throw ManifestError(origin + ": libentry sha256 mismatch for " + libentryPath + ": expected " +
                          target_.libentrySha256 + ", saw " + seen);
  }
  if (target_.device.rfind("cuda", 0) == 0) {
    bool ok = py::module_::import("torch").attr("cuda").attr("is_available")().cast<bool>();
    if (!ok) throw ManifestError(origin + ": device " + target_.device + " is not available on this machine");
  } else if (target_.device.rfind("flagos", 0) == 0) {
    // The flagos device exists once torch_fl is imported and sees a device.
    try {
      py::module_ tfl = py::module_::import("torch_fl");
      const bool ok = py::module_::import("torch").attr("device")(target_.device).attr("type").cast<std::string>() == "flagos" &&
                      py::module_::import("torch_fl.flagos").attr("device_count")().cast<int>() > 0;
      if (!ok) throw ManifestError(origin + ": device " + target_.device + " is not available on this machine");
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": device " + target_.device + " needs torch_fl (" + describe(e) + ")");
    }
  } else if (target_.device != "cpu") {
    throw ManifestError(origin + ": unknown device '" + target_.device + "' (use cpu, cuda:N or flagos:N)");
  }
  if (target_.ops.kind == "module") {
    const std::string seen = sha256File(target_.ops.path);
    provenance_["ops_sha256"] = seen;
    if (!target_.ops.sha256.empty() && seen != target_.ops.sha256)
      throw ManifestError(origin + ": ops sha256 mismatch for " + target_.ops.path + ": expected " + target_.ops.sha256 +
                          ", saw " + seen);
  }
  // Dry load: a missing installer function or a module that does not load is
  // a target error, reported once instead of once per case.
  if (target_.installerMode != "none") {
    Sandbox sb;
    try {
      MockSpec spec;
      helper("session").attr("prepare_flag_gems")(targetDict(), fromJson(toJson(spec)));
      helper("session").attr("load_installer")(targetDict(), fromJson(toJson(defaultGates())));
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": " + describe(e));
    }
  }
  if (target_.installerMode == "installed") {
    // Installed mode runs with the package's real gates, whatever the manifest says.
    Sandbox sb;
    try {
      const json g = toJson(helper("session").attr("real_gates")(targetDict()));
      Gates real;
      real.accelerator = g.at("accelerator").get<std::string>();
      real.routesToFlagGems = g.at("routes_to_flaggems").get<bool>();
      target_.gates = real;
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": cannot read the installed gates (" + describe(e) + ")");
    }
  }
  provenance_["versions"] = toJson(helper("session").attr("versions")());
  provenance_["libtorch_compiled"] = libtorchVersion();
  provenance_["device"] = target_.device;
  provenance_["gates"] = target_.gates ? toJson(*target_.gates) : json("generated per case");
}

Gates TargetSession::defaultGates() const {
  if (target_.gates) return *target_.gates;
  Gates g;
  g.accelerator = target_.gateBuilds.empty() ? "dcu" : target_.gateBuilds.front();
  g.routesToFlagGems = true;
  return g;
}

json TargetSession::installCase(const MockSpec& spec, const Gates& gates, int installs) {
  Sandbox sb;
  return toJson(helper("session").attr("install_case")(targetDict(), fromJson(toJson(spec)), fromJson(toJson(gates)),
                                                       installs));
}

json TargetSession::keyCase(const KeyCase& c, const Gates& gates) {
  Sandbox sb;
  return toJson(helper("session").attr("key_case")(targetDict(), fromJson(toJson(c.mock)), fromJson(toJson(gates)),
                                                   toPyList(c.specArgs), toPyList(c.dnsArgs), toPyList(c.constArgs)));
}

json TargetSession::launchCase(const LaunchCase& c, const Gates& gates) {
  Sandbox sb;
  // Both launch lists come from the one Python builder (also used by the
  // reproducers), each with its own tensors.
  py::module_ launch = helper("launch");
  const py::object cj = fromJson(toJson(c));
  return toJson(helper("session").attr("launch_case")(targetDict(), fromJson(toJson(c.mock)), fromJson(toJson(gates)),
                                                      launch.attr("build_launches")(cj), launch.attr("build_launches")(cj)));
}

json PropertyOutcome::toJson() const {
  json j = {{"property", property},
            {"title", title},
            {"status", status},
            {"reason", reason},
            {"cases_run", casesRun},
            {"seconds", seconds},
            {"counterexample", counterexample},
            {"counterexample_shown", counterexampleShown},
            {"reproduce", reproduce},
            {"observations", observations},
            {"reproducer", reproducer.empty() ? json(nullptr) : json(reproducer)}};
  if (!op.empty()) {
    j["op"] = op;
    j["dtype"] = dtype;
  }
  return j;
}

PropertyOutcome runProperty(const std::string& id, const std::string& title, TargetSession& session,
                            const RunOptions& opts, const std::function<void()>& body, FailureRecord& last,
                            const std::string& skipped, const std::string& op, const std::string& dtype) {
  PropertyOutcome out;
  out.property = id;
  out.title = title;
  out.op = op;
  out.dtype = dtype;
  const std::string key = op.empty() ? id : id + "/" + op + "/" + dtype;  // RapidCheck's id for this run
  const auto t0 = std::chrono::steady_clock::now();
  rc::detail::TestParams params;
  params.maxSuccess = opts.cases > 0 ? opts.cases : session.target().cases;
  params.maxSize = opts.maxSize;
  params.maxDiscardRatio = 2;
  params.seed = opts.seed ? opts.seed : std::random_device{}() * 0x9E3779B97F4A7C15ull + std::random_device{}();
  rc::detail::TestMetadata md;
  md.id = key;
  md.description = title;
  rc::detail::TestListenerAdapter quiet;
  std::unordered_map<std::string, rc::detail::Reproduce> replay;
  if (!opts.reproduce.empty()) {
    try {
      replay = rc::detail::stringToReproduceMap(opts.reproduce);
    } catch (const std::exception& e) {
      out.status = "error";
      out.reason = std::string("malformed reproduce string: ") + e.what();
      return out;
    }
    if (!replay.count(key)) {
      out.status = "skip";
      out.reason = "not replayed: the reproduce string holds no counterexample for " + key;
      out.observations = {{"replayed", false}};
      return out;
    }
  }
  const auto result = rc::detail::checkProperty(rc::detail::toProperty(body), md, params, quiet, replay);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.observations = json::object();
  if (opts.reproduce.empty())
    out.observations["seed"] = params.seed;
  else
    out.observations["replayed"] = opts.reproduce;
  if (result.template is<rc::detail::SuccessResult>()) {
    const auto* s = &result.template get<rc::detail::SuccessResult>();
    out.casesRun = s->numSuccess;
    out.status = "pass";
    out.reason = std::to_string(s->numSuccess) + " generated cases held";
    // How the cases were classified (RC_TAG), e.g. {"active": 41, "reported-skip": 50, ...}.
    json dist = json::object();
    for (const auto& [tags, count] : s->distribution) {
      std::string k;
      for (auto t : tags) {
        if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);  // RC_TAG shows strings quoted
        k += (k.empty() ? "" : ",") + t;
      }
      dist[k.empty() ? "untagged" : k] = count;
    }
    out.observations["distribution"] = dist;
  } else if (result.template is<rc::detail::FailureResult>()) {
    const auto* f = &result.template get<rc::detail::FailureResult>();
    out.casesRun = f->numSuccess + 1;
    out.status = "fail";
    out.reason = last.why.empty() ? f->description : last.why;
    if (out.reason.rfind("harness error:", 0) == 0) out.status = "error";
    out.counterexample = last.caseJson;
    for (const auto& [type, value] : f->counterExample) out.counterexampleShown += value;
    std::unordered_map<std::string, rc::detail::Reproduce> rmap;
    rmap.emplace(key, f->reproduce);
    out.reproduce = rc::detail::reproduceMapToString(rmap);
    json obs = last.observations;
    if (opts.reproduce.empty())
      obs["seed"] = params.seed;
    else
      obs["replayed"] = opts.reproduce;
    out.observations = obs;
    if (!opts.reproducerDir.empty()) {
      try {
        out.reproducer = writeReproducer(opts.reproducerDir, session, out, last);
      } catch (const std::exception& e) {
        out.observations["reproducer_error"] = e.what();
      }
    }
  } else if (result.template is<rc::detail::GaveUpResult>()) {
    const auto* g = &result.template get<rc::detail::GaveUpResult>();
    out.casesRun = g->numSuccess;
    out.status = "skip";
    out.reason = skipped.empty() ? ("gave up: " + g->description) : skipped;
  } else if (result.template is<rc::detail::Error>()) {
    const auto* e = &result.template get<rc::detail::Error>();
    out.status = "error";
    out.reason = e->description;
  }
  return out;
}

std::optional<PropertyOutcome> skipIfInactive(const char* id, const char* title, const json& probe) {
  if (probe.at("active").get<bool>()) return std::nullopt;
  PropertyOutcome out;
  out.property = id;
  out.title = title;
  out.status = "skip";
  out.reason = std::string("the fast path is not active on this target (see P1), so there is nothing to compare");
  out.observations = {{"install", probe.at("call")}};
  if (probe.at("call").contains("note")) out.reason = probe.at("call").at("note").get<std::string>();
  return out;
}

bool parseReproduceString(const std::string& s, std::vector<std::string>& ids, std::string& error) {
  try {
    for (const auto& kv : rc::detail::stringToReproduceMap(s)) ids.push_back(kv.first);
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

const std::vector<PropertyDef>& properties() {
  static const std::vector<PropertyDef> defs = {
      {"P1", "install status", &runP1},
      {"P2", "idempotence", &runP2},
      {"P3", "stock fallback", &runP3},
      {"P4", "key equivalence", &runP4},
  };
  return defs;
}

}  // namespace flagprop
