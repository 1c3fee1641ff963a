#include "runner/example_db.h"

#include "core/files.h"
#include "core/records.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <tuple>

#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace flagprop {

namespace {

constexpr const char* kSchema = "flagprop.example/1";

// A file-name-safe spelling: letters, digits, '.', '-' kept; the rest '_';
// a long one cut to 100 characters and told apart by a digest of the whole.
std::string safe(const std::string& in) {
  std::string s = in;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  if (s.size() <= 120) return s;
  return s.substr(0, 100) + "-" + hmacSha256Hex(kSchema, in).substr(0, 16);
}

// Whether `ex` is a whole example of run key `key` (and of `target`, when
// given): every field the replay reads, of its type.
bool wellFormed(const json& ex, const std::string& key, const std::string& target) {
  if (!ex.is_object() || ex.value("schema", json()) != kSchema || ex.value("key", json()) != key) return false;
  if (!target.empty() && ex.value("target", json()) != target) return false;
  if (!ex.contains("case") || !ex.at("case").is_object()) return false;
  for (const char* k : {"stored_at", "stored_in", "reason"})
    if (!ex.contains(k) || !ex.at(k).is_string()) return false;
  if (ex.contains("sampler") && !ex.at("sampler").is_string()) return false;
  if (ex.contains("rank") && !ex.at("rank").is_number_integer()) return false;
  return true;
}

std::string utcNow() {
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What names the code under test a stored example was found on: the pin,
// the SHA256s of the files flagprop loaded, and the versions it saw.
json identityOf(const json& doc) {
  const json prov = doc.value("provenance", json::object());
  json id = {{"pin", prov.contains("pin") ? prov.at("pin").value("name", std::string()) : std::string()},
             {"hashes", json::object()}};
  for (auto it = prov.begin(); it != prov.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() > 7 && k.compare(k.size() - 7, 7, "_sha256") == 0) id["hashes"][k] = it.value();
  }
  if (prov.contains("versions")) id["versions"] = prov.at("versions");
  return id;
}

// Writes one example; false when an identical one is stored already.
bool storeOne(const std::string& folder, const json& doc, const json& r, const json& cex, const json& obs,
              const std::string& reason, const std::string& storedIn, int rank) {
  const std::string key = r.value("key", std::string());
  const std::string digest = hmacSha256Hex(kSchema, key + "\n" + cex.dump()).substr(0, 16);
  const std::string path = folder + "/" + safe(key) + "." + digest + ".json";
  try {  // the same example, stored already (a file that is not one is written over)
    if (wellFormed(json::parse(readFile(path, uint64_t(64) << 20)), key, "")) return false;
  } catch (const std::exception&) {
  }
  json ex = {{"schema", kSchema},
             {"target", doc.value("name", std::string())},
             {"device", doc.value("target", json::object()).value("device", std::string("cpu"))},
             {"key", key},
             {"property", r.value("property", std::string())},
             {"status", r.value("status", std::string())},
             {"kind", obs.contains("crash") ? "crash" : "failure"},
             {"kinds", obs.value("kinds", json::array())},
             {"case", cex},
             {"reason", reason.substr(0, 2000)},
             {"stored_at", utcNow()},
             {"stored_in", storedIn},
             {"rank", rank},
             {"identity", identityOf(doc)}};
  if (r.contains("op")) {
    ex["op"] = r.at("op");
    ex["dtype"] = r.value("dtype", std::string());
  }
  if (obs.contains("sampler")) ex["sampler"] = obs.at("sampler");
  if (obs.contains("seed")) ex["seed"] = obs.at("seed");
  writeText(path, jsonText(ex));
  return true;
}

}  // namespace

std::string defaultExampleDb() {
  if (const char* d = std::getenv("FLAGPROP_DB"); d && *d) return std::string(d) == "off" ? "" : d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/flagprop/examples";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/flagprop/examples";
  return "";
}

std::string exampleFolder(const std::string& db, const std::string& target, const std::string& device) {
  return db + "/" + safe(target) + "@" + safe(device.substr(0, device.find(':')));
}

std::vector<json> loadExamples(const std::string& folder, const std::string& key, const std::string& target) {
  std::vector<json> out;
  std::error_code ec;
  const std::string prefix = safe(key) + ".";
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    try {
      json ex = json::parse(readFile(it->path().string(), uint64_t(64) << 20));
      if (!wellFormed(ex, key, target)) continue;
      ex["file"] = it->path().string();
      ex["reason"] = ex.at("reason").get<std::string>().substr(0, 2000);
      out.push_back(std::move(ex));
    } catch (const std::exception&) {  // removed meanwhile, or not an example: not ours to judge
    }
  }
  // Oldest first; of one run's, its first failure before the distinct ones
  // found after it, so that a replay fails the way that run did first.
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    return std::make_tuple(a.value("stored_at", std::string()), a.value("rank", 0), a.value("file", std::string())) <
           std::make_tuple(b.value("stored_at", std::string()), b.value("rank", 0), b.value("file", std::string()));
  });
  return out;
}

int storeExamples(const std::string& db, const json& doc, const std::string& storedIn) {
  if (db.empty() || doc.value("status", std::string()) != "ok") return 0;
  const std::string folder = exampleFolder(db, doc.value("name", std::string("target")),
                                           doc.value("target", json::object()).value("device", std::string("cpu")));
  int stored = 0;
  for (const auto& r : doc.value("results", json::array())) {
    if (!r.is_object()) continue;
    const ResultRecord rec = resultRecord(r);
    const Observations& obs = rec.observations;
    if (!rec.failed() || !rec.counterexample.is_object()) continue;
    if (obs.db && !obs.db->stillFailing.is_null()) continue;
    if (rec.key == "process") continue;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) throw FileError("cannot create the example database folder " + folder + " (" + ec.message() + ")");
    stored += storeOne(folder, doc, r, rec.counterexample, obs.raw, rec.reason, storedIn, 0);
    int rank = 0;
    for (const auto& d : obs.distinctFailures)
      if (!d.counterexample.is_null()) {
        json dobs = d.observations;
        dobs["kinds"] = d.kinds;
        if (!obs.sampler.empty()) dobs["sampler"] = obs.sampler;
        stored += storeOne(folder, doc, r, d.counterexample, dobs, d.reason, storedIn, ++rank);
      }
  }
  return stored;
}

void forgetExample(const std::string& file) {
  if (!file.empty()) ::unlink(file.c_str());  // ENOENT: another run forgot it first
}

}  // namespace flagprop
