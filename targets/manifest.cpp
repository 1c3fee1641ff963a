#include "targets/manifest.h"

#include "catalog/catalog.h"
#include "catalog/schema_ops.h"
#include "core/files.h"
#include "core/python.h"
#include "core/tensor_bridge.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>

namespace fs = std::filesystem;
using nlohmann::json;

namespace flagprop {

namespace {

// `p` against `baseDir`, canonical as far as it can be resolved (a symbolic
// link loop stays as written: the existence check then names it).
std::string resolve(const std::string& baseDir, const std::string& p) {
  fs::path path(p);
  if (path.is_relative()) path = fs::path(baseDir) / path;
  std::error_code ec;
  const fs::path canon = fs::weakly_canonical(path, ec);
  return (ec ? path.lexically_normal() : canon).string();
}

bool isHex64(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One section (a JSON object) of a manifest, read strictly: an unknown key is
// an error, and every getter checks the type. `prefix` names the section in
// errors ("installer.").
class Section {
 public:
  Section(const json& obj, std::string origin, std::string prefix, std::vector<std::string> known)
      : obj_(obj), origin_(std::move(origin)), prefix_(std::move(prefix)) {
    if (!obj.is_object()) {
      if (prefix_.empty()) throw ManifestError(origin_ + ": a manifest must be a JSON object");
      throw ManifestError(origin_ + ": field '" + prefix_.substr(0, prefix_.size() - 1) + "' must be a JSON object" +
                          (prefix_ == "gates." ? " {accelerator, routes_to_flaggems} or \"generate\"" : "") + ", not " +
                          obj.type_name());
    }
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (std::find(known.begin(), known.end(), it.key()) == known.end())
        throw ManifestError(origin_ + ": unknown field '" + prefix_ + it.key() + "' (known: " + joined(known) + ")");
  }

  bool has(const std::string& key) const { return obj_.contains(key); }
  [[noreturn]] void fail(const std::string& why, const std::string& key) const {
    throw ManifestError(origin_ + ": " + (key.empty() && prefix_.empty() ? "" : "field '" + prefix_ + key + "' ") +
                        why);
  }
  /// Rejects `key` with `why` when it is present.
  void forbid(const std::string& key, const std::string& why) const {
    if (has(key)) fail(why, key);
  }
  std::string str(const std::string& key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    if (!obj_.at(key).is_string()) fail("must be a string, not " + std::string(obj_.at(key).type_name()), key);
    return obj_.at(key).get<std::string>();
  }
  std::string required(const std::string& key) const {
    if (!has(key)) fail("is missing", key);
    const std::string v = str(key, "");
    if (v.empty()) fail("is empty", key);
    return v;
  }
  std::string oneOf(const std::string& key, const std::string& dflt, const std::vector<std::string>& allowed) const {
    const std::string v = str(key, dflt);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      fail("must be one of " + joined(allowed) + ", not '" + v + "'", key);
    return v;
  }
  std::string sha256(const std::string& key) const {
    const std::string v = str(key, "");
    if (!v.empty() && !isHex64(v)) fail("must be 64 lower-case hex digits", key);
    return v;
  }
  bool boolean(const std::string& key, bool dflt) const {
    if (!has(key)) return dflt;
    if (!obj_.at(key).is_boolean()) fail("must be true or false", key);
    return obj_.at(key).get<bool>();
  }
  int64_t integer(const std::string& key, int64_t dflt, int64_t lo, int64_t hi) const {
    if (!has(key)) return dflt;
    const json& v = obj_.at(key);
    // nlohmann stores a non-negative literal as unsigned: both bounds apply to it too.
    const bool ok =
        v.is_number_integer() &&
        (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(hi) && (lo <= 0 || v.get<uint64_t>() >= uint64_t(lo))
                                : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi);
    if (!ok) fail("must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi), key);
    return v.get<int64_t>();
  }
  /// With `selection` (a list that narrows what runs: catalog, dtypes,
  /// properties), a list given must name something, each entry once: an
  /// empty one would silently mean "everything", a twice-named one run twice.
  std::vector<std::string> strings(const std::string& key, bool selection = false) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    if (!obj_.at(key).is_array()) fail("must be a list of strings", key);
    for (const auto& x : obj_.at(key)) {
      if (!x.is_string() || x.get<std::string>().empty()) fail("must list non-empty strings; got " + x.dump(), key);
      if (selection && std::find(out.begin(), out.end(), x.get<std::string>()) != out.end())
        fail("names '" + x.get<std::string>() + "' twice", key);
      out.push_back(x.get<std::string>());
    }
    if (selection && out.empty()) fail("lists nothing (leave it out for the default)", key);
    return out;
  }
  json object(const std::string& key) const {
    if (!has(key)) return json::object();
    if (!obj_.at(key).is_object()) fail("must be a JSON object", key);
    return obj_.at(key);
  }
  const json& raw(const std::string& key) const { return obj_.at(key); }
  /// An existing file or folder the manifest names, resolved against `base`.
  std::string path(const std::string& key, const std::string& base, bool folder) const {
    const std::string p = required(key);
    const std::string abs = resolve(base, p);
    std::error_code ec;
    if (!(folder ? fs::is_directory(abs, ec) : fs::is_regular_file(abs, ec)))
      throw MissingPathError(origin_ + ": field '" + prefix_ + key + "' '" + p + "' is not an existing " +
                             std::string(folder ? "folder" : "regular file") + " (resolved to " + abs + ")");
    return abs;
  }

 private:
  const json& obj_;
  std::string origin_, prefix_;
};

const std::vector<std::string> kStatuses = {"pass", "fail", "flaky", "skip", "error"};

InstallerSpec readInstaller(const Section& top, const std::string& origin, const std::string& base) {
  InstallerSpec s;
  if (!top.has("installer")) return s;
  const Section in(top.raw("installer"), origin, "installer.",
                   {"mode", "module", "function", "path", "sha256", "globals", "python_path", "components"});
  s.mode = in.oneOf("mode", "source", {"source", "installed"});
  s.module = in.str("module", s.module);
  s.function = in.str("function", s.function);
  if (s.module.find('.') == std::string::npos)
    in.fail("must name a module inside a package (e.g. torch_fl.flagos)", "module");
  s.components = in.strings("components");
  if (s.mode == "source") {
    s.path = in.path("path", base, false);
    if (fs::path(s.path).extension() != ".py") in.fail("must be a Python file (.py)", "path");
    s.sha256 = in.sha256("sha256");
    s.globals = in.object("globals");
    in.forbid("python_path", "applies to installed mode only");
  } else {
    for (const char* k : {"path", "sha256", "globals"}) in.forbid(k, "applies to source mode only");
    for (const auto& dir : in.strings("python_path")) {
      const std::string abs = resolve(base, dir);
      std::error_code ec;
      if (!fs::is_directory(abs, ec)) in.fail("folder '" + dir + "' does not exist", "python_path");
      s.pythonPath.push_back(abs);
    }
  }
  return s;
}

FlagGemsSpec readFlagGems(const Section& top, const std::string& origin, const std::string& base) {
  FlagGemsSpec s;
  if (!top.has("flag_gems")) return s;
  const Section fg(top.raw("flag_gems"), origin, "flag_gems.",
                   {"kind", "path", "libentry_sha256", "supply_helper", "mock"});
  s.kind = fg.oneOf("kind", "mock", {"mock", "source", "installed"});
  if (s.kind == "source") {
    s.path = fg.path("path", base, true);
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(s.path) / "flag_gems" / "utils" / "libentry.py", ec))
      fg.fail("'" + s.path + "' has no flag_gems/utils/libentry.py", "path");
  } else {
    fg.forbid("path", "applies to kind 'source' only");
  }
  if (s.kind == "mock") {
    fg.forbid("libentry_sha256", "applies to a real FlagGems (kind source or installed), not to the mocks");
    fg.forbid("supply_helper", "applies to a real FlagGems (kind source or installed); the mocks vary the helper");
    s.mock = fg.object("mock");  // checked against the mock spec schema when the target loads
  } else {
    fg.forbid("mock", "applies to kind 'mock' only");
  }
  s.libentrySha256 = fg.sha256("libentry_sha256");
  s.supplyHelper = fg.boolean("supply_helper", false);
  return s;
}

OpsSpec readOps(const Section& top, const std::string& origin, const std::string& base) {
  OpsSpec s;
  if (!top.has("ops")) return s;
  const Section o(top.raw("ops"), origin, "ops.", {"kind", "path", "sha256", "globals", "enable", "control"});
  s.kind = o.oneOf("kind", "aten", {"aten", "module"});
  if (s.kind == "module") {
    s.path = o.path("path", base, false);
    if (fs::path(s.path).extension() != ".py") o.fail("must be a Python file (.py)", "path");
    s.sha256 = o.sha256("sha256");
    s.globals = o.object("globals");
    o.forbid("enable", "applies to kind 'aten' only");
    if (o.has("control")) {  // the CPU model of a stock device path: a second op file
      if (!o.raw("control").is_object()) o.fail("must be an object {path, globals} for kind 'module'", "control");
      const Section c(o.raw("control"), origin, "ops.control.", {"path", "globals"});
      const std::string path = c.path("path", base, false);
      if (fs::path(path).extension() != ".py") c.fail("must be a Python file (.py)", "path");
      s.control = {{"path", path}, {"globals", c.object("globals")}};
    }
  } else {
    for (const char* k : {"path", "sha256", "globals"}) o.forbid(k, "applies to kind 'module' only");
    s.enable = o.oneOf("enable", "", {"", "flag_gems"});
    // FlagGems' kernels are judged against the device's own by default.
    s.control = o.oneOf("control", s.enable == "flag_gems" ? "stock" : "none", {"none", "stock"});
    if (s.control == "stock" && s.enable != "flag_gems") o.fail("\"stock\" needs \"enable\": \"flag_gems\"", "control");
  }
  return s;
}

std::optional<Gates> readGates(const Section& top, const std::string& origin) {
  if (!top.has("gates")) return std::nullopt;
  const json& g = top.raw("gates");
  if (g.is_string()) {
    if (g != "generate") top.fail("must be \"generate\" or an object {accelerator, routes_to_flaggems}", "gates");
    return std::nullopt;
  }
  const Section s(g, origin, "gates.", {"accelerator", "routes_to_flaggems"});
  if (!s.has("routes_to_flaggems")) s.fail("is missing", "routes_to_flaggems");
  Gates gates;
  gates.accelerator = s.required("accelerator");
  gates.routesToFlagGems = s.boolean("routes_to_flaggems", true);
  return gates;
}

void readOpSelection(const Section& top, Target& t) {
  if (top.has("catalog") && top.raw("catalog").is_string()) {
    if (top.raw("catalog").get<std::string>() != "flaggems")
      top.fail("must be a list of ops or \"flaggems\" (every overload FlagGems registers)", "catalog");
    t.catalogOps = flaggemsOverloads();  // excluded ones become skips with the reason
    t.catalogSource = "flaggems";
  } else {
    t.catalogOps = top.strings("catalog", true);
    // A name that is no overload at all (a typo) is an error; an overload
    // flagprop cannot run (randint: random) is a skip with its reason, as
    // in the "flaggems" list, and the other ops run.
    for (const auto& n : t.catalogOps)
      if (!findOp(n) && !atenOpSchema(n))
        top.fail("names op '" + n + "', which flagprop cannot run: " + whyExcluded(n) +
                     " (hand-written entries: " + catalogNames() + ")",
                 "catalog");
  }
  t.dtypes = top.strings("dtypes", true);
  for (const auto& d : t.dtypes) {
    const std::string why = checkCatalogDtype(d);
    if (!why.empty()) top.fail(why, "dtypes");
  }
  t.opCases = static_cast<int>(top.integer("op_cases", t.opCases, 1, 100000));
  t.explicitCases = static_cast<int>(top.integer("explicit_cases", t.explicitCases, 0, 4096));
  t.maxElements = top.integer("max_elements", t.maxElements, 1, int64_t(1) << 40);
  t.specials = top.boolean("specials", t.specials);
  t.layoutPalette = static_cast<int>(top.integer("layout_palette", 0, 0, 4096));
  t.paletteSeed = static_cast<uint64_t>(top.integer("palette_seed", 0, 0, int64_t(1) << 62));
}

void readExpect(const Section& top, Target& t) {
  t.expect = top.object("expect");
  for (auto it = t.expect.begin(); it != t.expect.end(); ++it) {
    const std::string why = checkRunKeySyntax(it.key());
    if (!why.empty()) top.fail("key '" + it.key() + "': " + why, "expect");
    const std::string v = it.value().is_string() ? it.value().get<std::string>() : "";
    if (std::find(kStatuses.begin(), kStatuses.end(), v) == kStatuses.end())
      top.fail("must be one of pass, fail, skip, error; got " + it.value().dump(), "expect." + it.key());
  }
}

// The manifest `j` with the sections its pin supplies merged in; fills
// `t.pin`. A field the pin supplies may not also be given by the manifest.
json withPin(const json& j, const Section& top, const std::string& baseDir, Target& t) {
  Pin pin;
  const json supplied = loadPin(resolve(baseDir, top.required("pin")), pin);
  json merged = j;
  json inst = j.contains("installer") ? top.object("installer") : json::object();
  for (const char* k : {"path", "sha256"})
    if (inst.contains(k)) top.fail("comes from the pin " + pin.path + "; leave it out", std::string("installer.") + k);
  if (inst.value("mode", "source") != "source") top.fail("must be 'source' for a pinned installer", "installer.mode");
  inst.update(supplied.at("installer"));
  merged["installer"] = inst;
  json fg = j.contains("flag_gems") ? top.object("flag_gems") : json{{"kind", "source"}};
  const std::string kind = fg.value("kind", "mock");
  if (kind != "mock") {
    for (const char* k : {"path", "libentry_sha256"})
      if (fg.contains(k)) top.fail("comes from the pin " + pin.path + "; leave it out", std::string("flag_gems.") + k);
    fg["libentry_sha256"] = supplied.at("flag_gems").at("libentry_sha256");
    if (kind == "source") fg["path"] = supplied.at("flag_gems").at("path");
  }
  merged["flag_gems"] = fg;
  if (!j.contains("gates")) merged["gates"] = supplied.at("gates");
  merged.erase("pin");
  t.pin = pin;
  return merged;
}

}  // namespace

json Pin::toJson() const {
  return {{"path", path},
          {"name", name},
          {"description", description},
          {"torch", torch},
          {"triton", triton},
          {"torch_fl_commit", torchFlCommit},
          {"flag_gems_commit", flagGemsCommit}};
}

json loadPin(const std::string& path, Pin& pin) {
  const json j = readManifestJson(path);
  const Section p(j, path, "",
                  {"schema", "name", "description", "torch", "triton", "torch_fl", "flag_gems", "routing"});
  const std::string schema = p.required("schema");
  if (schema != "flagprop.pin/1") p.fail("is '" + schema + "', expected 'flagprop.pin/1'", "schema");
  const std::string base = fs::path(path).parent_path().string();
  pin.path = path;
  pin.name = p.required("name");
  pin.description = p.str("description", "");
  pin.torch = p.str("torch", "");
  pin.triton = p.str("triton", "");
  if (!p.has("torch_fl") || !p.has("flag_gems") || !p.has("routing"))
    p.fail("needs the sections torch_fl, flag_gems and routing", "");
  const Section tfl(p.raw("torch_fl"), path, "torch_fl.", {"commit", "installer", "sha256"});
  const Section fg(p.raw("flag_gems"), path, "flag_gems.", {"commit", "src", "libentry_sha256"});
  const Section routing(p.raw("routing"), path, "routing.", {"accelerator", "routes_to_flaggems"});
  pin.torchFlCommit = tfl.str("commit", "");
  pin.flagGemsCommit = fg.str("commit", "");
  const std::string installerSha = tfl.sha256("sha256"), libentrySha = fg.sha256("libentry_sha256");
  if (installerSha.empty()) tfl.fail("is missing", "sha256");
  if (libentrySha.empty()) fg.fail("is missing", "libentry_sha256");
  if (!routing.has("routes_to_flaggems")) routing.fail("is missing", "routes_to_flaggems");
  return {{"installer", {{"path", tfl.path("installer", base, false)}, {"sha256", installerSha}}},
          // The tree is checked where a target uses it (flag_gems kind source), not for mocks.
          {"flag_gems", {{"path", resolve(base, fg.required("src"))}, {"libentry_sha256", libentrySha}}},
          {"gates",
           {{"accelerator", routing.required("accelerator")},
            {"routes_to_flaggems", routing.boolean("routes_to_flaggems", true)}}}};
}

std::string checkRunKeySyntax(const std::string& key) {
  static const std::regex id("P[1-9][0-9]?");
  const auto opAt = key.find('/');
  if (!std::regex_match(key.substr(0, opAt), id)) return "names no property (P1, P2, ..., or P5/OP, P5/OP/DTYPE)";
  if (opAt == std::string::npos) return "";
  const auto dtypeAt = key.find('/', opAt + 1);
  const std::string op = key.substr(opAt + 1, dtypeAt == std::string::npos ? std::string::npos : dtypeAt - opAt - 1);
  if (!findOp(op)) return "no catalog op '" + op + "' (" + whyExcluded(op) + ")";
  return dtypeAt == std::string::npos ? "" : checkCatalogDtype(key.substr(dtypeAt + 1));
}

Gates Target::defaultGates() const {
  if (gates) return *gates;
  Gates g;
  g.accelerator = gateBuilds.empty() ? "dcu" : gateBuilds.front();
  g.routesToFlagGems = true;
  return g;
}

std::string expectedStatus(const json& expect, const std::string& property, const std::string& op,
                           const std::string& dtype) {
  std::vector<std::string> keys;
  if (!op.empty()) keys = {property + "/" + op + "/" + dtype, property + "/" + op};
  keys.push_back(property);
  for (const auto& k : keys)
    if (expect.contains(k) && expect.at(k).is_string()) return expect.at(k).get<std::string>();
  return "";
}

bool statusExpected(const json& expect, const std::string& status, const std::string& property, const std::string& op,
                    const std::string& dtype) {
  const std::string want = expectedStatus(expect, property, op, dtype);
  return want.empty() ? status == "pass" || status == "skip" : want == status;
}

std::string Target::expectedStatus(const std::string& property, const std::string& op, const std::string& dtype) const {
  return flagprop::expectedStatus(expect, property, op, dtype);
}

bool Target::statusExpected(const std::string& status, const std::string& property, const std::string& op,
                            const std::string& dtype) const {
  return flagprop::statusExpected(expect, status, property, op, dtype);
}

json Target::toJson() const {
  json j = {{"manifest", manifestPath},
            {"name", name},
            {"device", device},
            {"installer",
             {{"mode", installer.mode},
              {"module", installer.module},
              {"function", installer.function},
              {"path", installer.path},
              {"sha256", installer.sha256},
              {"python_path", installer.pythonPath},
              {"globals", installer.globals},
              {"components", installer.components}}},
            {"flag_gems",
             {{"kind", flagGems.kind},
              {"path", flagGems.path},
              {"libentry_sha256", flagGems.libentrySha256},
              {"supply_helper", flagGems.supplyHelper},
              {"mock", flagGems.mock}}},
            {"ops",
             {{"kind", ops.kind},
              {"path", ops.path},
              {"sha256", ops.sha256},
              {"globals", ops.globals},
              {"enable", ops.enable},
              {"control", ops.control}}},
            {"gates", gates ? flagprop::toJson(*gates) : json("generate")},
            {"default_gates", flagprop::toJson(defaultGates())},
            {"gate_builds", gateBuilds},
            {"properties", properties},
            {"cases", cases},
            {"reports_once", reportsOnce},
            {"catalog", catalogSource.empty() ? json(catalogOps) : json(catalogSource)},
            {"dtypes", dtypes},
            {"op_cases", opCases},
            {"explicit_cases", explicitCases},
            {"max_elements", maxElements},
            {"specials", specials},
            {"layout_palette", layoutPalette},
            {"palette_seed", std::to_string(paletteSeed)}};  // 64-bit: a string, as every seed
  if (pin) j["pin"] = pin->toJson();
  return j;
}

Target parseTarget(const json& manifest, const std::string& origin, const std::string& baseDir) {
  if (manifest.is_object() && manifest.value("schema", json()) == "flagprop.matrix/1")
    throw ManifestError(origin + ": is a matrix (flagprop.matrix/1); a matrix may list only target manifests");
  const std::vector<std::string> known = {
      "schema",      "name",          "description", "device",       "installer",    "flag_gems",      "gates",
      "gate_builds", "properties",    "cases",       "expect",       "reports_once", "labels",         "ops",
      "catalog",     "dtypes",        "op_cases",    "max_elements", "specials",     "layout_palette", "palette_seed",
      "pin",         "explicit_cases"};
  Target t;
  const json j = [&] {
    const Section first(manifest, origin, "", known);
    return first.has("pin") ? withPin(manifest, first, baseDir, t) : manifest;
  }();
  const Section top(j, origin, "", known);
  const std::string schema = top.required("schema");
  if (schema != "flagprop.target/1") top.fail("is '" + schema + "', expected 'flagprop.target/1'", "schema");
  t.manifestPath = origin;
  t.name = top.required("name");
  for (const unsigned char c : t.name)  // it is printed on the console and names files
    if (c < 0x20 || c == 0x7f) top.fail("must not hold control characters (a newline, a tab, NUL...)", "name");
  static const std::regex nameChars("[A-Za-z0-9._-]+");
  if (!std::regex_match(t.name, nameChars)) top.fail("may hold only letters, digits, '-', '_' and '.'", "name");
  t.description = top.str("description", "");
  t.device = top.str("device", "cpu");
  static const std::regex device("cpu|(cuda|flagos)(:[0-9]+)?");
  if (!std::regex_match(t.device, device))
    top.fail("must be cpu, cuda:N or flagos:N, not '" + t.device + "'", "device");
  t.installer = readInstaller(top, origin, baseDir);
  t.flagGems = readFlagGems(top, origin, baseDir);
  t.ops = readOps(top, origin, baseDir);
  t.gates = readGates(top, origin);
  if (top.has("gate_builds")) t.gateBuilds = top.strings("gate_builds");
  t.properties = top.strings("properties", true);
  for (const auto& p : t.properties) {
    const std::string why = checkRunKeySyntax(p);
    if (!why.empty() || p.find('/') != std::string::npos)
      top.fail("must list property ids (P1, P2, ...); got '" + p + "'", "properties");
  }
  t.cases = static_cast<int>(top.integer("cases", t.cases, 1, 100000));
  t.reportsOnce = top.boolean("reports_once", false);
  t.labels = top.strings("labels");
  readOpSelection(top, t);
  readExpect(top, t);
  return t;
}

json readManifestJson(const std::string& path) {
  std::string text;
  try {
    text = readFile(path, kManifestMaxBytes);
  } catch (const FileError& e) {
    throw ManifestError(e.what());
  }
  bool tooDeep = false;
  std::vector<std::set<std::string>>
      keys;  // per open object: the keys seen (a duplicate is an error, not "the last wins")
  std::string duplicate;
  json j;
  try {
    j = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth > kManifestMaxDepth) tooDeep = true;
      if (event == json::parse_event_t::object_start) keys.emplace_back();
      if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return !tooDeep;
    });
  } catch (const json::out_of_range& e) {  // a number beyond a double (1e400)
    throw ManifestError(path + ": not valid JSON (a number out of range: " + std::string(e.what()).substr(0, 200) +
                        ")");
  } catch (const json::parse_error& e) {
    const std::string msg = e.what();
    const auto pos = msg.find("parse error");
    std::string shown;
    for (unsigned char c : pos == std::string::npos ? msg : msg.substr(pos)) {  // the text may hold any byte
      if (c >= 0x20 && c < 0x7f) {
        shown += static_cast<char>(c);
      } else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        shown += hex;
      }
    }
    throw ManifestError(path + ": not valid JSON (" + shown + ")");
  }
  if (tooDeep) throw ManifestError(path + ": nested deeper than " + std::to_string(kManifestMaxDepth) + " levels");
  if (!duplicate.empty()) throw ManifestError(path + ": field '" + duplicate + "' is given twice in one object");
  return j;
}

// `path` made absolute and canonical as far as it exists; a path that cannot
// be resolved (a symbolic link loop) is kept as given, for readFile to name why.
std::string absoluteManifestPath(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  const fs::path canon = fs::weakly_canonical(abs, ec);
  return (ec ? abs : canon).string();
}

Target loadTarget(const std::string& path) {
  const std::string abs = absoluteManifestPath(path);
  return parseTarget(readManifestJson(abs), abs, fs::path(abs).parent_path().string());
}

std::vector<std::string> expandManifest(const std::string& path) {
  const std::string abs = absoluteManifestPath(path);
  const json j = readManifestJson(abs);
  if (!j.is_object()) throw ManifestError(abs + ": a manifest must be a JSON object");
  const std::string schema =
      j.contains("schema") && j.at("schema").is_string() ? j.at("schema").get<std::string>() : "";
  if (schema == "flagprop.target/1") return {abs};
  if (schema != "flagprop.matrix/1")
    throw ManifestError(abs + ": field 'schema' is '" + schema +
                        "', expected 'flagprop.matrix/1' or 'flagprop.target/1'");
  const Section m(j, abs, "", {"schema", "description", "targets"});
  m.str("description", "");
  const auto targets = m.strings("targets");
  if (targets.empty()) m.fail("lists no targets (a matrix names at least one target manifest)", "targets");
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(resolve(fs::path(abs).parent_path().string(), t));
  return out;
}

std::string defaultManifest() { return fixturesDir() + "/targets/default.json"; }

}  // namespace flagprop
