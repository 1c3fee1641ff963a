#include "harness/session.h"

#include <cstdlib>

#include "core/files.h"
#include "core/native_runtime.h"
#include "core/sandbox.h"
#include "core/tensor_bridge.h"

#include <algorithm>
#include <chrono>

#include <sys/stat.h>
#include <cstdlib>

namespace flagprop {

void TargetSession::mismatch(const std::string& what) {
  if (!allowUnverified_) throw ManifestError(target_.manifestPath + ": " + what);
  provenance_["unverified"].push_back(what);
}

std::vector<std::string> TargetSession::unverified() const {
  std::vector<std::string> out;
  for (const auto& m : provenance_.value("unverified", json::array())) out.push_back(m.get<std::string>());
  return out;
}

void TargetSession::pin(const std::string& key, const std::string& path, const std::string& expected,
                        const char* what) {
  std::string seen;
  try {
    seen = sha256File(path);
  } catch (const FileError& e) {
    throw ManifestError(target_.manifestPath + ": " + e.what());
  }
  provenance_[key] = seen;
  if (!expected.empty() && seen != expected)
    mismatch(std::string(what) + " sha256 mismatch for " + path + ": expected " + expected + ", saw " + seen);
}

void TargetSession::checkVersions() {
  if (!target_.pin) return;
  const json& v = provenance_.at("versions");
  for (const auto& [name, want] :
       {std::pair<std::string, std::string>{"torch", target_.pin->torch}, {"triton", target_.pin->triton}}) {
    const std::string seen = v.value(name, json()).is_string() ? v.at(name).get<std::string>() : "absent";
    if (!want.empty() && seen.rfind(want, 0) != 0)
      mismatch(name + " version " + seen + ", the pin " + target_.pin->name + " names " + want);
  }
}

TargetSession::TargetSession(Target t, bool unverified) : target_(std::move(t)), allowUnverified_(unverified) {
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  pyImport("flagprop.judging.checks")
      .attr("baseline")();  // before any code under test loads (flagprop.judging.checks.tampered)
  targetJson_ = target_.toJson();
  pyTarget_ = fromJson(targetJson_);
  checkHashes();
  checkDevice();
  dryLoad();
  const py::module_ session = pyImport("flagprop.engine.session");
  provenance_["versions"] = toJson(session.attr("versions")());
  if (target_.pin) provenance_["pin"] = target_.pin->toJson();
  checkVersions();
  provenance_["libtorch_compiled"] = libtorchVersion();
  const auto colon = target_.device.find(':');
  const int ordinal = colon == std::string::npos ? 0 : std::stoi(target_.device.substr(colon + 1));
  provenance_["native_runtime"] = {{"hip", hipWitness(ordinal).toJson()}, {"cuda", cudaWitness(ordinal).toJson()}};
  provenance_["device"] = target_.device;
  // Which GPUs the process was shown (--devices, a ctest resource group, Slurm).
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"})
    if (const char* v = std::getenv(var)) provenance_["visible_devices"][var] = v;
  provenance_["gates"] = target_.gates ? toJson(*target_.gates) : json("generate");  // the manifest's spelling
}

void TargetSession::checkHashes() {
  const std::string& origin = target_.manifestPath;
  if (target_.installer.mode == "source")
    pin("installer_sha256", target_.installer.path, target_.installer.sha256, "installer");
  if (target_.ops.kind == "module") pin("ops_sha256", target_.ops.path, target_.ops.sha256, "ops");
  if (target_.flagGems.kind == "mock") return;
  std::string libentry;
  try {
    if (target_.flagGems.kind == "source")
      pyImport("flagprop.engine.loader").attr("add_flag_gems_source")(target_.flagGems.path);
    py::module_ le = py::module_::import("flag_gems.utils.libentry");
    libentry = py::str(le.attr("__file__")).cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw ManifestError(origin + ": cannot import flag_gems (" + describe(e) + ")");
  }
  provenance_["libentry_path"] = libentry;
  pin("libentry_sha256", libentry, target_.flagGems.libentrySha256, "libentry");
}

void TargetSession::checkDevice() {
  const std::string& origin = target_.manifestPath;
  const std::string& dev = target_.device;
  py::module_ torch = py::module_::import("torch");
  if (dev.rfind("cuda", 0) == 0) {
    if (!torch.attr("cuda").attr("is_available")().cast<bool>())
      throw ManifestError(origin + ": device " + dev + " is not available on this machine (no CUDA device)");
  } else if (dev.rfind("flagos", 0) == 0) {
    // The flagos device exists once torch_fl is imported and sees a device.
    try {
      py::module_::import("torch_fl");
      if (py::module_::import("torch_fl.flagos").attr("device_count")().cast<int>() <= 0)
        throw ManifestError(origin + ": device " + dev + " is not available on this machine (no flagos device)");
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": device " + dev + " needs torch_fl (" + describe(e) + ")");
    }
  }
}

void TargetSession::dryLoad() {
  // A missing installer function, a module that does not load or an op
  // module that is not Python is one target error, not one per case.
  const std::string& origin = target_.manifestPath;
  const py::module_ session = pyImport("flagprop.engine.session");
  const py::object gates = fromJson(toJson(target_.defaultGates()));
  if (target_.flagGems.kind == "mock") {
    try {
      pyImport("flagprop_mocks").attr("full")(fromJson(target_.flagGems.mock));
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": field 'flag_gems.mock': " + describe(e));
    }
  }
  if (target_.hasInstaller()) {
    Sandbox sb;
    try {
      session.attr("prepare_flag_gems")(pyTarget_, py::dict());
      const json claims = toJson(session.attr("claims")(pyTarget_, gates));
      if (claims.contains("error")) throw ManifestError(origin + ": " + claims.at("error").get<std::string>());
      provenance_["claims"] = claims;
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": " + describe(e));
    }
  }
  if (target_.ops.kind == "module") {
    Sandbox sb;
    try {
      pyImport("flagprop.engine.ops").attr("load_module")(pyTarget_);
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": ops.path " + target_.ops.path + " does not load as Python (" + describe(e) + ")");
    }
  }
  if (target_.installer.mode == "installed") {
    // Installed mode runs with the package's real gates, whatever the manifest says.
    Sandbox sb;
    try {
      const json g = toJson(session.attr("real_gates")(pyTarget_));
      target_.gates = Gates{g.at("accelerator").get<std::string>(), g.at("routes_to_flaggems").get<bool>()};
      targetJson_ = target_.toJson();
      pyTarget_ = fromJson(targetJson_);
    } catch (const py::error_already_set& e) {
      throw ManifestError(origin + ": cannot read the installed gates (" + describe(e) + ")");
    }
  }
}

bool TargetSession::gatesOpen(const Gates& g) const {
  py::gil_scoped_acquire gil;
  return pyImport("flagprop.judging.verdicts")
      .attr("gates_open")(fromJson(toJson(g)), fromJson(target_.gateBuilds))
      .cast<bool>();
}

json TargetSession::check(const std::string& kind, const json& caseJson, const json& judging) {
  Batch b = checkBatch(kind, {caseJson}, judging, nullptr);
  return std::move(b.results.at(0));
}

TargetSession::Batch TargetSession::checkBatch(const std::string& kind, const std::vector<json>& cases,
                                               const json& judging, const std::function<void(size_t)>& beforeEach) {
  using Clock = std::chrono::steady_clock;
  const auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  const auto t0 = Clock::now();
  py::gil_scoped_acquire gil;
  Batch out;
  std::vector<py::object> pyCases, seen;
  std::vector<double> ownUs;  // each case's observing, then its judging added
  double sandboxUs = 0, tamperUs = 0;
  bool reused = false;
  std::string walked;
  {
    // The file mode mask is process state the Python sandbox cannot see: an
    // op's os.umask(0o777) made every file flagprop wrote after it unreadable.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    struct MaskBack {
      mode_t m;
      ~MaskBack() { ::umask(m); }
    } maskBack{mask};
    const auto s0 = Clock::now();
    Sandbox sb;
    const auto s1 = Clock::now();
    const py::module_ checks = pyImport("flagprop.judging.checks");
    const py::object k = py::str(kind), j = fromJson(judging);
    for (size_t i = 0; i < cases.size(); ++i) {
      if (beforeEach) beforeEach(i);
      const auto o0 = Clock::now();
      py::object c = fromJson(cases[i]);
      py::object obs;
      try {
        obs = checks.attr("observe")(k, pyTarget_, c, j);
      } catch (const py::error_already_set&) {
        if (cases.size() == 1) throw;  // the sandbox restores on the way out
        break;                         // judged alone, it raises there again
      }
      pyCases.push_back(c);
      seen.push_back(obs);
      ownUs.push_back(us(Clock::now() - o0));
      if (i + 1 < cases.size() && checks.attr("ends_batch")(obs).cast<bool>()) break;
    }
    const auto s2 = Clock::now();
    const mode_t maskAfter = ::umask(mask);  // put back here, so that the judging writes with the run's mask
    sb.restore();
    sandboxUs = us((s1 - s0) + (Clock::now() - s2));
    out.changed = sb.changed();
    if (out.changed.empty() && maskAfter != mask) out.changed = "the file mode mask";
    reused = sb.reused();
    if (!reused) walked = sb.walkedBecause();
    // Judged only now: whatever the code under test rebound (torch.equal,
    // flagprop.judging.verdicts, a Tensor method) is back as it was before the case;
    // what a restore cannot undo makes the judging untrustworthy (an error).
    const py::object op = cases[0].is_object() && cases[0].contains("op")
                              ? py::object(py::str(cases[0].value("op", "")))
                              : py::object(py::none());
    if (seen.empty()) return out;  // the batch's first case raised: as one case, no tamper check after it
    const auto s3 = Clock::now();
    const std::string tampered = py::str(checks.attr("tampered")(op)).cast<std::string>();
    if (!tampered.empty()) throw std::runtime_error(tampered);
    tamperUs = us(Clock::now() - s3);
    for (size_t i = 0; i < seen.size(); ++i) {
      const auto j0 = Clock::now();
      try {
        out.results.push_back(toJson(checks.attr("judge")(k, pyTarget_, pyCases[i], seen[i], j)));
      } catch (const py::error_already_set&) {
        if (cases.size() == 1) throw;
        break;  // this case and those after it are judged alone, where it raises again
      }
      ownUs[i] += us(Clock::now() - j0);
    }
    ownUs.resize(out.results.size());
  }
  // Each case's part: its own time and an equal part of the rest (the
  // sandbox, the tamper check, the conversions); one case: the whole call.
  const double n = static_cast<double>(out.results.size());
  double own = 0;
  for (double x : ownUs) own += x;
  const double shared = std::max(0.0, us(Clock::now() - t0) - own) / n;
  for (size_t i = 0; i < out.results.size(); ++i) {
    json& r = out.results[i];
    r["tamper_us"] = tamperUs / n;
    r["sandbox_reused"] = reused;
    if (!reused) r["sandbox_walked"] = walked;
    r["time_us"] = ownUs[i] + shared;
    r["sandbox_us"] = sandboxUs / n;
    if (n > 1) r["batch"] = static_cast<int>(n);
    for (const auto& l : r.value("left_running", json::array())) {
      // A thread is the same one however often its name recurs; a process is its pid (ten
      // `sleep`s left running are ten processes).
      const char* id = l.value("kind", "") == "thread" ? "name" : "pid";
      bool known = false;
      for (const auto& x : leftRunning_)
        known |= x.value("kind", "") == l.value("kind", "") && x.value(id, json()) == l.value(id, json());
      if (!known) leftRunning_.push_back(l);
    }
  }
  return out;
}

json TargetSession::opinfoSamples(const std::string& name) {
  py::gil_scoped_acquire gil;
  return json::parse(pyImport("flagprop.engine.opinfo").attr("samples")(name).cast<std::string>());
}

json TargetSession::setupOps(const std::vector<std::string>& opNames) {
  py::gil_scoped_acquire gil;
  try {
    return toJson(pyImport("flagprop.engine.ops").attr("setup")(pyTarget_, opNames));
  } catch (const py::error_already_set& e) {
    throw ManifestError(target_.manifestPath + ": setting up the op under test failed (" + describe(e) + ")");
  }
}

}  // namespace flagprop
