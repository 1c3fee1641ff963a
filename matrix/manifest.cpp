#include "matrix/manifest.h"

#include "core/python.h"
#include "ops/catalog.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace flagprop {

namespace {

std::string resolve(const std::string& baseDir, const std::string& p) {
  fs::path path(p);
  if (path.is_relative()) path = fs::path(baseDir) / path;
  return fs::weakly_canonical(path).string();
}

const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& origin,
                            nlohmann::json::value_t type, const char* what) {
  if (!j.contains(key)) throw ManifestError(origin + ": missing field '" + what + "'");
  const auto& v = j.at(key);
  if (v.type() != type && !(type == nlohmann::json::value_t::number_integer && v.is_number_unsigned()))
    throw ManifestError(origin + ": field '" + what + "' has the wrong type (" + v.type_name() + ")");
  return v;
}

std::string optString(const nlohmann::json& j, const char* key, const std::string& origin, const char* what,
                      const std::string& dflt) {
  if (!j.contains(key) || j.at(key).is_null()) return dflt;
  if (!j.at(key).is_string()) throw ManifestError(origin + ": field '" + what + "' must be a string");
  return j.at(key).get<std::string>();
}

bool isHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

nlohmann::json parseJsonFile(const std::string& path) {
  const std::string text = readFile(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string msg = e.what();
    auto pos = msg.find("parse error");
    throw ManifestError(path + ": not valid JSON (" + (pos == std::string::npos ? msg : msg.substr(pos)) + ")");
  }
}

}  // namespace

bool Target::gatesOpen(const Gates& g) const {
  return g.routesToFlagGems && std::find(gateBuilds.begin(), gateBuilds.end(), g.accelerator) != gateBuilds.end();
}

nlohmann::json Target::toJson() const {
  nlohmann::json j = {{"manifest", manifestPath},
                      {"name", name},
                      {"device", device},
                      {"installer",
                       {{"mode", installerMode},
                        {"module", installerModule},
                        {"function", installerFunction},
                        {"path", installerPath},
                        {"python_path", pythonPath},
                        {"globals", installerGlobals},
                        {"sha256_expected", installerSha256}}},
                      {"flag_gems", {{"kind", flagGemsKind}, {"path", flagGemsPath}, {"libentry_sha256_expected", libentrySha256}}},
                      {"supply_helper", supplyHelper},
                      {"gate_builds", gateBuilds},
                      {"properties", properties},
                      {"cases", cases}};
  j["ops"] = {{"kind", ops.kind}, {"path", ops.path}, {"sha256_expected", ops.sha256}, {"globals", ops.globals},
              {"enable", ops.enable}};
  j["catalog"] = catalogOps;
  j["dtypes"] = dtypes;
  j["op_cases"] = opCases;
  j["max_elements"] = maxElements;
  j["specials"] = specials;
  j["layout_palette"] = layoutPalette;
  j["palette_seed"] = paletteSeed;
  j["gates"] = gates ? flagprop::toJson(*gates) : nlohmann::json("generated");
  return j;
}

std::string readFile(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ManifestError(path + ": no such file");
  if (fs::is_directory(path, ec)) throw ManifestError(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ManifestError(path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sha256File(const std::string& path) {
  const std::string bytes = readFile(path);  // clear error for a missing file
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  py::object h = py::module_::import("hashlib").attr("sha256")(py::bytes(bytes));
  return h.attr("hexdigest")().cast<std::string>();
}

Target parseTarget(const nlohmann::json& j, const std::string& origin, const std::string& baseDir) {
  using vt = nlohmann::json::value_t;
  if (!j.is_object()) throw ManifestError(origin + ": a target manifest must be a JSON object");
  const auto schema = field(j, "schema", origin, vt::string, "schema").get<std::string>();
  if (schema != "flagprop.target/1")
    throw ManifestError(origin + ": schema is '" + schema + "', expected 'flagprop.target/1'");
  // A misspelt field would otherwise be ignored silently (and its default used).
  auto known = [&](const nlohmann::json& obj, std::initializer_list<const char*> keys, const std::string& where) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (const char* k : keys) ok |= it.key() == k;
      if (!ok) {
        std::string list;
        for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        throw ManifestError(origin + ": unknown field '" + where + it.key() + "' (known: " + list + ")");
      }
    }
  };
  known(j, {"schema", "name", "description", "device", "installer", "flag_gems", "gates", "gate_builds", "properties",
            "cases", "expect", "reports_once", "labels", "ops", "catalog", "dtypes", "op_cases", "max_elements",
            "specials", "layout_palette", "palette_seed"},
        "");
  if (j.contains("installer") && j.at("installer").is_object())
    known(j.at("installer"), {"mode", "module", "function", "path", "sha256", "globals", "python_path"}, "installer.");
  if (j.contains("flag_gems") && j.at("flag_gems").is_object())
    known(j.at("flag_gems"), {"kind", "path", "libentry_sha256", "supply_helper"}, "flag_gems.");
  if (j.contains("ops") && j.at("ops").is_object())
    known(j.at("ops"), {"kind", "path", "sha256", "globals", "enable"}, "ops.");
  Target t;
  t.manifestPath = origin;
  t.name = field(j, "name", origin, vt::string, "name").get<std::string>();
  if (t.name.empty()) throw ManifestError(origin + ": field 'name' is empty");
  for (char c : t.name)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      throw ManifestError(origin + ": field 'name' may hold only letters, digits, '-', '_' and '.'");
  t.description = optString(j, "description", origin, "description", "");
  t.device = optString(j, "device", origin, "device", "cpu");

  static const nlohmann::json kNoInstaller = {{"mode", "none"}};
  const bool noInstaller = !j.contains("installer") || j.at("installer").is_null();
  const auto& inst = noInstaller ? kNoInstaller : field(j, "installer", origin, vt::object, "installer");
  t.installerMode = optString(inst, "mode", origin, "installer.mode", "source");
  if (t.installerMode != "source" && t.installerMode != "installed" && !(noInstaller && t.installerMode == "none"))
    throw ManifestError(origin + ": installer.mode must be 'source' or 'installed', not '" + t.installerMode + "'");
  t.installerModule = optString(inst, "module", origin, "installer.module", t.installerModule);
  t.installerFunction = optString(inst, "function", origin, "installer.function", t.installerFunction);
  if (t.installerMode == "source") {
    const std::string p = field(inst, "path", origin, vt::string, "installer.path").get<std::string>();
    t.installerPath = resolve(baseDir, p);
    std::error_code ec;
    if (!fs::is_regular_file(t.installerPath, ec))
      throw ManifestError(origin + ": installer.path '" + p + "' does not exist (resolved to " + t.installerPath + ")");
  }
  t.installerSha256 = optString(inst, "sha256", origin, "installer.sha256", "");
  if (inst.contains("globals")) t.installerGlobals = field(inst, "globals", origin, vt::object, "installer.globals");
  if (inst.contains("python_path")) {
    const auto& pp = field(inst, "python_path", origin, vt::array, "installer.python_path");
    for (const auto& x : pp) {
      if (!x.is_string()) throw ManifestError(origin + ": installer.python_path must list folders (strings)");
      const std::string dir = resolve(baseDir, x.get<std::string>());
      std::error_code ec;
      if (!fs::is_directory(dir, ec))
        throw ManifestError(origin + ": installer.python_path folder '" + x.get<std::string>() + "' does not exist");
      t.pythonPath.push_back(dir);
    }
  }
  if (!t.installerSha256.empty() && !isHex64(t.installerSha256))
    throw ManifestError(origin + ": installer.sha256 must be 64 lower-case hex digits");

  if (j.contains("flag_gems")) {
    const auto& fg = field(j, "flag_gems", origin, vt::object, "flag_gems");
    t.flagGemsKind = optString(fg, "kind", origin, "flag_gems.kind", "mock");
    if (t.flagGemsKind != "mock" && t.flagGemsKind != "source" && t.flagGemsKind != "installed")
      throw ManifestError(origin + ": flag_gems.kind must be 'mock', 'source' or 'installed', not '" + t.flagGemsKind + "'");
    if (t.flagGemsKind == "source") {
      const std::string p = field(fg, "path", origin, vt::string, "flag_gems.path").get<std::string>();
      t.flagGemsPath = resolve(baseDir, p);
      std::error_code ec;
      if (!fs::is_regular_file(fs::path(t.flagGemsPath) / "flag_gems" / "utils" / "libentry.py", ec))
        throw ManifestError(origin + ": flag_gems.path '" + p + "' has no flag_gems/utils/libentry.py (resolved to " +
                            t.flagGemsPath + ")");
    }
    t.libentrySha256 = optString(fg, "libentry_sha256", origin, "flag_gems.libentry_sha256", "");
    if (!t.libentrySha256.empty() && !isHex64(t.libentrySha256))
      throw ManifestError(origin + ": flag_gems.libentry_sha256 must be 64 lower-case hex digits");
    if (fg.contains("supply_helper")) {
      if (!fg.at("supply_helper").is_boolean()) throw ManifestError(origin + ": flag_gems.supply_helper must be true or false");
      t.supplyHelper = fg.at("supply_helper").get<bool>();
    }
  }
  if (j.contains("gates") && !(j.at("gates").is_string() && j.at("gates") == "generate")) {
    const auto& g = field(j, "gates", origin, vt::object, "gates");
    Gates gates;
    gates.accelerator = field(g, "accelerator", origin, vt::string, "gates.accelerator").get<std::string>();
    gates.routesToFlagGems = field(g, "routes_to_flaggems", origin, vt::boolean, "gates.routes_to_flaggems").get<bool>();
    t.gates = gates;
  }
  if (j.contains("gate_builds")) {
    const auto& b = field(j, "gate_builds", origin, vt::array, "gate_builds");
    t.gateBuilds.clear();
    for (const auto& x : b) {
      if (!x.is_string()) throw ManifestError(origin + ": gate_builds must list strings");
      t.gateBuilds.push_back(x.get<std::string>());
    }
  }
  if (j.contains("properties")) {
    const auto& ps = field(j, "properties", origin, vt::array, "properties");
    t.properties.clear();
    for (const auto& x : ps) {
      const std::string id = x.is_string() ? x.get<std::string>() : "";
      if (id != "P1" && id != "P2" && id != "P3" && id != "P4" && id != "P5" && id != "P6")
        throw ManifestError(origin + ": properties may name P1, P2, P3, P4, P5, P6; got " + x.dump());
      if (noInstaller && id != "P5" && id != "P6")
        throw ManifestError(origin + ": " + id + " needs an installer; this target has none (field 'installer')");
      t.properties.push_back(id);
    }
  } else if (noInstaller) {
    t.properties = {"P5", "P6"};
  }
  if (j.contains("ops")) {
    const auto& o = field(j, "ops", origin, vt::object, "ops");
    t.ops.kind = optString(o, "kind", origin, "ops.kind", "aten");
    if (t.ops.kind != "aten" && t.ops.kind != "module")
      throw ManifestError(origin + ": ops.kind must be 'aten' or 'module', not '" + t.ops.kind + "'");
    if (t.ops.kind == "module") {
      const std::string p = field(o, "path", origin, vt::string, "ops.path").get<std::string>();
      t.ops.path = resolve(baseDir, p);
      std::error_code ec;
      if (!fs::is_regular_file(t.ops.path, ec))
        throw ManifestError(origin + ": ops.path '" + p + "' does not exist (resolved to " + t.ops.path + ")");
    }
    t.ops.sha256 = optString(o, "sha256", origin, "ops.sha256", "");
    if (!t.ops.sha256.empty() && !isHex64(t.ops.sha256))
      throw ManifestError(origin + ": ops.sha256 must be 64 lower-case hex digits");
    if (o.contains("globals")) t.ops.globals = field(o, "globals", origin, vt::object, "ops.globals");
    t.ops.enable = optString(o, "enable", origin, "ops.enable", "");
    if (!t.ops.enable.empty() && t.ops.enable != "flag_gems")
      throw ManifestError(origin + ": ops.enable may only be 'flag_gems'; got '" + t.ops.enable + "'");
  }
  auto stringList = [&](const char* key) {
    std::vector<std::string> out;
    for (const auto& x : field(j, key, origin, vt::array, key)) {
      if (!x.is_string()) throw ManifestError(origin + ": " + key + " must list strings");
      out.push_back(x.get<std::string>());
    }
    return out;
  };
  if (j.contains("catalog")) {
    t.catalogOps = stringList("catalog");
    for (const auto& n : t.catalogOps)
      if (!findOp(n)) {
        std::string known;
        for (const auto& e : catalog()) known += (known.empty() ? "" : ", ") + e.name;
        throw ManifestError(origin + ": catalog names unknown op '" + n + "' (known: " + known + ")");
      }
  }
  if (j.contains("dtypes")) {
    t.dtypes = stringList("dtypes");
    for (const auto& d : t.dtypes)
      if (!knownDtype(d))
        throw ManifestError(origin + ": dtypes may name float32, float16, bfloat16, int32; got '" + d + "'");
  }
  auto intField = [&](const char* key, long long lo, long long hi) {
    const auto& c = j.at(key);
    if (!c.is_number_integer() || c.get<long long>() < lo || c.get<long long>() > hi)
      throw ManifestError(origin + ": " + key + " must be an integer from " + std::to_string(lo) + " to " +
                          std::to_string(hi));
    return c.get<long long>();
  };
  if (j.contains("op_cases")) t.opCases = static_cast<int>(intField("op_cases", 1, 100000));
  if (j.contains("max_elements")) t.maxElements = intField("max_elements", 1, 1LL << 40);
  if (j.contains("layout_palette")) t.layoutPalette = static_cast<int>(intField("layout_palette", 0, 4096));
  if (j.contains("palette_seed")) t.paletteSeed = static_cast<uint64_t>(intField("palette_seed", 0, 1LL << 62));
  if (j.contains("specials")) {
    if (!j.at("specials").is_boolean()) throw ManifestError(origin + ": specials must be true or false");
    t.specials = j.at("specials").get<bool>();
  }
  if (j.contains("cases")) {
    const auto& c = j.at("cases");
    if (!c.is_number_integer() || c.get<long long>() < 1 || c.get<long long>() > 100000)
      throw ManifestError(origin + ": cases must be an integer from 1 to 100000");
    t.cases = c.get<int>();
  }
  if (j.contains("expect")) {
    t.expect = field(j, "expect", origin, vt::object, "expect");
    for (auto it = t.expect.begin(); it != t.expect.end(); ++it) {
      const std::string k = it.key();
      const std::string why = checkRunKey(k);
      if (!why.empty()) throw ManifestError(origin + ": expect key '" + k + "': " + why);
      const std::string v = it.value().is_string() ? it.value().get<std::string>() : "";
      if (v != "pass" && v != "fail" && v != "skip" && v != "error")
        throw ManifestError(origin + ": expect." + k + " must be pass, fail, skip or error; got " + it.value().dump());
    }
  }
  if (j.contains("reports_once")) {
    if (!j.at("reports_once").is_boolean()) throw ManifestError(origin + ": reports_once must be true or false");
    t.reportsOnce = j.at("reports_once").get<bool>();
  }
  if (j.contains("labels"))
    for (const auto& x : field(j, "labels", origin, vt::array, "labels"))
      if (x.is_string()) t.labels.push_back(x.get<std::string>());
  return t;
}

Target loadTarget(const std::string& path) {
  const std::string abs = fs::weakly_canonical(fs::absolute(path)).string();
  nlohmann::json j = parseJsonFile(abs);
  return parseTarget(j, abs, fs::path(abs).parent_path().string());
}

std::vector<std::string> expandManifest(const std::string& path) {
  const std::string abs = fs::weakly_canonical(fs::absolute(path)).string();
  nlohmann::json j = parseJsonFile(abs);
  if (!j.is_object() || !j.contains("schema") || !j.at("schema").is_string())
    throw ManifestError(abs + ": missing field 'schema'");
  const std::string schema = j.at("schema").get<std::string>();
  if (schema == "flagprop.target/1") return {abs};
  if (schema != "flagprop.matrix/1")
    throw ManifestError(abs + ": schema is '" + schema + "', expected 'flagprop.matrix/1' or 'flagprop.target/1'");
  if (!j.contains("targets") || !j.at("targets").is_array())
    throw ManifestError(abs + ": missing field 'targets' (a list of target manifest paths)");
  std::vector<std::string> out;
  const std::string base = fs::path(abs).parent_path().string();
  for (const auto& t : j.at("targets")) {
    if (!t.is_string()) throw ManifestError(abs + ": 'targets' must list paths (strings)");
    out.push_back(resolve(base, t.get<std::string>()));
  }
  return out;
}

std::string defaultManifest() { return fixturesDir() + "/targets/default.json"; }

}  // namespace flagprop
