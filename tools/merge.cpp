#include "tools/merge.h"

#include "core/files.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace flagprop {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// One part's report, read and checked: its index and count (1, 1 for a
// report of a whole run), or the error.
struct Part {
  std::string dir;
  json report;
  int index = 1, count = 1;
  std::string host;
  bool complete = true;
};

std::string readPart(const std::string& dir, Part& p) {
  p.dir = fs::absolute(dir).lexically_normal().string();
  try {
    p.report = json::parse(readFile((fs::path(dir) / "report.json").string()));
  } catch (const std::exception& e) {
    return dir + ": no report to merge (" + std::string(e.what()).substr(0, 200) + ")";
  }
  if (!p.report.is_object() || p.report.value("schema", "") != "flagprop.report/1" ||
      !p.report.value("targets", json()).is_array())
    return dir + ": report.json is not a flagprop report";
  const json prov = p.report.value("provenance", json::object());
  const json shard = prov.value("shard", json::object());
  p.index = shard.value("index", 1);
  p.count = shard.value("count", 1);
  p.host = prov.value("host", std::string());
  for (const auto& t : p.report.at("targets")) p.complete = p.complete && !t.contains("stopped");
  return "";
}

// "" when `p` is a part of the same run as `first`, else why not.
std::string sameRun(const Part& first, const Part& p) {
  const json a = first.report.value("provenance", json::object()), b = p.report.value("provenance", json::object());
  if (p.count != first.count)
    return p.dir + " is part " + std::to_string(p.index) + " of " + std::to_string(p.count) + ", " + first.dir +
           " part " + std::to_string(first.index) + " of " + std::to_string(first.count) + ": not one run";
  for (const char* k : {"seed", "manifests"})
    if (a.value(k, json()) != b.value(k, json()))
      return p.dir + " and " + first.dir + " ran with different " + k + ": parts of different runs";
  return "";
}

// A part's result (or a distinct failure's), its reproducer and plot paths
// as they will be in the merged folder: OUT/reproducers/NAME, OUT/plots/NAME.
void relocate(json& r, const std::string& outDir, std::vector<std::pair<std::string, std::string>>& copies) {
  for (const char* k : {"reproducer", "plot"})
    if (r.contains(k) && r.at(k).is_string()) {
      const std::string sub = std::string(k) == "plot" ? "plots" : "reproducers";
      const std::string to = (fs::path(outDir) / sub / fs::path(r.at(k).get<std::string>()).filename()).string();
      copies.emplace_back(r.at(k).get<std::string>(), to);
      r[k] = to;
    }
}

// Adds part `p`'s target documents into `targets` (by name, in first-seen
// order), each result marked with its part; "" or why they clash.
std::string addTargets(const Part& p, const std::string& outDir, Merged& m, std::map<std::string, size_t>& at,
                       std::map<std::string, int>& owner) {
  json& targets = m.targets;
  const std::string mark = std::to_string(p.index) + "/" + std::to_string(p.count);
  for (const auto& t : p.report.at("targets")) {
    const std::string name = t.value("name", std::string("?"));
    if (!at.count(name)) {
      json copy = t;
      copy["results"] = json::array();
      at[name] = targets.size();
      targets.push_back(copy);
    }
    json& into = targets[at[name]];
    if (t.value("status", "") != "ok" && !t.value("not_run", false)) {  // a target error in any part stands
      into["status"] = t.value("status", std::string("error"));
      into["error"] = t.value("error", std::string());
    }
    if (t.contains("stopped")) into["stopped"] = t.at("stopped");
    for (json r : t.value("results", json::array())) {
      const std::string key = name + " " + r.value("key", std::string());
      if (owner.count(key))
        return "result " + key + " is in part " + std::to_string(owner[key]) + " and in part " +
               std::to_string(p.index) + ": the parts overlap";
      owner[key] = p.index;
      r["shard"] = mark;
      if (!p.host.empty()) r["host"] = p.host;
      relocate(r, outDir, m.copies);
      if (r.contains("observations") && r["observations"].contains("distinct_failures"))
        for (auto& d : r["observations"]["distinct_failures"]) relocate(d, outDir, m.copies);
      into["results"].push_back(r);
    }
  }
  return "";
}

}  // namespace

namespace {
Merged failed(const std::string& why) {
  Merged m;
  m.error = why;
  return m;
}
}  // namespace

Merged mergeParts(const std::vector<std::string>& dirs, const std::string& outDir) {
  Merged m;
  std::vector<Part> parts;
  for (const auto& d : dirs) {
    Part p;
    if (const std::string why = readPart(d, p); !why.empty()) return failed(why);
    if (!parts.empty())
      if (const std::string why = sameRun(parts.front(), p); !why.empty()) return failed(why);
    for (const auto& q : parts)
      if (q.index == p.index)
        return failed("part " + std::to_string(p.index) + " is given twice: " + q.dir + " and " + p.dir);
    parts.push_back(std::move(p));
  }
  if (parts.empty()) return failed("no report folder to merge");
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.index < b.index; });
  std::map<std::string, size_t> at;
  std::map<std::string, int> owner;
  json shards = json::array();
  for (const auto& p : parts) {
    if (const std::string why = addTargets(p, outDir, m, at, owner); !why.empty()) return failed(why);
    shards.push_back({{"index", p.index}, {"dir", p.dir}, {"host", p.host}, {"complete", p.complete}});
    if (!p.complete) m.incomplete.push_back(p.index);
  }
  const int count = parts.front().count;
  std::set<int> present;
  for (const auto& p : parts) present.insert(p.index);
  for (int i = 1; i <= count; ++i)
    if (!present.count(i)) m.missing.push_back(i);
  m.provenance = parts.front().report.value("provenance", json::object());
  m.provenance.erase("shard");
  m.provenance.erase("host");
  m.provenance["report_dir"] = outDir;
  m.provenance["merged"] = {{"count", count}, {"shards", shards}, {"missing", m.missing}};
  return m;
}

}  // namespace flagprop
