#include "suites/registry.h"

#include "catalog/catalog.h"
#include "suites/installer_properties.h"
#include "suites/op_properties.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <stdexcept>

namespace flagprop {

namespace {

std::string digits(double v, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", n, v);
  return buf;
}

// The fast-path cells (report.md's column): P5's classes of the cases that
// held, or the failing case's own.
std::string distributionCell(const json& o) {
  std::string cell;
  if (o.contains("distribution"))
    for (const auto& d : o.at("distribution"))
      cell += (cell.empty() ? "" : "; ") + d.value("class", "") + " " + std::to_string(d.value("cases", 0));
  else if (o.contains("fast_path"))
    cell = o.value("fast_path", "") + " (" + o.value("patched_vs_unpatched", "") + ")";
  return cell;
}

// P8: the hit counts.
std::string hitsCell(const json& o) {
  if (!o.contains("hits")) return distributionCell(o);
  const json& h = o.at("hits");
  if (h.value("fast_runs", 0) == 0 && h.value("runs", 0) == 0) return "no LibEntry launches";
  return "fast runs " + std::to_string(h.value("fast_runs", 0)) + " of " + std::to_string(h.value("runs", 0));
}

// P9: host time patch off over on, with its 95% CI.
std::string timingCell(const json& o) {
  if (!o.contains("timing") || !o.at("timing").contains("summary") ||
      !o.at("timing").at("summary").value("host", json()).is_object())
    return distributionCell(o);
  const json& h = o.at("timing").at("summary").at("host");
  return "host B/A " + digits(h.value("ratio_b_over_a", 0.0), 3) + " [" +
         digits(h.at("ratio_ci95").at(0).get<double>(), 3) + ", " + digits(h.at("ratio_ci95").at(1).get<double>(), 3) +
         "]";
}

// An installer property: run once per target on its installer; its
// observer is flagprop.engine.observe (the installer's calls).
PropertyDef installer(std::string id, std::string title, std::string kind, std::string holds, InstallerCases cases,
                      bool probesFastPath = false) {
  PropertyDef d{std::move(id), std::move(title), std::move(kind), PropertyDef::Scope::Installer, std::move(holds)};
  d.installerCases = cases;
  d.probesFastPath = probesFastPath;
  d.observer = "flagprop.engine.observe";
  return d;
}

// An op property: run once per catalog op and dtype. `byDefault`: run when
// a manifest lists no properties; `cases`: per run when --cases does not
// say (0: the target's op_cases).
PropertyDef op(std::string id, std::string title, std::string kind, std::string holds, OpRunBuilder build,
               std::string observer, bool byDefault = true, int cases = 0, std::string (*cell)(const json&) = nullptr) {
  PropertyDef d{std::move(id), std::move(title), std::move(kind), PropertyDef::Scope::Op, std::move(holds), byDefault,
                cases};
  d.opRun = build;
  d.reportsExcluded = build == &judgedOpRun;
  d.observer = std::move(observer);
  d.fastPathCell = cell;
  return d;
}
}  // namespace

std::string registryProblem(const std::vector<PropertyDef>& defs) {
  static const std::regex id("P([1-9][0-9]*)");
  int last = 0;
  for (const auto& d : defs) {
    std::smatch m;
    if (!std::regex_match(d.id, m, id)) return "property id '" + d.id + "' is not P<n>";
    const int n = std::stoi(m[1]);
    if (n <= last) return d.id + " is out of order or given twice";
    last = n;
    if (d.title.empty() || d.holds.empty() || d.checkKind.empty() || d.observer.empty())
      return d.id + " lacks a title, a statement, a check kind or an observer";
    if (d.scope == PropertyDef::Scope::Installer && !d.installerCases)
      return d.id + " is an installer property without installerCases";
    if (d.scope == PropertyDef::Scope::Op && !d.opRun) return d.id + " is an op property without opRun";
  }
  return "";
}

const std::vector<PropertyDef>& properties() {
  static const std::vector<PropertyDef> defs = [] {
    std::vector<PropertyDef> d = {
        installer("P1", "install status", "install",
                  "after the installer returns, every component it has is active or reported skipped", installCases),
        installer("P2", "idempotence", "install2",
                  "a second install changes nothing, wraps nothing twice and reports a skip again", installCases),
        installer("P3", "stock fallback", "launch",
                  "launches the fast path cannot express reach the stock run and give its result", launchCases, true),
        installer("P4", "key equivalence", "key",
                  "the fast key, descriptor helper and memos answer as the stock ones do", keyCases, true),
        op("P5", "numerics", "op",
           "the device result matches the reference within tolerance (the same call with FlagGems off where the target "
           "has a control, else CPU ATen); patched equals unpatched bitwise",
           judgedOpRun, "flagprop.engine.ops", true, 0, distributionCell),
        op("P6", "aliasing and metadata", "op",
           "outputs have ATen's dtype, shape and device in fresh storage; inputs stay unchanged", judgedOpRun,
           "flagprop.engine.ops"),
        op("P7", "stream semantics", "streams",
           "under a non-default current stream the op's work is ordered on it, done when it is, and follows a switch",
           checkedOpRun, "flagprop.observers.streams", false, 5),
        op("P8", "fast-path hits", "hits",
           "after warm-up, an installed fast path takes the op's LibEntry launches (counted per kernel)", hitsOpRun,
           "flagprop.observers.hits", false, 0, hitsCell),
        op("P9", "A/B timing", "timing",
           "a measurement: host and device time per call with the patch on and off, ABBA pairs, 95% CIs", timingOpRun,
           "flagprop.observers.timing", false, 1, timingCell),
        op("P10", "history independence", "op",
           "a case gives the reference's result after earlier calls of the same op in the same process (other "
           "values, scalar arguments at 1, 2, -1, 0.5): no cache keyed on too little answers it",
           historyOpRun, "flagprop.engine.ops", false),
    };
    if (const std::string why = registryProblem(d); !why.empty())
      throw std::logic_error("flagprop's property registry: " + why);
    return d;
  }();
  return defs;
}

const PropertyDef* findProperty(const std::string& id) {
  for (const auto& d : properties())
    if (d.id == id) return &d;
  return nullptr;
}

json propertiesJson() {
  json out = json::array();
  for (const auto& d : properties())
    out.push_back({{"id", d.id},
                   {"title", d.title},
                   {"statement", d.holds},
                   {"check", d.checkKind},
                   {"scope", d.scope == PropertyDef::Scope::Op ? "op" : "installer"},
                   {"observer", d.observer},
                   {"by_default", d.byDefault}});
  return out;
}

std::string checkRunKey(const std::string& key) {
  const std::string syntax = checkRunKeySyntax(key);
  if (!syntax.empty()) return syntax;
  const std::string id = key.substr(0, key.find('/'));
  const PropertyDef* d = findProperty(id);
  if (!d) {
    std::string ids;
    for (const auto& p : properties()) ids += (ids.empty() ? "" : ", ") + p.id;
    return "names no property (" + ids + ")";
  }
  if (key.find('/') != std::string::npos && d->scope != PropertyDef::Scope::Op)
    return id + " runs once per target; only op properties take /OP or /OP/DTYPE";
  return "";
}

namespace {

// "" when the run key `key` (already well-formed) names a result `t` makes,
// else why it never will.
std::string neverRun(const Target& t, const std::string& key, const std::vector<std::string>& ids) {
  const auto opAt = key.find('/');
  const std::string id = key.substr(0, opAt);
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) return "names " + id + ", which this target does not run";
  if (opAt == std::string::npos) return "";
  const auto dtypeAt = key.find('/', opAt + 1);
  const std::string op = key.substr(opAt + 1, dtypeAt == std::string::npos ? std::string::npos : dtypeAt - opAt - 1);
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  if (!in(t.catalogOps, op)) return "names op " + op + ", which the target's 'catalog' leaves out";
  if (dtypeAt == std::string::npos) return "";
  const std::string dtype = key.substr(dtypeAt + 1);
  if (!findOp(op)) return "names op " + op + ", which flagprop cannot run: " + whyExcluded(op);
  const OpEntry* e = findOp(op);
  const auto defaults = t.ops.kind == "module" || e->judging.integerOnly
                            ? (e->defaultDtypes.empty() ? e->dtypes : e->defaultDtypes)
                            : defaultDtypesOf(op);
  const bool runs = t.dtypes.empty() ? std::find(defaults.begin(), defaults.end(), dtype) != defaults.end()
                                     : in(t.dtypes, dtype) && opIn(op, dtype, true);
  if (!runs) return "names " + op + " in " + dtype + ", which this target does not run";
  return "";
}

}  // namespace

std::vector<std::string> targetOpNames(const Target& t) {
  std::vector<std::string> ops = t.catalogOps;
  if (ops.empty())
    for (const auto& e : catalog()) ops.push_back(e.name);
  return ops;
}

std::vector<std::string> targetProperties(const Target& t) {
  const std::string& origin = t.manifestPath;
  for (const auto& p : t.properties) {
    const std::string why = checkRunKey(p);
    if (!why.empty()) throw ManifestError(origin + ": field 'properties': " + p + " " + why);
    if (findProperty(p)->scope == PropertyDef::Scope::Installer && !t.hasInstaller())
      throw ManifestError(origin + ": field 'properties': " + p + " needs an installer; this target has none");
  }
  std::vector<std::string> out = t.properties;
  if (out.empty()) {
    const auto scope = t.hasInstaller() ? PropertyDef::Scope::Installer : PropertyDef::Scope::Op;
    for (const auto& d : properties())
      if (d.scope == scope && d.byDefault) out.push_back(d.id);
  }
  for (auto it = t.expect.begin(); it != t.expect.end(); ++it) {
    std::string why = checkRunKey(it.key());
    if (why.empty()) why = neverRun(t, it.key(), out);  // an expectation that can never be met passes silently
    if (!why.empty()) throw ManifestError(origin + ": field 'expect': key '" + it.key() + "' " + why);
  }
  return out;
}

bool Selection::takes(const std::string& id, const std::string& op, const std::string& dtype) const {
  auto listed = [](const std::vector<std::string>& v, const std::string& x) {
    return v.empty() || x.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  if (!listed(ops, op) || !listed(dtypes, dtype)) return false;
  // An installer property (no op) is not taken by --op / --dtype alone.
  if (op.empty() && properties.empty()) return ops.empty() && dtypes.empty();
  if (properties.empty()) return true;
  for (const auto& f : properties)
    if (f == id || (!op.empty() && (f == id + "/" + op || f == id + "/" + op + "/" + dtype))) return true;
  return false;
}

bool Selection::inPart(const std::string& target, const std::string& op, const std::string& dtype) const {
  if (parts <= 1) return true;
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits: the same on every host
  for (const char c : target + "|" + op + "|" + dtype) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<int>(h % static_cast<uint64_t>(parts)) == part;
}

std::vector<std::string> plannedKeys(const Target& t, const Selection& sel) {
  const auto ids = targetProperties(t);
  std::vector<std::string> keys;
  std::vector<const PropertyDef*> opDefs;
  for (const auto& d : properties()) {
    if (std::find(ids.begin(), ids.end(), d.id) == ids.end()) continue;
    if (d.scope == PropertyDef::Scope::Op)
      opDefs.push_back(&d);
    else if (sel.takes(d.id) && sel.inPart(t.name))
      keys.push_back(d.id);
  }
  if (!opDefs.empty())
    for (const auto& r : planOpRuns(t, opDefs, sel)) keys.push_back(r.key());
  return keys;
}

std::vector<PropertyRun> planRuns(TargetSession& session, const Selection& sel) {
  const auto ids = targetProperties(session.target());
  std::vector<PropertyRun> runs;
  std::vector<const PropertyDef*> opDefs;
  for (const auto& d : properties()) {
    if (std::find(ids.begin(), ids.end(), d.id) == ids.end()) continue;
    if (d.scope == PropertyDef::Scope::Op) {
      opDefs.push_back(&d);
    } else if (sel.takes(d.id) && sel.inPart(session.target().name)) {
      runs.push_back(installerRun(session, d));
    }
  }
  if (!opDefs.empty())
    for (auto& r : opRuns(session, opDefs, sel)) runs.push_back(std::move(r));
  return runs;
}

}  // namespace flagprop
