#include "reports/reproducer.h"

#include "core/files.h"

#include <filesystem>

#ifndef FLAGPROP_SOURCE_DIR
#error "FLAGPROP_SOURCE_DIR must be defined by the build"
#endif

namespace fs = std::filesystem;

namespace flagprop {

namespace {

// A JSON string literal is also a valid Python string literal.
std::string pyString(const std::string& s) { return json(s).dump(); }
std::string pyJson(const json& j) { return "json.loads(" + pyString(j.dump()) + ")"; }

// flagprop's Python modules a reproducer embeds, in the order they run:
// (module, is a package, source file under the source tree).
struct Embedded {
  const char* module;
  bool package;
  const char* file;
};
const Embedded kEmbedded[] = {
    {"flagprop_mocks", true, "mocks/flagprop_mocks/__init__.py"},
    {"flagprop_mocks.spec", false, "mocks/flagprop_mocks/spec.py"},
    {"flagprop_mocks.libentry", false, "mocks/flagprop_mocks/libentry.py"},
    {"flagprop", true, "python/flagprop/__init__.py"},
    {"flagprop.loader", false, "python/flagprop/loader.py"},
    {"flagprop.observe", false, "python/flagprop/observe.py"},
    {"flagprop.verdicts", false, "python/flagprop/verdicts.py"},
    {"flagprop.launch", false, "python/flagprop/launch.py"},
    {"flagprop.real_launch", false, "python/flagprop/real_launch.py"},
    {"flagprop.session", false, "python/flagprop/session.py"},
    {"flagprop.ops", false, "python/flagprop/ops.py"},
    {"flagprop.hits", false, "python/flagprop/hits.py"},
    {"flagprop.streams", false, "python/flagprop/streams.py"},
    {"flagprop.timing", false, "python/flagprop/timing.py"},
    {"flagprop.checks", false, "python/flagprop/checks.py"},
};

// Modules run in this order; a package's own code runs after its submodules
// (its __init__ imports them).
std::string modulesTable() {
  const std::string src = FLAGPROP_SOURCE_DIR;
  std::string out = "_MODULES = [\n";
  auto emit = [&](const Embedded& m) {
    out += "    (" + pyString(m.module) + ", " + (m.package ? "True" : "False") + ", " +
           pyString(readFile(src + "/" + m.file)) + "),\n";
  };
  for (const auto& m : kEmbedded)
    if (std::string(m.module).rfind("flagprop_mocks.", 0) == 0) emit(m);
  for (const auto& m : kEmbedded)
    if (std::string(m.module).rfind("flagprop_mocks.", 0) != 0) emit(m);
  return out + "]\n";
}

}  // namespace

std::string writeReproducer(const std::string& dir, const json& target, const json& provenance,
                            const PropertyOutcome& outcome, const std::string& nameSuffix) {
  fs::create_directories(dir);
  const std::string name = target.value("name", std::string("target"));
  // Two manifests may share a name: the manifest path's hash keeps their files apart.
  const std::string tag = std::to_string(std::hash<std::string>{}(target.value("manifest", std::string())) % 10000);
  std::string id = outcome.key();
  for (auto& ch : id)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  const std::string path = (fs::path(dir) / ("repro_" + name + "_" + id + nameSuffix + "_" + tag + ".py")).string();
  std::string text = "#!/usr/bin/env python3\n\"\"\"flagprop reproducer: " + outcome.key() + " (" + outcome.title +
                     ") on target " + name + ".\n\nFinding: " + outcome.reason.substr(0, 400) +
                     "\n\nRun it with the python3 that has torch (flagprop is not needed: its Python modules\n"
                     "are embedded below). Exits 1 when the failure reproduces, 0 when it does not,\n"
                     "2 when a file of the target is missing, 3 when it cannot run here.\n\"\"\"\n\n"
                     "import json\nimport sys\nimport types\n\n";
  text += "TARGET_NAME = " + pyString(name) + "\n";
  text += "KEY = " + pyString(outcome.key()) + "\n";
  text += "PROPERTY = " + pyString(outcome.property) + "\n";
  text += "REASON = " + pyString(outcome.reason) + "\n";
  text += "KIND = " + pyString(outcome.checkKind) + "\n";
  const json obs = outcome.observations.is_object() ? outcome.observations : json::object();
  text += "CRASH = " + pyString(obs.value("crash", std::string())) + "\n";
  text += "CRASH_LIMIT_S = " + std::to_string(obs.value("limit_s", 120)) + "\n";
  text += "TARGET = " + pyJson(target) + "\n";
  text += "INSTALLER_SHA256 = " + pyString(provenance.value("installer_sha256", std::string())) + "\n";
  text += "OPS_SHA256 = " + pyString(provenance.value("ops_sha256", std::string())) + "\n";
  text += "CASE = " + pyJson(outcome.counterexample) + "\n";
  text += "JUDGING = " + pyJson(outcome.judging) + "\n\n";
  text += modulesTable();
  text += readFile(std::string(FLAGPROP_SOURCE_DIR) + "/reports/reproducer.py.in");
  writeText(path, text);
  return path;
}

}  // namespace flagprop
