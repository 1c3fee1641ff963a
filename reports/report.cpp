#include "reports/report.h"

#include "core/records.h"
#include "suites/registry.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace flagprop {

bool resultExpected(const json& target, const ResultRecord& r) {
  if (r.asExpected) return *r.asExpected;  // a merged report's result says
  return statusExpected(target.value("expect", json::object()), r.status, r.property, r.op, r.dtype);
}

bool resultExpected(const json& target, const json& result) { return resultExpected(target, resultRecord(result)); }

namespace {
// A manifest's `expect` ({"P5/op/dtype": status}) as report.json states it:
// no run keys as object keys, one entry per key with its parts as fields,
// [{"property": "P5", "op": "tanh", "dtype": "float16", "status": "fail"}]
// (op and dtype only where the key names them).
json expectEntries(const json& expect) {
  json out = json::array();
  for (auto it = expect.begin(); it != expect.end(); ++it) {
    const std::string& k = it.key();
    const auto opAt = k.find('/');
    json e = {{"property", k.substr(0, opAt)}};
    if (opAt != std::string::npos) {
      const auto dtypeAt = k.find('/', opAt + 1);
      e["op"] = k.substr(opAt + 1, dtypeAt == std::string::npos ? std::string::npos : dtypeAt - opAt - 1);
      if (dtypeAt != std::string::npos) e["dtype"] = k.substr(dtypeAt + 1);
    }
    e["status"] = it.value();
    out.push_back(e);
  }
  return out;
}

// `p` relative to folder `base` when it lies inside it, else as it is.
std::string under(const std::string& p, const std::string& base) {
  if (base.empty() || p.size() <= base.size() + 1 || p.compare(0, base.size(), base) != 0 || p[base.size()] != '/')
    return p;
  return p.substr(base.size() + 1);
}

// A file of report.md's report folder as report.md links it: relative to
// that folder (provenance.report_dir), so that a copied folder keeps its links.
std::string inReport(const std::string& p, const json& report) {
  return under(p, report.value("provenance", json::object()).value("report_dir", std::string()));
}
}  // namespace

namespace {

// Each result says what its manifest expects and how to replay it, so that
// no reader re-derives either.
void annotateResults(json& t, const json& runInfo) {
  for (auto& r : t["results"]) {
    if (!r.is_object()) continue;
    const ResultRecord rec = resultRecord(r);
    // The one replay command, for report.md, the console, report.html and the drafts alike.
    if (!rec.reproduce.empty()) r["replay"] = replayCommand(runInfo, t, rec);
    if (!rec.observations.distinctFailures.empty())
      for (auto& d : r["observations"]["distinct_failures"])
        if (d.is_object() && !d.value("reproduce", std::string()).empty())
          d["replay"] = replayCommand(runInfo, t, rec.replayId(), d.value("reproduce", std::string()));
    const std::string want = expectedStatus(t.value("expect", json::object()), rec.property, rec.op, rec.dtype);
    r["expected"] = want.empty() ? "pass or skip" : want;
    r["as_expected"] = resultExpected(t, rec);
  }
  if (t.contains("expect") && t.at("expect").is_object()) t["expect"] = expectEntries(t.at("expect"));
}

// The target's matrix row, for report.html: the cells the console and
// report.md show, registry properties first, then any other.
json matrixRow(const json& t) {
  json cells = json::array();
  std::vector<std::string> ids;
  for (const auto& d : properties()) ids.push_back(d.id);
  std::set<std::string> other;
  for (const auto& r : resultRecords(t))
    if (!r.property.empty() && !findProperty(r.property)) other.insert(r.property);
  ids.insert(ids.end(), other.begin(), other.end());
  for (const auto& id : ids)
    if (const MatrixCell c = matrixCellOf(t, id); c.of > 0)
      cells.push_back({{"property", id},
                       {"status", c.status},
                       {"count", c.count},
                       {"of", c.of},
                       {"unexpected", c.unexpected},
                       {"label", c.label()}});
  return cells;
}

// The example database's counts over every target; null when no target used one.
json dbSummary(const json& targets) {
  json db = {{"replayed", 0}, {"still_failing", 0}, {"flaky", 0}, {"fixed", 0}, {"dropped", 0}, {"stored", 0}};
  bool used = false;
  for (const auto& t : targets) {
    if (t.contains("db")) {
      used = true;
      db["dir"] = t.at("db").value("dir", std::string());
      db["stored"] = db["stored"].get<int>() + t.at("db").value("stored", 0);
      if (t.at("db").contains("error")) db["error"] = t.at("db").at("error");
    }
    for (const auto& r : resultRecords(t)) {
      if (!r.observations.db) continue;
      const DbNote& d = *r.observations.db;
      db["replayed"] = db["replayed"].get<int>() + d.replayed;
      const std::string k = r.status == "flaky" ? "flaky" : "still_failing";
      db[k] = db[k].get<int>() + (d.stillFailing.is_null() ? 0 : 1);
      db["fixed"] = db["fixed"].get<int>() + static_cast<int>(d.fixed.size());
      db["dropped"] = db["dropped"].get<int>() + static_cast<int>(d.dropped.size());
    }
  }
  return used ? db : json();
}

// {"targets", "target_errors", "not_run", "cut_short", "results" (counts
// by status), "unexpected"}: a target the run's --budget or an interruption
// stopped before it started is not run (no target error); one stopped while
// it ran is cut short.
json summaryOf(const json& targets) {
  json counts = {{"pass", 0}, {"fail", 0}, {"flaky", 0}, {"skip", 0}, {"error", 0}};
  json unexpected = json::array();
  int targetErrors = 0, notRun = 0, cutShort = 0;
  for (const auto& t : targets) {
    if (t.value("not_run", false)) {
      ++notRun;
      unexpected.push_back({{"target", t.value("name", "?")},
                            {"property", nullptr},
                            {"status", "not run"},
                            {"reason", t.value("stopped", "")}});
      continue;
    }
    if (t.contains("stopped")) ++cutShort;
    if (t.value("status", "") != "ok") {
      ++targetErrors;
      unexpected.push_back({{"target", t.value("name", "?")},
                            {"property", nullptr},
                            {"status", "error"},
                            {"reason", t.value("error", "")}});
      continue;
    }
    for (const auto& r : resultRecords(t)) {
      const std::string status = r.status.empty() ? "error" : r.status;
      counts[status] = counts.value(status, 0) + 1;
      if (resultExpected(t, r)) continue;
      json u = {{"target", t.value("name", "?")}, {"property", r.property}, {"status", r.status}, {"reason", r.reason}};
      if (r.hasOp()) {
        u["op"] = r.op;
        u["dtype"] = r.dtype;
      }
      unexpected.push_back(u);
    }
  }
  return {{"targets", targets.size()}, {"target_errors", targetErrors}, {"not_run", notRun}, {"cut_short", cutShort},
          {"results", counts},         {"unexpected", unexpected}};
}

}  // namespace

namespace {
// "stopped before every run ran (N target(s) not run, M cut short); ",
// first in the verdict of a run its --budget or an interruption stopped;
// "" for a run that ran everything.
std::string stoppedNote(const json& summary) {
  const int notRun = summary.value("not_run", 0), cut = summary.value("cut_short", 0);
  if (notRun == 0 && cut == 0) return "";
  return "stopped before every run ran (" + std::to_string(notRun) + " target(s) not run, " + std::to_string(cut) +
         " cut short); ";
}
}  // namespace

json mergeReport(const json& targetsIn, const json& runInfo) {
  json targets = targetsIn;
  for (auto& t : targets) annotateResults(t, runInfo);
  for (auto& t : targets) {
    if (!t.contains("results")) continue;
    if (json c = opCoverage(t); c.value("ops", 0) > 0) t["coverage"] = std::move(c);
    t["matrix"] = matrixRow(t);
  }
  json report = {{"schema", "flagprop.report/1"}, {"properties", propertiesJson()}, {"targets", targets}};
  json prov = runInfo;
  for (const auto& t : targets)
    if (t.value("status", "") == "ok" && t.contains("provenance")) {
      prov["versions"] = t["provenance"].value("versions", json::object());
      break;
    }
  report["provenance"] = prov;
  report["summary"] = summaryOf(targets);
  if (json db = dbSummary(targets); !db.is_null()) report["summary"]["db"] = db;
  return report;
}

namespace {
// One line of `s` for a table cell or the console: '|' and line ends as
// spaces, any other control byte (an escape sequence's ESC: reasons quote
// what the code under test raised) as '?'.
std::string cell(std::string s, size_t max = 110) {
  for (auto& c : s)
    if (c == '|' || c == '\n' || c == '\r' || c == '\t')
      c = ' ';
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}
}  // namespace

namespace {
// The status a manifest's `expect` wants for a result (pass when unnamed).
std::string expectedStatusOf(const json& target, const ResultRecord& r) {
  if (r.expected) return *r.expected == "pass or skip" ? "pass" : *r.expected;  // a merged report's result says
  const std::string want = expectedStatus(target.value("expect", json::object()), r.property, r.op, r.dtype);
  return want.empty() ? "pass" : want;
}

std::string resultLabel(const ResultRecord& r) {
  std::string l = r.property + " " + r.title;
  if (r.hasOp()) l += " · " + r.op + " " + r.dtype;
  return l;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// Per op and dtype: P5 / P6 status, cases, compilations per 100 cases and
// where the time went.
// The op properties a target's results hold, in registry order.
std::vector<const PropertyDef*> opColumns(const std::vector<ResultRecord>& results) {
  std::vector<const PropertyDef*> out;
  for (const auto& d : properties()) {
    if (d.scope != PropertyDef::Scope::Op) continue;
    for (const auto& r : results)
      if (r.property == d.id) {
        out.push_back(&d);
        break;
      }
  }
  return out;
}

// P9's measurements: one line each, with its plot.
void timingSection(std::ostringstream& md, const json& report, const std::vector<ResultRecord>& results) {
  bool any = false;
  for (const auto& r : results) {
    if (r.property != "P9") continue;
    if (!any) md << "P9 A/B timing (A: patch on, B: patch off; µs per call):\n\n";
    any = true;
    md << "- " << r.op << " " << r.dtype << ": " << r.reason;
    if (!r.plot.empty()) md << " ([plot](" << inReport(r.plot, report) << "))";
    if (!r.plotError.empty()) md << " (no plot: " << r.plotError << ")";
    md << "\n";
  }
  if (any) md << "\n";
}

}  // namespace

std::vector<StockNote> stockDiffersFromCpu(const json& target) {
  static const std::string kClass = "the stock path differs from CPU ATen";
  std::vector<StockNote> out;
  for (const auto& r : resultRecords(target)) {
    if (r.property != "P5" || !r.hasOp()) continue;
    const json& o = r.observations.raw;
    StockNote n{r.op, r.dtype, r.status, 0, r.casesRun, ""};
    for (const auto& d : o.value("distribution", json::array()))
      if (d.value("class", "").find(kClass) != std::string::npos) n.cases += d.value("cases", 0);
    for (const auto& note : o.value("control", json::array()))  // a failing result: its shrunk case's notes
      if (note.is_string() && note.get<std::string>().find("differs from CPU ATen") != std::string::npos) {
        if (n.cases == 0) n.cases = 1;
        if (n.example.empty()) n.example = note.get<std::string>();
      }
    if (n.cases > 0) out.push_back(std::move(n));
  }
  return out;
}

namespace {

// One op's (or one op x dtype's) standing in the coverage: excluded,
// fail, gave up (every result a skip) or pass; `why` the reason of the
// exclusion or of giving up, short.
struct Standing {
  std::string status, why;
  int distinct = 0;
};

Standing standingOf(const std::vector<const ResultRecord*>& rs) {
  bool allExcluded = true, anyFail = false, allSkip = true;
  Standing out;
  for (const ResultRecord* r : rs) {
    allExcluded &= r->reason.rfind("excluded: ", 0) == 0 || r->reason.rfind("not run in ", 0) == 0;
    allSkip &= r->status == "skip";
    if (r->failed()) {
      anyFail = true;
      out.distinct += 1 + static_cast<int>(r->observations.distinctFailures.size());
    }
  }
  const std::string reason = rs.front()->reason;
  if (allExcluded) {
    out.status = "excluded";
    out.why = reason.rfind("not run in ", 0) == 0 ? "not taken in this dtype" : reason.substr(10);
    if (out.why.rfind("no ATen overload", 0) == 0) out.why = "no such ATen overload in this LibTorch";
  } else if (anyFail) {
    out.status = "fail";
  } else if (allSkip) {
    out.status = "gave_up";
    out.why =
        reason.find("the stock path (the control") != std::string::npos
            ? "the stock path ended the process on its samples"
        : reason.find("ended the process") != std::string::npos ? "CPU ATen ended the process on its samples"
        : reason.find("cases from OpInfo") != std::string::npos ? "CPU ATen rejected the schema's samples and OpInfo's"
        : reason.find("no fallback") != std::string::npos ? "CPU ATen rejected the schema's samples; OpInfo has none"
        : reason.find("not run") != std::string::npos     ? "not run (budget or restarts)"
                                                          : "other: " + reason.substr(0, 80);
  } else {
    out.status = "pass";
  }
  return out;
}

// The work of results `rs` (one op's): their seconds, the part spent
// shrinking, their Triton compilations, where their cases' time went (the
// op, CPU ATen's reference, flagprop), added into `row`; and the op in
// `row.slowest` ({op, seconds}) where its results took longer than the one
// there.
void addWork(json& row, const std::vector<const ResultRecord*>& rs) {
  double seconds = 0, shrink = 0, op = 0, reference = 0, harness = 0;
  long compilations = 0;
  for (const ResultRecord* r : rs) {
    seconds += r->seconds;
    compilations += r->observations.compilations;
    shrink += r->observations.shrinkSeconds();
    op += r->observations.opSeconds;
    reference += r->observations.referenceSeconds;
    harness += r->observations.harnessSeconds;
  }
  row["seconds"] = row.value("seconds", 0.0) + seconds;
  row["shrink_seconds"] = row.value("shrink_seconds", 0.0) + shrink;
  row["compilations"] = row.value("compilations", 0L) + compilations;
  json& cases = row["case_seconds"];
  if (!cases.is_object()) cases = json::object();
  cases["op"] = cases.value("op", 0.0) + op;
  cases["reference"] = cases.value("reference", 0.0) + reference;
  cases["flagprop"] = cases.value("flagprop", 0.0) + harness;
  if (!rs.empty() && (!row.contains("slowest") || row.at("slowest").value("seconds", 0.0) < seconds))
    row["slowest"] = {{"op", rs.front()->op}, {"seconds", seconds}};
}

void countInto(json& row, const Standing& st) {
  row[st.status] = row.value(st.status, 0) + 1;
  if (st.status == "fail") row["distinct_failures"] = row.value("distinct_failures", 0) + st.distinct;
  if (!st.why.empty()) {
    json& why = row[st.status == "excluded" ? "excluded_because" : "gave_up_because"];
    if (!why.is_object()) why = json::object();
    why[st.why] = why.value(st.why, 0) + 1;
  }
}

}  // namespace

json opCoverage(const json& target) {
  std::map<std::string, std::vector<const ResultRecord*>> byOp;
  const std::vector<ResultRecord> results = resultRecords(target);  // pointers into it are kept
  for (const auto& r : results)
    if (r.hasOp()) byOp[r.op].push_back(&r);
  json c = {{"ops", byOp.size()},     {"judged", 0},  {"pass", 0},     {"fail", 0},
            {"distinct_failures", 0}, {"gave_up", 0}, {"excluded", 0}, {"excluded_because", json::array()}};
  std::map<std::string, int> why;
  // Per family: every op (dtype "all") and every op x dtype.
  std::map<std::pair<std::string, std::string>, json> families;
  for (const auto& [op, rs] : byOp) {
    const Standing st = standingOf(rs);
    if (st.status == "excluded") ++why[st.why];
    if (st.status == "gave_up")
      c["gave_up"] = c["gave_up"].get<int>() + 1;
    else
      c[st.status] = c[st.status].get<int>() + 1;
    if (st.status == "fail") c["distinct_failures"] = c["distinct_failures"].get<int>() + st.distinct;
    const std::string family = opFamily(op);
    json& all = families.try_emplace({family, "all"}, json::object()).first->second;
    all["ops"] = all.value("ops", 0) + 1;
    countInto(all, st);
    addWork(all, rs);
    std::map<std::string, std::vector<const ResultRecord*>> byDtype;
    for (const ResultRecord* r : rs) byDtype[r->dtype].push_back(r);
    for (const auto& [dtype, drs] : byDtype) {
      json& row = families.try_emplace({family, dtype}, json::object()).first->second;
      row["ops"] = row.value("ops", 0) + 1;
      countInto(row, standingOf(drs));
      addWork(row, drs);
    }
  }
  json rows = json::array();
  for (auto& [k, row] : families) {
    row["family"] = k.first;
    row["dtype"] = k.second;
    row["judged"] = row.value("pass", 0) + row.value("fail", 0);
    rows.push_back(row);
  }
  c["by_family"] = rows;
  c["judged"] = c["pass"].get<int>() + c["fail"].get<int>();
  c["stock_differs_from_cpu"] = stockDiffersFromCpu(target).size();
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [w, n] : why) sorted.push_back({-n, w});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [n, w] : sorted) c["excluded_because"].push_back({{"reason", w}, {"ops", -n}});
  return c;
}

namespace {

// The coverage by family (opFamily) and dtype: one row per family over
// all its dtypes, then one per family and dtype.
void familyTableInto(std::ostringstream& md, const json& c) {
  if (!c.contains("by_family") || c.at("by_family").empty()) return;
  auto reasons = [](const json& row, const char* key) {
    std::string out;
    if (row.contains(key))
      for (auto it = row.at(key).begin(); it != row.at(key).end(); ++it)
        out += (out.empty() ? "" : "; ") + it.key() + ": " + std::to_string(it.value().get<int>());
    return out;
  };
  md << "| family | dtype | ops | judged | pass | fail | gave up | gave up because | excluded | run s | of it "
        "shrinking "
        "| compilations | cases: op / reference / flagprop s | slowest op (run s) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const bool perDtype : {false, true})
    for (const auto& row : c.at("by_family")) {
      if ((row.value("dtype", "") != "all") != perDtype) continue;
      md << "| " << row.value("family", "") << " | " << row.value("dtype", "") << " | " << row.value("ops", 0) << " | "
         << row.value("judged", 0) << " | " << row.value("pass", 0) << " | " << row.value("fail", 0) << " | "
         << row.value("gave_up", 0) << " | " << cell(reasons(row, "gave_up_because"), 300) << " | "
         << row.value("excluded", 0) << " | " << fixed(row.value("seconds", 0.0), 1) << " | "
         << fixed(row.value("shrink_seconds", 0.0), 1) << " | " << row.value("compilations", 0L) << " | ";
      const json cs = row.value("case_seconds", json::object());
      md << fixed(cs.value("op", 0.0), 1) << " / " << fixed(cs.value("reference", 0.0), 1) << " / "
         << fixed(cs.value("flagprop", 0.0), 1) << " | ";
      if (row.contains("slowest"))
        md << cell(row.at("slowest").value("op", std::string()), 80) << " ("
           << fixed(row.at("slowest").value("seconds", 0.0), 1) << ")";
      md << " |\n";
    }
  md << "Run s: the seconds of the family's runs summed (under --jobs, over processes that ran at once), and the "
        "part of them spent shrinking failures (--shrink-time bounds it). Cases: where the seconds of the cases "
        "the runs executed went: the op under test (its calls, Triton compiling and autotuning included, and the "
        "copies of its outputs), CPU ATen's reference, and flagprop itself (building inputs, the stock control, "
        "the sandbox, the verdicts).\n\n";
}

// The coverage line of a target with many ops (catalog "flaggems").
void coverageLine(std::ostringstream& md, const json& t) {
  const json c = t.contains("coverage") ? t.at("coverage") : opCoverage(t);  // mergeReport's, where it ran
  if (c.value("ops", 0) < 20) return;
  md << "Coverage: " << c.value("ops", 0) << " ops; **judged " << c.value("judged", 0) << "** (pass "
     << c.value("pass", 0) << ", fail " << c.value("fail", 0) << " with " << c.value("distinct_failures", 0)
     << " distinct failures); gave up (every result a health skip: CPU ATen rejected most samples, or "
        "crashed or hung on them) "
     << c.value("gave_up", 0) << "; excluded " << c.value("excluded", 0) << "; the stock path differs from CPU ATen on "
     << c.value("stock_differs_from_cpu", 0) << " op x dtype result(s) (below: information, not findings)";
  std::string why;
  for (const auto& e : c.at("excluded_because"))
    why += (why.empty() ? "" : "; ") + e.value("reason", "") + ": " + std::to_string(e.value("ops", 0));
  if (!why.empty()) md << " (" << why << ")";
  md << ".\n\n";
  familyTableInto(md, c);
}

// Per op and dtype: each op property's status, cases, the fast path, the
// compilations per 100 cases and where the time went.
void opTable(std::ostringstream& md, const json& t, const std::vector<ResultRecord>& results) {
  std::map<std::pair<std::string, std::string>, std::map<std::string, const ResultRecord*>> rows;
  for (const auto& r : results)
    if (r.hasOp()) rows[{r.op, r.dtype}][r.property] = &r;
  if (rows.empty()) return;
  const auto columns = opColumns(results);
  md << "| op | dtype";
  for (const auto* c : columns) md << " | " << c->id << " " << c->title;
  md << " | cases (discarded) | fast path | compilations / 100 cases | reference / device op / harness | note "
        "|\n|---|---";
  for (size_t i = 0; i < columns.size() + 5; ++i) md << "|---";
  md << "|\n";
  for (const auto& [key, props] : rows) {
    md << "| " << key.first << " | " << key.second;
    std::string cases, fastPath, note;
    json stats;
    for (const auto* c : columns) {
      const auto it = props.find(c->id);
      if (it == props.end()) {
        cases += std::string(cases.empty() ? "" : " / ") + "-";
        md << " | -";
        continue;
      }
      const ResultRecord& r = *it->second;
      const json& o = r.observations.raw;
      cases += std::string(cases.empty() ? "" : " / ") + std::to_string(r.casesRun);
      if (r.observations.discarded > 0) cases += " (" + std::to_string(r.observations.discarded) + ")";
      md << " | **" << r.status << "**";
      const size_t distinct = r.observations.distinctFailures.size();
      if (distinct) md << " (" << distinct + 1 << " distinct)";
      if (!resultExpected(t, r)) md << " (expected " << expectedStatusOf(t, r) << ")";
      if (note.empty() && r.status != "pass") note = c->id + ": " + r.reason;
      if (stats.is_null() && o.contains("stats")) stats = o.at("stats");
      const std::string f = c->fastPathCell ? c->fastPathCell(o) : std::string();
      if (!f.empty()) fastPath += (fastPath.empty() ? "" : "; ") + f;
    }
    md << " | " << cases << " | " << cell(fastPath.empty() ? "-" : fastPath, 100);
    if (stats.is_null()) {
      md << " | - | - | " << cell(note.empty() ? "-" : note, 100) << " |\n";
      continue;
    }
    const auto& sh = stats.at("share");
    md << " | " << fixed(stats.value("compilations_per_100_cases", 0.0), 1) << " | "
       << fixed(100 * sh.value("reference", 0.0), 0) << "% / " << fixed(100 * sh.value("device_op", 0.0), 0) << "% / "
       << fixed(100 * sh.value("harness", 0.0), 0) << "% | " << cell(note.empty() ? "-" : note, 100) << " |\n";
  }
  md << "\n*cases (discarded)*: cases run per property, in the columns' order; in brackets the drawn cases that "
        "CPU ATen rejected (invalid arguments for the op), which are not judged and not counted as run. "
        "*reference / device op / harness*: where a case's time went: the CPU reference, the op under test, "
        "and flagprop itself (inputs, verdicts, sandbox).\n\n";
}
}  // namespace

namespace {

// A summary's results per status in words: "12 pass, 1 fail, 0 skip, 0 error".
std::string resultCounts(const json& summary) {
  std::string counts;
  for (const char* status : {"pass", "fail", "flaky", "skip", "error"})
    if (summary.at("results").contains(status) &&
        (std::string(status) != "flaky" || summary.at("results").value(status, 0L)))
      counts += (counts.empty() ? "" : ", ") + std::to_string(summary.at("results").value(status, 0L)) + " " + status;
  return counts.empty() ? "none" : counts;
}

void header(std::ostringstream& md, const json& report) {
  const auto& prov = report.at("provenance");
  md << "# flagprop report\n\n- schema: `" << report.value("schema", "") << "`\n";
  if (prov.contains("reproduce")) {
    md << "- replayed from reproduce string `" << prov.value("reproduce", "") << "`\n";
  } else {
    std::string manifests;
    for (const auto& m : prov.value("manifests", json::array())) manifests += " --manifest " + m.get<std::string>();
    const std::string seed = prov.value("seed", std::string("?"));
    // The run's own command with its seed (a report of an older flagprop has
    // no "rerun": its manifests and seed).
    const std::string rerun = prov.value("rerun", prov.value("flagprop", std::string("flagprop")) + " run" + manifests +
                                                      " --seed " + seed + " --report-dir flagprop-rerun");
    md << "- seed: `" << seed << "` (rerun the whole run: `" << rerun << "`)\n";
  }
  if (prov.contains("versions") && prov.at("versions").is_object() && !prov.at("versions").empty()) {
    // "python 3.12.3, torch 2.11.0, triton 3.6.0, flag_gems not importable"
    std::string versions;
    for (const char* name : {"python", "torch", "triton", "flag_gems", "torch_fl"}) {
      if (!prov.at("versions").contains(name)) continue;
      const json& v = prov.at("versions").at(name);
      versions += (versions.empty() ? "" : ", ") + std::string(name) + " " +
                  (v.is_string() ? "`" + v.get<std::string>() + "`" : std::string("not importable"));
    }
    md << "- versions: " << versions << "\n";
  }
  const auto& s = report.at("summary");
  md << "- results: " << resultCounts(s) << "; target errors: " << s.value("target_errors", 0)
     << "; unexpected: " << s.at("unexpected").size() << "\n";
  if (const std::string stopped = stoppedNote(s); !stopped.empty())
    md << "- verdict: " << stopped.substr(0, stopped.size() - 2)
       << ": the targets not run and the runs left are no pass (`--continue DIR` runs them)\n";
  // In words, for a reader who sees fail cells and not the manifests.
  const long failing = s.at("results").value("fail", 0L) + s.at("results").value("flaky", 0L);
  if (s.at("unexpected").empty() && s.value("target_errors", 0) == 0 && failing > 0)
    md << "- verdict: every result is what its manifest expects, including the " << failing
       << " failing or flaky result(s) (mutants built to fail, known faults): nothing to act on\n";
  else if (!s.at("unexpected").empty())
    md << "- verdict: " << s.at("unexpected").size()
       << " result(s) are not what their manifests expect (marked `!`, listed under \"Unexpected results\")\n";
  if (s.contains("db")) {
    const json& d = s.at("db");
    md << "- example database `" << d.value("dir", std::string()) << "`: " << d.value("replayed", 0)
       << " stored example(s) "
       << "replayed, " << d.value("still_failing", 0) << " still failing, " << d.value("flaky", 0) << " flaky, "
       << d.value("fixed", 0) << " fixed, " << d.value("dropped", 0) << " dropped (no longer a valid case), "
       << d.value("stored", 0) << " stored by this run\n";
  }
  md << "\n";
  if (!s.at("unexpected").empty()) {
    md << "## Unexpected results\n\n";
    for (const auto& u : s.at("unexpected"))
      md << "- **" << u.value("target", "?") << "** "
         << (u.at("property").is_string() ? u.value("property", "") : "target")
         << (u.contains("op") ? " " + u.value("op", "") + " " + u.value("dtype", "") : "") << ": **"
         << u.value("status", "") << "**: " << cell(u.value("reason", ""), 200) << "\n";
    md << "\n";
  }
  md << "## Matrix\n\nEach cell: the worst status of the property's results (op properties: how many of the "
        "op x dtype runs have it); `-` the property does not apply; `!` not what the manifest expects.\n\n| target |";
  for (const auto& p : properties()) md << " " << p.id << " |";
  md << "\n|---|";
  for (size_t i = 0; i < properties().size(); ++i) md << "---|";
  md << "\n";
  for (const auto& t : report.at("targets")) {
    md << "| [" << t.value("name", "?") << "](#" << t.value("name", "?") << ") |";
    if (t.value("status", "") != "ok") {
      md << " **target error**: " << cell(t.value("error", ""), 120);
      for (size_t i = 1; i < properties().size(); ++i) md << " |";
      md << " |\n";
      continue;
    }
    for (const auto& p : properties()) {
      const std::string c = matrixCell(t, p.id);
      md << " " << (c.back() == '!' ? "**" + c + "**" : c) << " |";
    }
    md << "\n";
  }
  md << "\n";
}

// The installer properties' table of one target.
void installerTable(std::ostringstream& md, const json& t, const std::vector<ResultRecord>& results) {
  bool any = false;
  for (const auto& r : results) any |= !r.hasOp();
  if (!any) return;
  md << "| property | status | expected | cases | reason |\n|---|---|---|---|---|\n";
  for (const auto& r : results) {
    if (r.hasOp()) continue;
    md << "| " << resultLabel(r) << " | **" << r.status << "** | " << expectedStatusOf(t, r) << " | " << r.casesRun
       << " | " << cell(r.reason) << " |\n";
  }
  md << "\n";
}

// The op results whose device stock path disagreed with CPU ATen: listed,
// counted, and said to be information (docs/control.md), not findings.
void stockSection(std::ostringstream& md, const json& t) {
  const auto notes = stockDiffersFromCpu(t);
  if (notes.empty()) return;
  md << "The stock path differs from CPU ATen on **" << notes.size()
     << "** op x dtype result(s): there the op was judged against the device's own stock kernel (the same call "
        "with FlagGems off); the difference is ATen's, on this device, and no finding (docs/control.md).\n\n"
        "| op | dtype | P5 | cases where the stock path differs from CPU ATen |\n|---|---|---|---|\n";
  for (const auto& n : notes)
    md << "| " << n.op << " | " << n.dtype << " | " << n.status << " | " << n.cases << " of " << n.casesRun
       << (n.example.empty() ? "" : " (" + cell(n.example, 120) + ")") << " |\n";
  md << "\n";
}

// One failure with its evidence and how to replay it.
void failure(std::ostringstream& md, const json& report, const json& t, const ResultRecord& r) {
  const auto& prov = report.at("provenance");
  md << "### " << t.value("name", "?") << " / " << resultLabel(r) << "\n\n" << r.reason << "\n\n";
  const json& o = r.observations.raw;
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
  if (o.contains("kernels"))
    md << "- LibEntry runs and keys by kernel (after warm-up): `" << o.at("kernels").dump() << "`\n";
  if (o.contains("calls")) md << "- outputs (expected from ATen vs actual): `" << o.at("calls").dump() << "`\n";
  const Observations& obs = r.observations;
  md << "- " << (obs.crash ? "counterexample (unshrunk: the process died on it)" : "shrunk counterexample") << ": `"
     << r.counterexample.dump() << "`\n";
  if (obs.replays)
    md << "- judged again" << (obs.fresh ? " (in its process, then first in a fresh one)" : " in its process")
       << ": failed " << obs.replays->failed << " of " << obs.replays->of << " times\n";
  const bool fromDb = obs.db && !obs.db->stillFailing.is_null();
  if (fromDb)
    md << "- the stored example of " << obs.db->stillFailing.value("stored_at", "") << " (`"
       << obs.db->stillFailing.value("file", "") << "`), judged first and failing still: no search ran\n";
  if (!r.reproduce.empty())
    md << "- reproduce in flagprop: `" << replayCommand(prov, t, r) << "`\n";
  else if (fromDb)
    md << "- replayed from the example database: rerun the same command, or run the reproducer\n";
  else
    md << "- no replay string (the process that would replay it in flagprop died on this case): run the reproducer\n";
  if (!r.reproducer.empty()) {
    const std::string repro = inReport(r.reproducer, report);
    md << "- standalone reproducer: [`" << repro << "`](" << repro << "), run in the report folder: `"
       << shellQuote(prov.value("python", std::string("python3"))) << " " << shellQuote(repro)
       << "` (exit 1: reproduced)\n";
  }
  md << "\n";
}

}  // namespace

namespace {
// The stored examples a target's runs replayed that pass now (fixed) or are
// no longer valid cases (dropped), with when and where they were stored.
void exampleSection(std::ostringstream& md, const std::vector<ResultRecord>& results) {
  std::ostringstream rows;
  for (const auto& r : results) {
    if (!r.observations.db) continue;
    for (const bool fixed : {true, false})
      for (const auto& ex : fixed ? r.observations.db->fixed : r.observations.db->dropped)
        rows << "| " << resultLabel(r) << " | " << (fixed ? "fixed" : "dropped") << " | " << ex.value("stored_at", "")
             << " | `" << ex.value("stored_in", "") << "` | " << cell(ex.value(fixed ? "reason" : "why", ""), 160)
             << " |\n";
  }
  if (rows.str().empty()) return;
  md << "### Stored examples that no longer fail\n\n| run | now | stored at | stored in | "
     << "why it failed then (fixed) / why it is no longer a case (dropped) |\n|---|---|---|---|---|\n"
     << rows.str() << "\n";
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
    if (t.contains("stopped")) md << "**stopped:** " << t.value("stopped", std::string()) << "\n\n";
    if (t.contains("continued"))
      md << "**continued** from the report in `" << t["continued"].value("from", std::string())
         << "`: " << t["continued"].value("kept", 0) << " result(s) kept from it, " << t["continued"].value("ran", 0)
         << " run now\n\n";
    for (const auto& m : t.value("unverified", json::array()))
      md << "**unverified run**: " << m.get<std::string>() << " (every result below is marked unverified)\n\n";
    const json p = t.value("provenance", json::object());
    if (p.contains("pin"))
      md << "pin: `" << p.at("pin").value("name", "") << "` (" << p.at("pin").value("path", "") << ")\n\n";
    md << "installer sha256 seen: `" << p.value("installer_sha256", "-") << "`";
    if (p.contains("libentry_sha256")) md << ", libentry sha256 seen: `" << p.value("libentry_sha256", "-") << "`";
    md << ", gates: `" << p.value("gates", json("")).dump() << "`, device: `" << p.value("device", "") << "`\n\n";
    if (t.contains("precompile")) {
      const json& c = t.at("precompile");
      md << "compiled ahead (--precompile): " << c.value("ran", 0) << " of " << c.value("cases", 0) << " calls in "
         << c.value("workers", 0) << " processes, " << fixed(c.value("seconds", 0.0), 1) << " s, "
         << c.value("compilations", 0) << " Triton compilations";
      if (c.value("failed", 0) > 0) md << "; " << c.value("failed", 0) << " raised (the run judged them)";
      for (const auto& w : c.value("stopped", json::array())) md << "; " << w.get<std::string>();
      md << "\n\n";
    }
    if (t.contains("captured_output") && t.at("captured_output").value("lines", 0) > 0) {
      const json& c = t.at("captured_output");
      md << "<details><summary>the code under test printed " << c.value("lines", 0) << " line(s), "
         << c.value("distinct_lines", 0) << " distinct (warnings, log records, prints), most frequent first"
         << "</summary>\n\n| count | line |\n|---|---|\n";
      for (const auto& d : c.at("distinct"))
        md << "| " << d.value("count", 0) << " | `" << cell(d.value("text", ""), 200) << "` |\n";
      md << "\n</details>\n\n";
    }
    if (t.contains("left_running")) {
      md << "**left running by the code under test** (started in a case, still alive after it):";
      for (const auto& l : t.at("left_running"))
        md << " " << l.value("kind", "") << " `"
           << (l.value("kind", "") == "thread" ? l.value("name", "") : l.value("command", "")) << "`;";
      md << "\n\n";
    }
    const std::vector<ResultRecord> results = resultRecords(t);
    installerTable(md, t, results);
    coverageLine(md, t);
    opTable(md, t, results);
    stockSection(md, t);
    timingSection(md, report, results);
    for (const auto& r : results)
      if (r.status == "fail" || r.status == "flaky") failure(md, report, t, r);
    exampleSection(md, results);
  }
  return md.str();
}

MatrixCell matrixCellOf(const json& t, const std::string& p) {
  static const std::vector<std::string> order = {"pass", "skip", "flaky", "fail", "error"};
  const auto rank = [](const std::string& x) { return std::find(order.begin(), order.end(), x) - order.begin(); };
  const PropertyDef* def = findProperty(p);
  MatrixCell c;
  c.perOp = def && def->scope == PropertyDef::Scope::Op;
  for (const auto& r : resultRecords(t)) {
    if (r.property != p) continue;
    const std::string rs = r.status.empty() ? "?" : r.status;
    ++c.of;
    if (c.status == "-" || rank(rs) > rank(c.status)) {
      c.status = rs;
      c.count = 1;
    } else if (rs == c.status) {
      ++c.count;
    }
    c.unexpected += resultExpected(t, r) ? 0 : 1;
  }
  return c;
}

std::string MatrixCell::label() const {
  std::string st = status;
  if (of > 0 && perOp) st += " " + std::to_string(count) + "/" + std::to_string(of);
  return unexpected ? st + "!" : st;
}

std::string matrixCell(const json& t, const std::string& p) { return matrixCellOf(t, p).label(); }

std::string shellQuote(const std::string& s) {
  static const std::string safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";
  if (!s.empty() && s.find_first_not_of(safe) == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::string replayCommand(const json& prov, const json& t, const std::string& key, const std::string& reproduce) {
  return shellQuote(prov.value("flagprop", std::string("flagprop"))) + " run --manifest " +
         shellQuote(t.value("manifest", "")) + " --property " + shellQuote(key) + " --reproduce " +
         shellQuote(reproduce) + " --report-dir flagprop-replay";
}

std::string replayCommand(const json& prov, const json& t, const ResultRecord& r) {
  return replayCommand(prov, t, r.replayId(), r.reproduce);
}

std::string replayCommand(const json& prov, const json& t, const json& r) {
  return replayCommand(prov, t, resultRecord(r));
}

namespace {
// `p` as the console shows it: relative to the current folder when it lies
// inside it ("./" before a program's), else as it is.
std::string consolePath(const std::string& p, bool program = false) {
  std::error_code ec;
  const std::string rel = under(p, std::filesystem::current_path(ec).string());
  return rel == p ? p : program && rel.find('/') == std::string::npos ? "./" + rel : rel;
}

// The console's replay command: replayCommand with paths as consolePath gives them.
std::string shownReplay(const json& prov, const json& t, const ResultRecord& r) {
  json p = prov, target = t;
  p["flagprop"] = consolePath(prov.value("flagprop", std::string("flagprop")), true);
  target["manifest"] = consolePath(t.value("manifest", std::string()));
  return replayCommand(p, target, r);
}
}  // namespace

std::string shownPath(const std::string& p) { return consolePath(p); }

void printTargetResult(const json& t, const json& prov, size_t index, size_t count, double seconds, std::ostream& os,
                       size_t blocks, bool expectedToo) {
  os << "[" << index << "/" << count << "] " << t.value("name", "?");
  if (t.value("not_run", false)) {
    os << ": not run (" << t.value("stopped", std::string()) << ")\n";
    return;
  }
  if (t.value("status", "") != "ok") {
    os << ": target error: " << cell(t.value("error", ""), 400) << "\n";
  } else {
    std::string cells;
    for (const auto& d : properties()) {
      const std::string c = matrixCell(t, d.id);
      if (c != "-") cells += (cells.empty() ? "" : ", ") + d.id + " " + c;
    }
    os << ": " << (cells.empty() ? std::string("nothing ran") : cells) << " (" << fixed(seconds, 1) << " s)\n";
  }
  if (t.contains("crashes")) {
    size_t between = 0;
    for (const auto& c : t.at("crashes")) between += c.value("key", std::string()) == "between cases";
    const size_t inCase = t.at("crashes").size() - between;
    os << "  the target process died ";
    if (inCase) os << inCase << " time(s) on a case" << (between ? " and " : "");
    if (between) os << between << " time(s) between cases";
    os << "; a fresh one went on each time\n";
  }
  if (t.contains("crash")) os << "  " << t.value("crash", std::string()) << "\n";
  if (t.contains("stopped")) os << "  stopped: " << t.value("stopped", std::string()) << "\n";
  if (t.contains("continued"))
    os << "  continued: " << t["continued"].value("kept", 0) << " result(s) kept from "
       << t["continued"].value("from", std::string()) << ", " << t["continued"].value("ran", 0) << " run now\n";
  if (t.contains("captured_output") && t.at("captured_output").value("lines", 0) > 0) {
    const json& c = t.at("captured_output");
    os << "  captured " << c.value("lines", 0) << " line(s) the code under test printed ("
       << c.value("distinct_lines", 0) << " distinct; listed in report.md)\n";
  }
  for (const auto& l : t.value("left_running", json::array()))
    os << "  left running by the code under test: " << l.value("kind", "") << " "
       << cell(l.value("kind", "") == "thread" ? l.value("name", "") : l.value("command", ""), 200) << "\n";
  size_t shown = 0, oneLiners = 0, more = 0;
  for (const auto& r : resultRecords(t)) {
    const std::string& st = r.status;
    if (!r.failed()) continue;
    const bool expected = resultExpected(t, r);
    if (expected && !expectedToo) continue;  // its matrix cell above says it; report.md has the rest
    const std::string head = (st == "fail"    ? "FAIL "
                              : st == "flaky" ? "FLAKY "
                                              : "ERROR ") +
                             resultLabel(r) + (expected ? " (expected by the manifest)" : " (unexpected)");
    if (shown < blocks) {
      ++shown;
      os << "  " << head << "\n    why: " << cell(r.reason, 300) << "\n";
      if (!r.counterexample.is_null())
        os << "    counterexample (" << (r.observations.crash ? "unshrunk: the process died on it" : "shrunk")
           << "): " << cell(r.counterexample.dump(), 300) << "\n";
      if (!r.reproducer.empty())
        os << "    reproducer: " << shellQuote(prov.value("python", std::string("python3"))) << " "
           << shellQuote(consolePath(r.reproducer)) << "\n";
      if (!r.reproduce.empty()) os << "    replay: " << shownReplay(prov, t, r) << "\n";
    } else if (oneLiners < 6) {
      ++oneLiners;
      os << "  " << head << ": " << cell(r.reason, 140) << "\n";
    } else {
      ++more;
    }
  }
  if (more) os << "  ... and " << more << " more unexpected result(s): report.md\n";
  os << std::flush;
}

namespace {
std::string xmlEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '&')
      o += "&amp;";
    else if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '"')
      o += "&quot;";
    else if (c < 0x20 && ch != '\n' && ch != '\t')
      o += ' ';  // not allowed in XML 1.0
    else
      o += ch;
  }
  return o;
}
}  // namespace

std::string junitXml(const json& t, const json& prov) {
  const std::string name = xmlEscape(t.value("name", "?")), file = xmlEscape(t.value("manifest", ""));
  std::ostringstream cases;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double total = 0;
  const auto targetError = [&](const std::string& why) {
    ++tests, ++errors;
    cases << "  <testcase name=\"target\" classname=\"" << name << "\" file=\"" << file << "\">\n    <error message=\""
          << xmlEscape(why) << "\">" << xmlEscape(why) << "</error>\n  </testcase>\n";
  };
  if (t.value("status", "") != "ok")
    targetError(t.value("error", std::string("target error")));
  else if (t.contains("stopped"))  // cut short: the runs left are no pass
    targetError("not every run ran: " + t.value("stopped", std::string()));
  for (const auto& r : resultRecords(t)) {
    if (r.key == "process") {
      targetError(r.reason);
      continue;
    }
    ++tests;
    const double s = r.seconds;
    total += s;
    const std::string &st = r.status, &reason = r.reason;
    cases << "  <testcase name=\"" << xmlEscape(r.replayId() + " " + r.title) << "\" classname=\"" << name
          << "\" file=\"" << file << "\" time=\"" << fixed(s, 3) << "\">\n";
    cases << "    <properties><property name=\"status\" value=\"" << xmlEscape(st)
          << "\"/><property name=\"expected\" value=\"" << xmlEscape(expectedStatusOf(t, r)) << "\"/></properties>\n";
    std::string detail = reason;
    if (!r.counterexample.is_null()) detail += "\ncounterexample (shrunk): " + r.counterexample.dump();
    if (!r.reproduce.empty()) detail += "\nreplay: " + replayCommand(prov, t, r);
    if (!r.reproducer.empty()) detail += "\nreproducer: " + r.reproducer;
    if (st == "skip") {
      ++skipped;
      cases << "    <skipped message=\"" << xmlEscape(reason) << "\"/>\n";
    } else if (st == "error") {
      ++errors;
      cases << "    <error message=\"" << xmlEscape(reason) << "\">" << xmlEscape(detail) << "</error>\n";
    } else if (!resultExpected(t, r)) {
      ++failures;
      cases << "    <failure message=\"" << xmlEscape(reason) << "\">" << xmlEscape(detail) << "</failure>\n";
    } else if (st == "fail") {
      cases << "    <system-out>" << xmlEscape("fail, as the manifest expects: " + detail) << "</system-out>\n";
    }
    cases << "  </testcase>\n";
  }
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"" << name << "\" tests=\"" << tests
    << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
    << fixed(total, 3) << "\" file=\"" << file << "\">\n"
    << cases.str() << "</testsuite>\n</testsuites>\n";
  return x.str();
}

namespace {
// Runs of more targets than this show no matrix on the console when every
// result is as expected: the line per target said it (report.md has it).
constexpr size_t kMatrixTargets = 12;

// The example database's counts (summary.db), one line; nothing without one.
void printDatabaseLine(const json& s, std::ostream& os) {
  if (!s.contains("db")) return;
  const json& d = s.at("db");
  os << "example database " << consolePath(d.value("dir", std::string())) << ": " << d.value("replayed", 0)
     << " replayed, " << d.value("still_failing", 0) << " still failing, " << d.value("flaky", 0) << " flaky, "
     << d.value("fixed", 0) << " fixed, " << d.value("dropped", 0) << " dropped, " << d.value("stored", 0) << " stored";
  if (d.contains("error")) os << " (" << d.value("error", std::string()) << ")";
  os << "\n";
}
}  // namespace

void printSummary(const json& report, std::ostream& os) {
  const auto& s = report.at("summary");
  const size_t unexpected = s.at("unexpected").size();
  os << "\nverdict: " << stoppedNote(s)
     << (unexpected ? std::to_string(unexpected) + " unexpected result(s)" : std::string("as expected"))
     << "; results: " << resultCounts(s) << "; target errors " << s.value("target_errors", 0) << "\n";
  bool stoppedOrCrashed = false;
  for (const auto& t : report.at("targets")) stoppedOrCrashed |= t.contains("stopped") || t.contains("crash");
  // The matrix where it says more than the lines per target did: a short
  // run, or one where something is not as expected.
  if (report.at("targets").size() > kMatrixTargets && !unexpected && s.value("target_errors", 0) == 0 &&
      !stoppedOrCrashed) {
    os << "the target x property matrix of the " << report.at("targets").size() << " targets: report.md\n";
    printDatabaseLine(s, os);
    return;
  }
  // Each column as wide as its widest cell ("skip 292/999"), at least 10 (op
  // properties) or 7 characters.
  std::vector<size_t> width;
  for (const auto& p : properties()) width.push_back(p.scope == PropertyDef::Scope::Op ? 10 : 7);
  for (const auto& t : report.at("targets"))
    if (t.value("status", "") == "ok")
      for (size_t i = 0; i < properties().size(); ++i)
        width[i] = std::max(width[i], matrixCell(t, properties()[i].id).size());
  os << "\n" << std::left << std::setw(30) << "target";
  for (size_t i = 0; i < properties().size(); ++i)
    os << " " << std::setw(static_cast<int>(width[i])) << properties()[i].id;
  os << "\n";
  std::vector<std::string> failing;
  for (const auto& t : report.at("targets")) {
    const std::string name = t.value("name", "?");
    os << std::left << std::setw(30) << (name.size() > 29 ? name.substr(0, 28) + "~" : name);
    if (t.value("not_run", false)) {
      os << " not run!\n";
      failing.push_back(name + ": not run");
      continue;
    }
    if (t.value("status", "") != "ok") {
      os << " error! (target error: " << cell(t.value("error", ""), 60) << ")\n";
      failing.push_back(name + ": target error");
      continue;
    }
    for (size_t i = 0; i < properties().size(); ++i)
      os << " " << std::setw(static_cast<int>(width[i])) << matrixCell(t, properties()[i].id);
    for (const auto& r : resultRecords(t))
      if (!resultExpected(t, r))
        failing.push_back(name + ": " + resultLabel(r) + ": " + r.status + " (expected " + expectedStatusOf(t, r) +
                          ")");
    if (t.contains("crash")) os << " error! (" << t.value("crash", std::string()) << ")";
    if (t.contains("crashes")) os << " (" << t.at("crashes").size() << " process restart(s))";
    if (t.contains("stopped"))
      os << " (stopped: "
         << (t.value("stopped", std::string()).find("--budget") != std::string::npos ? "--budget ran out"
                                                                                     : "interrupted")
         << ")";
    if (t.contains("unverified")) os << " unverified (" << t.at("unverified").size() << " pin mismatch(es))";
    os << "\n";
  }
  os << "\n'!' marks an unexpected result (" << unexpected << ")\n";
  printDatabaseLine(s, os);
  for (size_t i = 0; i < failing.size() && i < 20; ++i) os << "  unexpected: " << failing[i] << "\n";
  if (failing.size() > 20) os << "  ... and " << failing.size() - 20 << " more (report.md)\n";
}

std::string familyTable(const json& coverage) {
  std::ostringstream md;
  familyTableInto(md, coverage);
  return md.str();
}

}  // namespace flagprop
