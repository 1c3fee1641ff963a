#include "reports/reproducer.h"

#include "matrix/manifest.h"
#include "ops/catalog.h"

#include <filesystem>
#include <fstream>

#ifndef FLAGPROP_SOURCE_DIR
#error "FLAGPROP_SOURCE_DIR must be defined by the build"
#endif

namespace fs = std::filesystem;

namespace flagprop {

namespace {
// A JSON string literal is also a valid Python string literal.
std::string pyString(const std::string& s) { return json(s).dump(); }
std::string pyJson(const json& j) { return "json.loads(" + pyString(j.dump()) + ")"; }
}  // namespace

std::string writeReproducer(const std::string& dir, const TargetSession& session, const PropertyOutcome& outcome,
                            const FailureRecord& failure) {
  fs::create_directories(dir);
  const Target& t = session.target();
  // Two manifests may share a name: the manifest path's hash keeps their files apart.
  const std::string tag = std::to_string(std::hash<std::string>{}(t.manifestPath) % 10000);
  const bool opKind = failure.reproKind == "op";
  std::string id = outcome.property + (outcome.op.empty() ? "" : "_" + outcome.op + "_" + outcome.dtype);
  for (auto& ch : id)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  const std::string path = (fs::path(dir) / ("repro_" + t.name + "_" + id + "_" + tag + ".py")).string();
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write reproducer " + path);
  const std::string pyDir = pythonPackageDir() + "/flagprop";
  out << "#!/usr/bin/env python3\n"
      << "\"\"\"flagprop reproducer: " << outcome.property << " (" << outcome.title << ") on target " << t.name << ".\n\n"
      << "Finding: " << json(outcome.reason).dump().substr(1, std::min<size_t>(json(outcome.reason).dump().size() - 2, 400))
      << "\n\nRun with plain python3 (needs torch; flagprop is not needed: its small\n"
      << "helper modules -- its own code -- are embedded below). Exits 1 when the\n"
      << "failure reproduces, 0 when it does not, 2 when the installer file is missing,\n"
      << "3 when it cannot run here (e.g. no torch).\n"
      << "RapidCheck replay inside flagprop: --reproduce " << outcome.reproduce << "\n\"\"\"\n\n"
      << "import json\nimport sys\nimport types\n\n"
      << "TARGET_NAME = " << pyString(t.name) << "\n"
      << "PROPERTY = " << pyString(outcome.property) << "\n"
      << "REASON = " << pyString(outcome.reason) << "\n"
      << "KIND = " << pyString(failure.reproKind) << "\n"
      << "TARGET = " << pyJson(toJson(session.targetDict())) << "\n"
      << "INSTALLER_SHA256 = " << pyString(session.provenance().value("installer_sha256", "")) << "\n"
      << "GATE_BUILDS = " << pyJson(t.gateBuilds) << "\n"
      << "REPORTS_ONCE = " << (t.reportsOnce ? "True" : "False") << "\n"
      << "DEFAULT_GATES = " << pyJson(toJson(session.defaultGates())) << "\n"
      << "CASE = " << pyJson(failure.caseJson) << "\n";
  if (opKind) {
    // Tolerances of the counterexample's outputs, from the catalog entry.
    const OpEntry* e = findOp(outcome.op);
    json tol = json::array();
    if (e) {
      const OpCase c = opCaseFromJson(failure.caseJson);
      const json& calls = failure.observations.value("calls", json::array());
      for (size_t k = 0; k < c.calls.size(); ++k) {
        json per = json::array();
        const json expected = k < calls.size() ? calls[k].value("expected", json::array()) : json::array();
        for (size_t i = 0; i < expected.size(); ++i) {
          const Tolerance tl = e->tolerance(c.dtype, expected[i].value("dtype", ""), i, c.calls[k]);
          per.push_back({tl.rtol, tl.atol});
        }
        tol.push_back(per);
      }
    }
    out << "DEVICE = " << pyString(t.device) << "\n"
        << "UPCAST = " << (e && e->upcast ? "True" : "False") << "\n"
        << "TOLERANCES = " << pyJson(tol) << "\n";
  }
  out << "\n"
      << "# flagprop's own helper modules (python/flagprop), embedded verbatim.\n"
      << "_SOURCES = {\n";
  for (const char* m : {"mocks", "loader", "observe", "launch", "session", "ops"})
    out << "    " << pyString(m) << ": " << pyString(readFile(pyDir + "/" + m + ".py")) << ",\n";
  out << "}\n\n\n"
      << "def _load_helpers():\n"
      << "    pkg = types.ModuleType(\"flagprop\")\n"
      << "    pkg.__path__ = []\n"
      << "    sys.modules[\"flagprop\"] = pkg\n"
      << "    for name in (\"mocks\", \"loader\", \"observe\", \"launch\", \"session\", \"ops\"):\n"
      << "        mod = types.ModuleType(\"flagprop.\" + name)\n"
      << "        mod.__package__ = \"flagprop\"\n"
      << "        sys.modules[mod.__name__] = mod\n"
      << "        setattr(pkg, name, mod)\n"
      << "        exec(compile(_SOURCES[name], \"<flagprop.\" + name + \">\", \"exec\"), mod.__dict__)\n\n\n"
      << readFile(std::string(FLAGPROP_SOURCE_DIR) + (opKind ? "/reports/repro_ops.py.in" : "/reports/repro_main.py.in"));
  if (!out) throw std::runtime_error("cannot write reproducer " + path);
  return path;
}

}  // namespace flagprop
