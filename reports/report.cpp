#include "reports/report.h"

#include "suites/registry.h"

#include <map>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace flagprop {

bool resultExpected(const json& target, const json& result) {
  return statusExpected(target.value("expect", json::object()), result.value("status", ""), result.value("property", ""),
                        result.value("op", ""), result.value("dtype", ""));
}

json mergeReport(const json& targetsIn, const json& runInfo) {
  json targets = targetsIn;
  for (auto& t : targets)  // each result says what its manifest expects, so readers need not re-derive it
    for (auto& r : t["results"]) {
      if (!r.is_object()) continue;
      const std::string want = expectedStatus(t.value("expect", json::object()), r.value("property", ""),
                                              r.value("op", ""), r.value("dtype", ""));
      r["expected"] = want.empty() ? "pass or skip" : want;
      r["as_expected"] = resultExpected(t, r);
    }
  json report = {{"schema", "flagprop.report/1"}, {"targets", targets}};
  json prov = runInfo;
  for (const auto& t : targets)
    if (t.value("status", "") == "ok" && t.contains("provenance")) {
      prov["versions"] = t["provenance"].value("versions", json::object());
      break;
    }
  report["provenance"] = prov;
  json counts = {{"pass", 0}, {"fail", 0}, {"skip", 0}, {"error", 0}};
  json unexpected = json::array();
  int targetErrors = 0;
  for (const auto& t : targets) {
    if (t.value("status", "") != "ok") {
      ++targetErrors;
      unexpected.push_back({{"target", t.value("name", "?")}, {"property", nullptr}, {"status", "error"},
                            {"reason", t.value("error", "")}});
      continue;
    }
    for (const auto& r : t.at("results")) {
      counts[r.value("status", "error")] = counts.value(r.value("status", "error"), 0) + 1;
      if (!resultExpected(t, r))
      {
        json u = {{"target", t.value("name", "?")}, {"property", r.value("property", "")},
                  {"status", r.value("status", "")}, {"reason", r.value("reason", "")}};
        if (r.contains("op")) {
          u["op"] = r.at("op");
          u["dtype"] = r.at("dtype");
        }
        unexpected.push_back(u);
      }
    }
  }
  report["summary"] = {{"targets", targets.size()}, {"target_errors", targetErrors}, {"results", counts},
                       {"unexpected", unexpected}};
  return report;
}

namespace {
std::string cell(std::string s, size_t max = 110) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = ' ';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}
}  // namespace

namespace {
// The status a manifest's `expect` wants for a result (pass when unnamed).
std::string expectedStatusOf(const json& target, const json& r) {
  const std::string want = expectedStatus(target.value("expect", json::object()), r.value("property", ""),
                                          r.value("op", ""), r.value("dtype", ""));
  return want.empty() ? "pass" : want;
}

std::string resultLabel(const json& r) {
  std::string l = r.value("property", "") + " " + r.value("title", "");
  if (r.contains("op")) l += " · " + r.value("op", "") + " " + r.value("dtype", "");
  return l;
}

std::string replayId(const json& r) { return r.value("key", r.value("property", "")); }

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// Per op and dtype: P5 / P6 status, cases, compilations per 100 cases and
// where the time went.
// The op properties a target's results hold, in registry order.
std::vector<const PropertyDef*> opColumns(const json& t) {
  std::vector<const PropertyDef*> out;
  for (const auto& d : properties()) {
    if (d.scope != PropertyDef::Scope::Op) continue;
    for (const auto& r : t.at("results"))
      if (r.value("property", "") == d.id) {
        out.push_back(&d);
        break;
      }
  }
  return out;
}

// What a P5 run says of the fast path: the classes of the cases that held,
// or the failing case's own; for P8 the hit counts.
std::string fastPathCell(const std::string& id, const json& o) {
  if (id == "P9" && o.contains("timing") && o.at("timing").contains("summary") &&
      o.at("timing").at("summary").value("host", json()).is_object()) {
    const json& h = o.at("timing").at("summary").at("host");
    return "host B/A " + fixed(h.value("ratio_b_over_a", 0.0), 3) + " [" + fixed(h.at("ratio_ci95").at(0).get<double>(), 3) +
           ", " + fixed(h.at("ratio_ci95").at(1).get<double>(), 3) + "]";
  }
  if (id == "P8" && o.contains("hits"))
    return o.at("hits").value("fast_runs", 0) == 0 && o.at("hits").value("runs", 0) == 0
               ? "no LibEntry launches"
               : "fast runs " + std::to_string(o.at("hits").value("fast_runs", 0)) + " of " +
                     std::to_string(o.at("hits").value("runs", 0));
  std::string cell;
  if (o.contains("distribution"))
    for (auto it = o.at("distribution").begin(); it != o.at("distribution").end(); ++it)
      cell += (cell.empty() ? "" : "; ") + it.key() + " " + it.value().dump();
  else if (o.contains("fast_path"))
    cell = o.value("fast_path", "") + " (" + o.value("patched_vs_unpatched", "") + ")";
  return cell;
}

// P9's measurements: one line each, with its plot.
void timingSection(std::ostringstream& md, const json& t) {
  bool any = false;
  for (const auto& r : t.at("results")) {
    if (r.value("property", "") != "P9") continue;
    if (!any) md << "P9 A/B timing (A: patch on, B: patch off; µs per call):\n\n";
    any = true;
    md << "- " << r.value("op", "") << " " << r.value("dtype", "") << ": " << r.value("reason", "");
    if (r.contains("plot")) md << " ([plot](" << r.value("plot", "") << "))";
    if (r.contains("plot_error")) md << " (no plot: " << r.value("plot_error", "") << ")";
    md << "\n";
  }
  if (any) md << "\n";
}

// Per op and dtype: each op property's status, cases, the fast path, the
// compilations per 100 cases and where the time went.
void opTable(std::ostringstream& md, const json& t) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, json>> rows;
  for (const auto& r : t.at("results"))
    if (r.contains("op")) rows[{r.value("op", ""), r.value("dtype", "")}][r.value("property", "")] = r;
  if (rows.empty()) return;
  const auto columns = opColumns(t);
  md << "| op | dtype";
  for (const auto* c : columns) md << " | " << c->id << " " << c->title;
  md << " | cases | fast path | compilations / 100 cases | reference / device op / harness |\n|---|---";
  for (size_t i = 0; i < columns.size() + 4; ++i) md << "|---";
  md << "|\n";
  for (const auto& [key, props] : rows) {
    md << "| " << key.first << " | " << key.second;
    std::string cases, fastPath;
    json stats;
    for (const auto* c : columns) {
      const auto it = props.find(c->id);
      cases += std::string(cases.empty() ? "" : " / ") + (it == props.end() ? "-" : std::to_string(it->second.value("cases_run", 0)));
      if (it == props.end()) {
        md << " | -";
        continue;
      }
      const json& r = it->second;
      md << " | **" << r.value("status", "") << "**";
      if (!resultExpected(t, r)) md << " (expected " << expectedStatusOf(t, r) << ")";
      const json o = r.value("observations", json::object());
      if (stats.is_null() && o.contains("stats")) stats = o.at("stats");
      const std::string f = fastPathCell(c->id, o);
      if (!f.empty() && (c->id == "P5" || c->id == "P8" || c->id == "P9")) fastPath += (fastPath.empty() ? "" : "; ") + f;
    }
    md << " | " << cases << " | " << cell(fastPath.empty() ? "-" : fastPath, 100);
    if (stats.is_null()) {
      md << " | - | - |\n";
      continue;
    }
    const auto& sh = stats.at("share");
    md << " | " << fixed(stats.value("compilations_per_100_cases", 0.0), 1) << " | "
       << fixed(100 * sh.value("reference", 0.0), 0) << "% / " << fixed(100 * sh.value("device_op", 0.0), 0) << "% / "
       << fixed(100 * sh.value("harness", 0.0), 0) << "% |\n";
  }
  md << "\n";
}
}  // namespace

namespace {

void header(std::ostringstream& md, const json& report) {
  const auto& prov = report.at("provenance");
  md << "# flagprop report\n\n- schema: `" << report.value("schema", "") << "`\n";
  if (prov.contains("reproduce")) {
    md << "- replayed from reproduce string `" << prov.value("reproduce", "") << "`\n";
  } else {
    std::string manifests;
    for (const auto& m : prov.value("manifests", json::array())) manifests += " --manifest " + m.get<std::string>();
    const std::string seed = prov.value("seed", std::string("?"));
    md << "- seed: `" << seed << "` (rerun the whole run: `" << prov.value("flagprop", std::string("flagprop"))
       << " run" << manifests << " --seed " << seed << " --report-dir flagprop-rerun`)\n";
  }
  if (prov.contains("versions")) md << "- versions: `" << prov.at("versions").dump() << "`\n";
  const auto& s = report.at("summary");
  md << "- results: " << s.at("results").dump() << ", target errors: " << s.value("target_errors", 0)
     << ", unexpected: " << s.at("unexpected").size() << "\n\n";
}

// The installer properties' table of one target.
void installerTable(std::ostringstream& md, const json& t) {
  bool any = false;
  for (const auto& r : t.at("results")) any |= !r.contains("op");
  if (!any) return;
  md << "| property | status | expected | cases | reason |\n|---|---|---|---|---|\n";
  for (const auto& r : t.at("results")) {
    if (r.contains("op")) continue;
    md << "| " << resultLabel(r) << " | **" << r.value("status", "") << "** | " << expectedStatusOf(t, r) << " | "
       << r.value("cases_run", 0) << " | " << cell(r.value("reason", "")) << " |\n";
  }
  md << "\n";
}

// One failure with its evidence and how to replay it.
void failure(std::ostringstream& md, const json& report, const json& t, const json& r) {
  const auto& prov = report.at("provenance");
  md << "### " << t.value("name", "?") << " / " << resultLabel(r) << "\n\n" << r.value("reason", "") << "\n\n";
  const auto& o = r.at("observations");
  if (o.contains("helper")) md << "- helper `_descriptor_cache_key`: " << o.at("helper").dump() << "\n";
  if (o.contains("claims")) md << "- components the installer has: `" << o.at("claims").dump() << "`\n";
  for (const auto& e : o.value("exceptions_caught", json::array()))
    md << "- exception caught inside the installer: `" << e.value("type", "") << "` at `" << e.value("file", "") << ":"
       << e.value("line", 0) << "` in `" << e.value("function", "") << "()`: " << e.value("message", "") << "\n";
  for (const char* k : {"returned_normally", "unchanged", "markers", "components"})
    if (o.contains(k)) md << "- " << k << ": `" << o.at(k).dump() << "`\n";
  for (const char* k : {"numerics", "aliasing"})
    if (o.contains(k) && o.at(k).size() > 1)
      for (const auto& f : o.at(k)) md << "- " << k << ": " << f.get<std::string>() << "\n";
  if (o.contains("fast_path")) {
    md << "- fast path: " << o.value("fast_path", "");
    if (o.contains("patched_vs_unpatched")) md << "; patched vs unpatched: " << o.value("patched_vs_unpatched", "");
    md << "\n";
  }
  if (o.contains("kernels")) md << "- LibEntry runs and keys by kernel (after warm-up): `" << o.at("kernels").dump() << "`\n";
  if (o.contains("calls")) md << "- outputs (expected from ATen vs actual): `" << o.at("calls").dump() << "`\n";
  md << "- shrunk counterexample: `" << r.value("counterexample", json()).dump() << "`\n";
  md << "- reproduce in flagprop: `" << prov.value("flagprop", std::string("flagprop")) << " run --manifest "
     << t.value("manifest", "") << " --property " << replayId(r) << " --reproduce '" << r.value("reproduce", "")
     << "' --report-dir flagprop-replay`\n";
  if (r.contains("reproducer") && !r.at("reproducer").is_null())
    md << "- standalone reproducer: `" << prov.value("python", std::string("python3")) << " "
       << r.at("reproducer").get<std::string>() << "` (exit 1: reproduced)\n";
  md << "\n";
}

}  // namespace

std::string renderMarkdown(const json& report) {
  std::ostringstream md;
  header(md, report);
  for (const auto& t : report.at("targets")) {
    md << "## " << t.value("name", "?") << "\n\n";
    if (!t.value("description", std::string()).empty()) md << t.value("description", std::string()) << "\n\n";
    md << "manifest: `" << t.value("manifest", "") << "`\n\n";
    if (t.value("status", "") != "ok") {
      md << "**target error:** " << t.value("error", "") << "\n\n";
      continue;
    }
    for (const auto& m : t.value("unverified", json::array()))
      md << "**unverified run**: " << m.get<std::string>() << " (every result below is marked unverified)\n\n";
    const auto& p = t.at("provenance");
    if (p.contains("pin")) md << "pin: `" << p.at("pin").value("name", "") << "` (" << p.at("pin").value("path", "") << ")\n\n";
    md << "installer sha256 seen: `" << p.value("installer_sha256", "-") << "`";
    if (p.contains("libentry_sha256")) md << ", libentry sha256 seen: `" << p.value("libentry_sha256", "-") << "`";
    md << ", gates: `" << p.value("gates", json("")).dump() << "`, device: `" << p.value("device", "") << "`\n\n";
    installerTable(md, t);
    opTable(md, t);
    timingSection(md, t);
    for (const auto& r : t.at("results"))
      if (r.value("status", "") == "fail") failure(md, report, t, r);
  }
  return md.str();
}

void printSummary(const json& report, std::ostream& os) {
  os << "\n" << std::left << std::setw(30) << "target";
  for (const auto& p : properties()) os << " " << std::setw(p.scope == PropertyDef::Scope::Op ? 10 : 7) << p.id;
  os << "\n";
  std::vector<std::string> failing;
  for (const auto& t : report.at("targets")) {
    const std::string name = t.value("name", "?");
    os << std::left << std::setw(30) << (name.size() > 29 ? name.substr(0, 28) + "~" : name);
    if (t.value("status", "") != "ok") {
      os << " error! (target error, see above and report.md)\n";
      continue;
    }
    for (const auto& def : properties()) {
      const std::string p = def.id;
      // P5 / P6 hold one result per op and dtype: the worst status, with
      // how many runs had it.
      std::string st = "-";
      int runs = 0, worstCount = 0;
      bool unexpected = false;
      static const std::vector<std::string> order = {"pass", "skip", "fail", "error"};
      for (const auto& r : t.at("results")) {
        if (r.value("property", "") != p) continue;
        const std::string rs = r.value("status", "?");
        ++runs;
        const auto rank = [&](const std::string& x) { return std::find(order.begin(), order.end(), x) - order.begin(); };
        if (st == "-" || rank(rs) > rank(st)) {
          st = rs;
          worstCount = 1;
        } else if (rs == st) {
          ++worstCount;
        }
        if (!resultExpected(t, r)) {
          unexpected = true;
          failing.push_back(name + ": " + resultLabel(r) + ": " + rs + " (expected " + expectedStatusOf(t, r) + ")");
        }
      }
      if (runs > 1) st += " " + std::to_string(worstCount) + "/" + std::to_string(runs);
      if (unexpected) st += "!";
      os << " " << std::setw(def.scope == PropertyDef::Scope::Op ? 10 : 7) << st;
    }
    if (t.contains("crash")) os << " error! (" << t.value("crash", std::string()) << ")";
    if (t.contains("unverified")) os << " unverified (" << t.at("unverified").size() << " pin mismatch(es))";
    os << "\n";
  }
  const auto& s = report.at("summary");
  os << "\nresults " << s.at("results").dump() << ", target errors " << s.value("target_errors", 0)
     << "; '!' marks an unexpected result (" << s.at("unexpected").size() << ")\n";
  for (const auto& f : failing) os << "  unexpected: " << f << "\n";
}

}  // namespace flagprop
