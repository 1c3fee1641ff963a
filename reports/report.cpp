#include "reports/report.h"

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace flagprop {

bool resultExpected(const json& target, const json& result) {
  const std::string prop = result.value("property", "");
  const std::string status = result.value("status", "");
  const json expect = target.value("expect", json::object());
  if (expect.contains(prop)) return expect.at(prop).get<std::string>() == status;
  return status == "pass" || status == "skip";
}

json mergeReport(const json& targets, const json& runInfo) {
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
        unexpected.push_back({{"target", t.value("name", "?")}, {"property", r.value("property", "")},
                              {"status", r.value("status", "")}, {"reason", r.value("reason", "")}});
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

std::string renderMarkdown(const json& report) {
  std::ostringstream md;
  const auto& prov = report.at("provenance");
  md << "# flagprop report\n\n";
  md << "- schema: `" << report.value("schema", "") << "`\n";
  const std::string exe = prov.value("flagprop", std::string("flagprop"));
  if (prov.contains("reproduce"))
    md << "- replayed from reproduce string `" << prov.value("reproduce", "") << "`\n";
  else
  {
    std::string manifests;
    for (const auto& m : prov.value("manifests", json::array())) manifests += " --manifest " + m.get<std::string>();
    md << "- seed: `" << prov.value("seed", json(0)).dump() << "` (rerun the whole run: `" << exe << " run" << manifests
       << " --seed " << prov.value("seed", json(0)).dump() << " --report-dir flagprop-rerun`)\n";
  }
  if (prov.contains("versions")) md << "- versions: `" << prov.at("versions").dump() << "`\n";
  const auto& s = report.at("summary");
  md << "- results: " << s.at("results").dump() << ", target errors: " << s.value("target_errors", 0)
     << ", unexpected: " << s.at("unexpected").size() << "\n\n";
  for (const auto& t : report.at("targets")) {
    md << "## " << t.value("name", "?") << "\n\n";
    if (!t.value("description", std::string()).empty()) md << t.value("description", std::string()) << "\n\n";
    md << "manifest: `" << t.value("manifest", "") << "`\n\n";
    if (t.value("status", "") != "ok") {
      md << "**target error:** " << t.value("error", "") << "\n\n";
      continue;
    }
    const auto& p = t.at("provenance");
    md << "installer sha256 seen: `" << p.value("installer_sha256", "-") << "`";
    if (p.contains("libentry_sha256")) md << ", libentry sha256 seen: `" << p.value("libentry_sha256", "-") << "`";
    md << ", gates: `" << p.value("gates", json("")).dump() << "`, device: `" << p.value("device", "") << "`\n\n";
    md << "| property | status | expected | cases | reason |\n|---|---|---|---|---|\n";
    for (const auto& r : t.at("results")) {
      const json expect = t.value("expect", json::object());
      const std::string exp = expect.contains(r.value("property", "")) ? expect.at(r.value("property", "")).get<std::string>() : "pass";
      md << "| " << r.value("property", "") << " " << r.value("title", "") << " | **" << r.value("status", "") << "** | "
         << exp << " | " << r.value("cases_run", 0) << " | " << cell(r.value("reason", "")) << " |\n";
    }
    md << "\n";
    for (const auto& r : t.at("results")) {
      if (r.value("status", "") != "fail") continue;
      md << "### " << t.value("name", "?") << " / " << r.value("property", "") << ": " << r.value("title", "") << "\n\n";
      md << r.value("reason", "") << "\n\n";
      const auto& o = r.at("observations");
      if (o.contains("helper")) md << "- helper `_descriptor_cache_key`: " << o.at("helper").dump() << "\n";
      if (o.contains("exceptions_caught"))
        for (const auto& e : o.at("exceptions_caught"))
          md << "- exception caught inside the installer: `" << e.value("type", "") << "` at `" << e.value("file", "")
             << ":" << e.value("line", 0) << "` in `" << e.value("function", "") << "()`: " << e.value("message", "")
             << "\n";
      if (o.contains("returned_normally")) md << "- installer returned normally: " << o.at("returned_normally").dump() << "\n";
      if (o.contains("unchanged")) md << "- unchanged: `" << o.at("unchanged").dump() << "`\n";
      if (o.contains("markers")) md << "- markers: `" << o.at("markers").dump() << "`\n";
      if (o.contains("components")) md << "- components: `" << o.at("components").dump() << "`\n";
      md << "- shrunk counterexample: `" << r.value("counterexample", json()).dump() << "`\n";
      md << "- reproduce in flagprop: `" << exe << " run --manifest " << t.value("manifest", "") << " --property "
         << r.value("property", "") << " --reproduce '" << r.value("reproduce", "") << "' --report-dir flagprop-replay`\n";
      if (r.contains("reproducer") && !r.at("reproducer").is_null())
        md << "- standalone reproducer: `" << prov.value("python", std::string("python3")) << " "
           << r.at("reproducer").get<std::string>() << "` (exit 1: reproduced)\n";
      md << "\n";
    }
  }
  return md.str();
}

void printSummary(const json& report, std::ostream& os) {
  os << "\n" << std::left << std::setw(30) << "target" << " P1      P2      P3      P4\n";
  for (const auto& t : report.at("targets")) {
    const std::string name = t.value("name", "?");
    os << std::left << std::setw(30) << (name.size() > 29 ? name.substr(0, 28) + "~" : name);
    if (t.value("status", "") != "ok") {
      os << " error! (target error, see above and report.md)\n";
      continue;
    }
    for (const char* p : {"P1", "P2", "P3", "P4"}) {
      std::string st = "-";
      for (const auto& r : t.at("results"))
        if (r.value("property", "") == p) {
          st = r.value("status", "?");
          if (!resultExpected(t, r)) st += "!";
        }
      os << " " << std::setw(7) << st;
    }
    os << "\n";
  }
  const auto& s = report.at("summary");
  os << "\nresults " << s.at("results").dump() << ", target errors " << s.value("target_errors", 0)
     << "; '!' marks an unexpected result (" << s.at("unexpected").size() << ")\n";
}

void writeText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write " + path);
}

}  // namespace flagprop
