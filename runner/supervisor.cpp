#include "runner/supervisor.h"

#include "core/files.h"
#include "suites/registry.h"

#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace flagprop {

namespace fs = std::filesystem;

std::vector<std::string> cacheEnv(const std::string& tritonCache) {
  if (tritonCache.empty()) return {};
  std::vector<std::string> e{"TRITON_CACHE_DIR=" + tritonCache};
  if (const char* own = std::getenv("FLAGGEMS_CACHE_DIR"); !own || !*own)
    e.push_back("FLAGGEMS_CACHE_DIR=" + (std::filesystem::path(tritonCache) / "flaggems").string());
  return e;
}
using json = nlohmann::json;

namespace {

std::string bounded(std::string s, size_t n) { return s.size() > n ? s.substr(0, n) : s; }

// The command line of a target process for `manifest` under `opts`: its
// plumbing, then the run's options as the option table passes them
// (SupervisorOptions::optionArgs).
std::vector<std::string> childArgs(const SupervisorOptions& opts, const std::string& manifest, const std::string& out,
                                   const std::string& repro) {
  const TargetRunOptions& t = opts.target;
  std::vector<std::string> a = {opts.self,     "run-target", "--manifest",   manifest,
                                "--out",       out,          "--console-fd", "3",
                                "--key-fd",    "4",          "--parent",     std::to_string(getpid()),
                                "--repro-dir", repro};
  if (!opts.quiet && isatty(STDOUT_FILENO)) a.push_back("--progress");
  if (!t.claimDir.empty())
    a.insert(a.end(),
             {"--claim-dir", t.claimDir, "--job", std::to_string(t.shardIndex) + "/" + std::to_string(t.shardCount)});
  if (opts.optionArgs) {
    const auto more = opts.optionArgs(opts);
    a.insert(a.end(), more.begin(), more.end());
  }
  return a;
}

// The run keys a target process is launched for under `sel` (plannedKeys on
// the manifest), or nullopt when the manifest cannot be planned (the target
// process reports why). Not from several threads at once: the catalog's
// schema-derived entries are built on first use.
std::optional<std::vector<std::string>> planOf(const std::string& manifest, const Selection& sel) {
  try {
    return plannedKeys(loadTarget(manifest), sel);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Puts doc.results in the order of `keys` (run keys); others, "process"
// among them, after those, in their own order.
void keepOrder(json& doc, const std::vector<std::string>& keys) {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < keys.size(); ++i) at.emplace(keys[i], i);
  std::vector<json> rs = doc.value("results", json::array()).get<std::vector<json>>();
  std::stable_sort(rs.begin(), rs.end(), [&](const json& a, const json& b) {
    const auto i = at.find(a.value("key", std::string())), j = at.find(b.value("key", std::string()));
    return (i == at.end() ? keys.size() : i->second) < (j == at.end() ? keys.size() : j->second);
  });
  doc["results"] = rs;
}

void dropProcessResult(json& doc) {
  auto& results = doc["results"];
  if (!results.empty() && results.back().value("key", "") == "process") results.erase(results.end() - 1);
}

// A key of 64 hex digits from std::random_device.
std::string freshKey() {
  std::random_device rd;
  char hex[65];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 8 * i, 9, "%08x", static_cast<unsigned>(rd()));
  return std::string(hex, 64);
}

// One target in child processes, one after another: the first, then a
// fresh one after each crash in a case, lost device or flaky result.
class TargetProcesses {
 public:
  TargetProcesses(const SupervisorOptions& opts, const Target& t, const std::string& manifest, const std::string& out,
                  const std::string& reproDir, const std::optional<std::vector<std::string>>& plan,
                  std::vector<std::string> env)
      : opts_(opts),
        target_(t),
        manifest_(manifest),
        out_(out),
        reproDir_(reproDir),
        plannable_(plan.has_value()),
        planned_(plan.value_or(std::vector<std::string>{})),
        env_(std::move(env)) {}
  TargetProcesses(const TargetProcesses&) = delete;
  TargetProcesses& operator=(const TargetProcesses&) = delete;
  ~TargetProcesses() {
    if (inflightFd_ >= 0) ::close(inflightFd_);
  }

  json run() {
    std::vector<std::string> args = childArgs(opts_, manifest_, out_, reproDir_);
    for (int restart = 0;; ++restart) {
      removeScratch();
      keepInflight();
      const int left = secondsLeft();
      if (budgeted() && left <= 0) return stopped(budgetWhy(), false);  // nothing started: the budget is spent
      const bool budgetLimits = budgeted() && left < opts_.timeoutSeconds;
      const ChildResult r = runOne(args, budgetLimits ? left : opts_.timeoutSeconds);
      if (r.stopped) return stopped("the run was interrupted; the runs left did not run", true);
      // The budget, not a hang (a case past --case-timeout is a hang whatever the budget).
      if (budgetLimits && r.timedOut && !r.caseTimedOut) return stopped(budgetWhy(), true);
      if (!opts_.quiet && isatty(STDOUT_FILENO)) std::cout << "\r\033[K" << std::flush;  // the child's progress line
      json doc = collectChildDocument(out_, manifest_, r, opts_.timeoutSeconds, key_);
      doc["captured_output"] = capturedOutput(capturePath(out_));
      if (!crashes_.empty()) doc["crashes"] = crashes_;
      const bool again = restart < kMaxRestarts;
      if (!doc.contains("crash")) {
        removeScratch();
        if (again && wantsFreshProcess(doc)) {
          resumeAfter(doc, args);
          continue;
        }
        return finished(std::move(doc));
      }
      if (r.exitCode == kDeviceLostExit && !r.signal && !r.timedOut && doc.value("status", "") == "ok" && again) {
        doc.erase("crash");  // the lost device's result is recorded: a fresh process (and context) goes on
        resumeAfter(doc, args);
        continue;
      }
      if (!recordCrash(doc, again, r)) return doc;
      args = resumeArgs();
    }
  }

 private:
  bool budgeted() const { return opts_.budgetEnd != std::chrono::steady_clock::time_point::max(); }
  int secondsLeft() const {
    if (!budgeted()) return 0;
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(opts_.budgetEnd - std::chrono::steady_clock::now()).count());
  }
  std::string budgetWhy() const {
    return "the run's --budget of " + std::to_string(opts_.budgetSeconds) + " s ran out; the runs left did not run";
  }
  std::string inflight() const { return out_ + ".inflight"; }
  std::string stage() const { return out_ + ".stage"; }
  void removeScratch() const {
    std::error_code ec;
    fs::remove(inflight(), ec);
    fs::remove(stage(), ec);
  }
  // The in-flight record made (empty) before the child starts, and held
  // open here: the child writes it in place (overwriteFile keeps its
  // inode), so an op that unlinks it and then crashes does not take the
  // case with it (readInflight reads it through this descriptor).
  void keepInflight() {
    if (inflightFd_ >= 0) ::close(inflightFd_);
    inflightFd_ = ::open(inflight().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  // The in-flight record: by its path, else (unlinked) through the
  // descriptor keepInflight holds; "" when neither has it.
  std::string readInflight() const {
    try {
      return readFile(inflight());
    } catch (const std::exception&) {
    }
    std::string text;
    if (inflightFd_ < 0 || ::lseek(inflightFd_, 0, SEEK_SET) < 0) return text;
    char buf[4096];
    for (ssize_t n; (n = ::read(inflightFd_, buf, sizeof buf)) > 0 && text.size() < (size_t(1) << 24);)
      text.append(buf, static_cast<size_t>(n));
    return text;
  }
  int inflightFd_ = -1;
  // A fresh process for the runs left: the document so far is its --resume.
  std::vector<std::string> resumeArgs() const {
    auto a = childArgs(opts_, manifest_, out_, reproDir_);
    a.insert(a.end(), {"--resume", out_});
    return a;
  }

  ChildResult runOne(std::vector<std::string> a, int limit) const {
    if (opts_.target.precompileWorkers > 0)  // the process's own limit: its workers get a quarter of it
      a.insert(a.end(), {"--timeout", std::to_string(limit)});
    ChildSpec spec{a, capturePath(out_), env_,
                   CaseWatch{inflight(), opts_.caseTimeoutSeconds, stage(),
                             std::min(kReferenceStageSeconds, opts_.caseTimeoutSeconds)}};
    spec.ownGroup = true;  // what the code under test leaves running in its group ends with it
    spec.secret = key_;    // through a pipe: neither the environment nor the command line holds it
    return runChildren({spec}, limit).at(0);
  }

  // A target stopped from outside (the budget ran out, Ctrl-C): what it
  // wrote is kept, the runs left are "not run", the case in flight is no finding.
  json stopped(const std::string& why, bool started) const {
    json doc = {{"name", fs::path(manifest_).stem().string()},
                {"manifest", manifest_},
                {"status", "error"},
                {"error", "stopped before the target wrote its document: " + why},
                {"results", json::array()}};
    bool wrote = false;
    try {
      json read = json::parse(readFile(out_));
      if ((wrote = takeDocumentMac(read, key_))) doc = read;
    } catch (const std::exception&) {
    }
    if (!wrote) {  // nothing of it was judged: not run, no target error
      doc["error"] = (started ? "stopped before it judged a run: " : "not run: ") + why;
      doc["not_run"] = true;
    }
    doc["stopped"] = why;
    if (!doc.contains("provenance")) doc["provenance"] = json::object();
    if (started) doc["captured_output"] = capturedOutput(capturePath(out_));
    if (!crashes_.empty()) doc["crashes"] = crashes_;
    removeScratch();
    return doc;
  }

  // Flaky from judgings in the process that found it: once more, first in
  // a fresh process (a fault of every first call fails there too).
  bool wantsFreshProcess(const json& doc) const {
    if (doc.value("status", "") != "ok") return false;
    const auto& rs = doc.value("results", json::array());
    return std::any_of(rs.begin(), rs.end(), [](const json& r) { return wantsFreshJudging(r); });
  }

  void resumeAfter(json& doc, std::vector<std::string>& args) {
    dropProcessResult(doc);
    for (const auto& r : doc["results"]) {  // the order so far, the keys seen first kept where they were
      const std::string k = r.value("key", std::string());
      if (std::find(orderBefore_.begin(), orderBefore_.end(), k) == orderBefore_.end()) orderBefore_.push_back(k);
    }
    writeTargetDocument(out_, doc, key_);
    args = resumeArgs();
  }

  json finished(json doc) const {
    if (!orderBefore_.empty()) keepOrder(doc, orderBefore_);  // the results judged again where they were
    if (plannable_ && doc.value("status", "") == "ok" && !checkAgainstPlan(doc, planned_))
      std::cout << "\n[" << doc.value("name", "?") << "] the target document does not hold the runs its process "
                << "was launched for (" << doc["plan_mismatch"]["missing"].size() << " missing, "
                << doc["plan_mismatch"]["unexpected"].size() << " not launched): each missing one is an error"
                << std::endl;
    return doc;
  }

  // The case in flight when a process died, as a result (crashOutcome), or
  // nullopt when it died outside a case of the runs it was launched for.
  std::optional<PropertyOutcome> caseInFlight(const json& doc, const std::string& why) const {
    json fly;
    try {
      fly = json::parse(readInflight());
    } catch (const std::exception&) {
    }
    if (!fly.is_object() || doc.value("status", "") != "ok") return std::nullopt;
    try {
      PropertyOutcome o = crashOutcome(fly, why, target_);
      if (plannable_ && std::find(planned_.begin(), planned_.end(), o.key()) == planned_.end()) return std::nullopt;
      return o;
    } catch (const std::invalid_argument&) {  // a record the code under test wrote: no run of this target
      return std::nullopt;
    }
  }

  // A process that died: its case recorded with its reproducer and true (a
  // fresh process goes on), or false with `doc` the target's final document.
  // Results of `doc` that are runs (not the "process" record).
  static size_t runResults(const json& doc) {
    size_t n = 0;
    for (const auto& r : doc.value("results", json::array())) n += r.value("key", std::string()) != "process";
    return n;
  }

  // A death outside a case (CPU ATen's heap corruption noticed at a later
  // allocation): when the process had judged runs since it started, a fresh
  // process goes on with the runs left, the death listed among the crashes
  // ("between cases"); one that judged nothing is not restarted (it would
  // die the same way again).
  bool restartAfterDeathBetweenCases(json& doc, const std::string& why) {
    const size_t judged = runResults(doc);
    if (doc.value("status", "") != "ok" || judged <= resultsAtStart_) return false;
    dropProcessResult(doc);
    crashes_.push_back({{"key", "between cases"}, {"why", why}});
    doc["crashes"] = crashes_;
    doc.erase("crash");
    writeTargetDocument(out_, doc, key_);
    resultsAtStart_ = judged;
    std::cout << "\n[" << doc.value("name", "?") << "] " << why
              << " between cases; a fresh process goes on with the runs left" << std::endl;
    return true;
  }

  bool recordCrash(json& doc, bool again, const ChildResult& r) {
    const std::string why = doc["crash"].get<std::string>();
    std::optional<PropertyOutcome> inCase = caseInFlight(doc, why);
    if (!inCase && again && restartAfterDeathBetweenCases(doc, why)) return true;
    if (!inCase || !again) {
      std::cout << "\n[" << doc.value("name", "?") << "] " << why
                << (!inCase ? " outside a case" : "; " + std::to_string(kMaxRestarts) + " restarts already")
                << "; results written before that are kept" << std::endl;
      if (plannable_ && doc.value("status", "") == "ok")  // the runs it did not reach are errors, not absent
        checkAgainstPlan(doc, planned_,
                         "not run: the target process " + why +
                             " outside a case (or its in-flight "
                             "record did not name a run it was launched for) before reaching it");
      return false;
    }
    PropertyOutcome& o = *inCase;
    o.observations["limit_s"] = std::min(opts_.timeoutSeconds, 120);  // the reproducer's time limit
    const std::string inStage = readStage(stage());
    if (inStage == "reference") {  // CPU ATen died, not the op under test: nothing judged
      o.status = "skip";
      o.reason =
          "health: CPU ATen (the reference) ended the process (" + why + ") on a generated case; the op was not judged";
      o.observations["crash_in"] = "reference";
    } else if (inStage == "control") {  // the stock path (FlagGems off) died or hung: no finding of the op's
      o.status = "skip";
      o.reason = "health: the stock path (the control: FlagGems off) ended the process (" + why +
                 ") on a generated case, before the op ran; the op was not judged";
      o.observations["crash_in"] = "control";
    } else if (r.stillCompiling) {
      // Still compiling or autotuning at twice its limit (16 processes
      // compiling at once slow each other): slow, not hung; nothing judged.
      o.status = "skip";
      o.reason = "health: the op ran past twice --case-timeout (" + std::to_string(opts_.caseTimeoutSeconds) +
                 " s) on a generated case while Triton was still compiling its kernels or autotuning them (a " +
                 "compilation or an autotuner's benchmark ended in the last " +
                 std::to_string(stillCompilingWindow(opts_.caseTimeoutSeconds)) +
                 " s): a slow compile or autotune, not a hang; the op was not judged (run it alone, or with a " +
                 "longer --case-timeout)";
      o.observations["crash_in"] = "compiling";
    }
    dropProcessResult(doc);
    json rj = o.toJson();
    try {
      if (o.status == "fail" && opts_.writeReproducer)
        rj["reproducer"] =
            opts_.writeReproducer(reproDir_, doc.at("target"), doc.value("provenance", json::object()), o);
    } catch (const std::exception& e) {
      rj["reproducer_error"] = e.what();
    }
    // A run's earlier result (its first pass, when the second pass died) gives way to the crash.
    auto& rs = doc["results"];
    for (auto it = rs.begin(); it != rs.end();)
      it = it->value("key", std::string()) == rj.value("key", std::string()) ? rs.erase(it) : it + 1;
    doc["results"].push_back(rj);
    resultsAtStart_ = runResults(doc);
    crashes_.push_back({{"key", o.key()}, {"why", why}});
    doc["crashes"] = crashes_;
    doc.erase("crash");
    writeTargetDocument(out_, doc, key_);
    if (opts_.verbose)  // else the target's line says how many times (printTargetResult)
      std::cout << "\n[" << doc.value("name", "?") << "] " << o.key() << " ... " << o.status << ": " << o.reason
                << "; a fresh process goes on" << std::endl;
    return true;
  }

  const SupervisorOptions& opts_;
  const Target& target_;
  const std::string manifest_, out_, reproDir_;
  const bool plannable_;                    // the run keys it is launched for are known
  const std::vector<std::string> planned_;  // from the manifest and the catalog alone
  const std::vector<std::string> env_;
  // The key the target process authenticates its document with.
  const std::string key_ = freshKey();
  json crashes_ = json::array();
  size_t resultsAtStart_ = 0;             // run results when the current process started (after a crash)
  std::vector<std::string> orderBefore_;  // the run keys in order, once a fresh process judges results again
};

// Merges the documents of a target's shards (each ran some of its ops) into
// one: the first shard's fields, every shard's results, crashes and what was
// left running (superviseTarget counts their captured output together).
void mergePrecompile(json& p, const json& q) {
  for (const char* f : {"workers", "cases", "ran", "failed", "compilations"}) p[f] = p.value(f, 0) + q.value(f, 0);
  p["seconds"] = std::max(p.value("seconds", 0.0), q.value("seconds", 0.0));  // the shards ran at once
  for (const auto& x : q.value("stopped", json::array())) p["stopped"].push_back(x);
  for (const auto& x : q.value("errors", json::array()))
    if (p["errors"].size() < 5) p["errors"].push_back(x);
  p.erase("output");  // one shard's; what the workers printed is per process
}

json mergeShards(std::vector<json> shards) {
  json doc = shards.at(0);
  if (shards.size() == 1) return doc;
  for (size_t i = 1; i < shards.size(); ++i) {
    const json& s = shards[i];
    if (s.value("status", "") != "ok" && doc.value("status", "") == "ok") {
      doc["status"] = s.at("status");
      doc["error"] = s.value("error", std::string());
    }
    for (const auto& r : s.value("results", json::array())) doc["results"].push_back(r);
    for (const char* k : {"crashes", "left_running"})
      for (const auto& x : s.value(k, json::array())) doc[k].push_back(x);
    if (s.contains("precompile")) {  // each shard's workers compiled its own ops' examples and palettes
      if (!doc.contains("precompile"))
        doc["precompile"] = s.at("precompile");
      else
        mergePrecompile(doc["precompile"], s.at("precompile"));
    }
    if (s.contains("crash")) doc["crash"] = s.at("crash");
    if (s.contains("stopped")) doc["stopped"] = s.at("stopped");
  }
  doc["shards"] = shards.size();
  return doc;
}

// The environment of shard `i`: the caches, and its device of --devices.
std::vector<std::string> shardEnv(const SupervisorOptions& opts, size_t i) {
  std::vector<std::string> e;
  e = cacheEnv(opts.tritonCache);
  if (!opts.devices.empty()) {
    // Index N is the N-th GPU this process sees: an entry of an already
    // narrowed list (a Slurm allocation), as matrix/ctest_device.sh maps it.
    const size_t n = std::stoul(opts.devices[i % opts.devices.size()]);
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}) {
      const char* vis = std::getenv(var);
      e.push_back(std::string(var) + "=" + (vis ? visibleDevices(vis).at(n) : std::to_string(n)));
    }
  }
  return e;
}

// Whether run key or property id `key` (P5, P5/OP/DTYPE) names an op property.
bool isOpScoped(const std::string& key) {
  const PropertyDef* d = findProperty(key.substr(0, key.find('/')));
  return d && d->scope == PropertyDef::Scope::Op;
}

// The options of shard k of `jobs`: every shard plans the selection's ops
// and claims them one by one in `claims` (TargetRunOptions::claimDir); the
// installer properties run in the first shard only.
SupervisorOptions shardOptions(const SupervisorOptions& opts, const Target& t, const std::string& claims, size_t k,
                               size_t jobs) {
  SupervisorOptions shard = opts;
  Selection& sel = shard.target.selection;
  shard.target.claimDir = claims;
  shard.target.shardIndex = static_cast<int>(k);
  shard.target.shardCount = static_cast<int>(jobs);
  if (k == 0 && sel.properties.empty()) sel.properties = targetProperties(t);  // named, so that --op does not drop them
  if (k > 0) {  // the op properties only (of the selection's, where it names any)
    std::vector<std::string> ops;
    for (const auto& key : sel.properties.empty() ? targetProperties(t) : sel.properties)
      if (isOpScoped(key)) ops.push_back(key);
    sel.properties = ops;
    shard.quiet = true;  // one progress line: the first shard's
  }
  if (opts.target.precompileWorkers > 0) {  // --precompile N is the target's: N workers over all its processes
    const size_t n = static_cast<size_t>(opts.target.precompileWorkers);
    shard.target.precompileWorkers = static_cast<int>(std::max<size_t>(1, n / jobs + (k < n % jobs ? 1 : 0)));
  }
  return shard;
}

}  // namespace

std::string capturePath(const std::string& out) { return out.substr(0, out.size() - 5) + ".output.txt"; }

std::vector<std::string> visibleDevices(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream ss(value);
  for (std::string d; std::getline(ss, d, ',');) {
    d.erase(0, d.find_first_not_of(" \t"));
    d.erase(d.find_last_not_of(" \t") + 1);
    if (d.rfind("-1", 0) == 0) break;
    if (!d.empty()) out.push_back(d);
  }
  return out;
}

namespace {

// The op of run key "P5/OP/DTYPE", or "" for an installer property's key.
std::string opOfKey(const std::string& key) {
  const auto a = key.find('/');
  if (a == std::string::npos) return "";
  const auto b = key.rfind('/');
  return key.substr(a + 1, b - a - 1);
}

// Copies every file a kept result names (its reproducer, the FlagGems-off
// one, each distinct failure's, a plot) into `reproDir`, the result then
// naming the copy; a file that cannot be copied stays named where it is.
void copyNamedFiles(json& value, const std::string& reproDir) {
  if (value.is_object() || value.is_array()) {
    for (auto& v : value) copyNamedFiles(v, reproDir);
    return;
  }
  if (!value.is_string()) return;
  const std::string s = value.get<std::string>();
  if (s.empty() || s[0] != '/' || s.size() > 4096 || s.find('\n') != std::string::npos) return;
  std::error_code ec;
  const fs::path src(s);
  if (!fs::is_regular_file(src, ec) || src.parent_path() == fs::path(reproDir)) return;
  fs::create_directories(reproDir, ec);
  const fs::path dst = fs::path(reproDir) / src.filename();
  if (fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec) && !ec) value = dst.string();
}

json superviseFresh(const SupervisorOptions& opts, const Target& t, const std::string& manifest, const std::string& out,
                    const std::string& reproDir);

json continueTarget(const SupervisorOptions& opts, const Target& t, const std::string& manifest, const std::string& out,
                    const std::string& reproDir, const json& earlier) {
  Continuation c;
  try {
    c = continuation(t, opts.target.selection, earlier);
  } catch (const std::exception&) {  // cannot be planned: the target process says why
    return superviseFresh(opts, t, manifest, out, reproDir);
  }
  for (auto& r : c.kept) copyNamedFiles(r, reproDir);
  json doc;
  if (c.ops.empty() && !c.installer) {  // nothing left: the earlier document, without what stopped it
    doc = earlier;
    doc.erase("stopped");
    doc.erase("crash");
    doc["expect"] = t.expect;  // the manifest's, as a target process writes it (a report holds another form)
    doc["results"] = json::array();
  } else {
    SupervisorOptions rest = opts;
    rest.continued = nullptr;
    Selection& sel = rest.target.selection;
    // The properties of one scope: the selection's (a run key names its
    // property first) where it names any, else the target's.
    auto ofScope = [&](PropertyDef::Scope scope) {
      std::vector<std::string> ids;
      for (const auto& k : sel.properties.empty() ? targetProperties(t) : sel.properties)
        if (const PropertyDef* d = findProperty(k.substr(0, k.find('/'))); d && d->scope == scope) ids.push_back(k);
      return ids;
    };
    if (c.ops.empty()) {  // the installer properties only, in one process
      sel.properties = ofScope(PropertyDef::Scope::Installer);
      rest.jobs = 1;
    } else {
      sel.ops = c.ops;
      // Named, so that --op does not drop the installer ones (or, all
      // present, so that they do not run again).
      sel.properties = c.installer ? (sel.properties.empty() ? targetProperties(t) : sel.properties)
                                   : ofScope(PropertyDef::Scope::Op);
    }
    doc = superviseFresh(rest, t, manifest, out, reproDir);
  }
  const size_t ran = doc.value("results", json::array()).size();
  const json before = earlier.value("provenance", json::object()).value("versions", json::object());
  const json now = doc.value("provenance", json::object()).value("versions", json::object());
  const bool otherVersions = ran > 0 && !before.empty() && !now.empty() && before != now;
  if (otherVersions) {  // never merged: the earlier results stay in their own report
    c.kept = json::array();
    doc["status"] = "error";
    doc["error"] = "--continue " + opts.continuedFrom + ": its results for this target came from other versions (" +
                   before.dump() + ") than this run's (" + now.dump() + "); they are not merged: run it afresh";
  }
  json results = c.kept;
  for (const auto& r : doc.value("results", json::array())) results.push_back(r);
  doc["results"] = results;
  doc["continued"] = {{"from", opts.continuedFrom}, {"kept", c.kept.size()}, {"ran", ran}};
  writeText(out, jsonText(doc));
  return doc;
}

}  // namespace

const json* continuedDocument(const SupervisorOptions& opts, const Target& t, const std::string& manifest) {
  if (!opts.continued.is_array()) return nullptr;
  std::error_code ec;
  const fs::path mine = fs::weakly_canonical(manifest, ec);
  const json* byName = nullptr;
  int named = 0;
  for (const auto& d : opts.continued) {
    const std::string m = d.value("manifest", std::string());
    if (!m.empty() && fs::weakly_canonical(m, ec) == mine && d.value("name", std::string()) == t.name) return &d;
    if (d.value("name", std::string()) == t.name) byName = &d, ++named;
  }
  return named == 1 ? byName : nullptr;  // a name two manifests share says nothing
}

Continuation continuation(const Target& t, const Selection& sel, const json& earlier) {
  // An error result is not a run done: a run a process never reached ("not
  // run: ...", "no result: ...") and a harness error run again.
  std::set<std::string> have;
  for (const auto& r : earlier.value("results", json::array()))
    if (r.value("status", std::string()) != "error") have.insert(r.value("key", std::string()));
  std::map<std::string, bool> whole;  // op -> every planned key present
  std::vector<std::string> order;
  std::set<std::string> plannedInstaller;
  Continuation c;
  for (const auto& key : plannedKeys(t, sel)) {
    const std::string op = opOfKey(key);
    if (op.empty()) {
      plannedInstaller.insert(key);
      c.installer |= have.count(key) == 0;
      continue;
    }
    if (!whole.count(op)) order.push_back(op);
    auto [it, fresh] = whole.emplace(op, true);
    it->second = it->second && have.count(key) > 0;
  }
  std::set<std::string> keptOps;
  for (const auto& op : order) {
    if (whole.at(op))
      keptOps.insert(op);
    else
      c.ops.push_back(op);
  }
  // Kept: the ops kept whole, the installer results when none is left to
  // run, and what this run does not plan at all (--op / --property narrow
  // what runs, not what the report holds).
  for (const auto& r : earlier.value("results", json::array())) {
    const std::string key = r.value("key", std::string());
    const std::string op = opOfKey(key);
    if (key == "process") continue;
    const bool planned = op.empty() ? plannedInstaller.count(key) > 0 : whole.count(op) > 0;
    if (!planned || (op.empty() ? !c.installer : keptOps.count(op) > 0)) c.kept.push_back(r);
  }
  return c;
}

// One target in --jobs processes at once, its ops dealt round robin (the
// installer properties in the first), each process on the next of
// --devices (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES); Triton's cache
// is shared, so a specialization one process compiled is found by the
// others. A target without op runs, or --jobs 1, is one process.
json superviseTarget(const SupervisorOptions& opts, const Target& t, const std::string& manifest,
                     const std::string& out, const std::string& reproDir) {
  if (const json* earlier = continuedDocument(opts, t, manifest))
    return continueTarget(opts, t, manifest, out, reproDir, *earlier);
  return superviseFresh(opts, t, manifest, out, reproDir);
}

namespace {

json superviseFresh(const SupervisorOptions& opts, const Target& t, const std::string& manifest, const std::string& out,
                    const std::string& reproDir) {
  std::vector<std::string> ops = targetOpNames(t);
  const auto& only = opts.target.selection.ops;
  if (!only.empty())
    ops.erase(
        std::remove_if(ops.begin(), ops.end(),
                       [&](const std::string& o) { return std::find(only.begin(), only.end(), o) == only.end(); }),
        ops.end());
  bool opProps = false;  // an op property runs (of the selection's, where it names any)
  const auto& named = opts.target.selection.properties;
  for (const auto& key : named.empty() ? targetProperties(t) : named) opProps = opProps || isOpScoped(key);
  const size_t jobs = std::min<size_t>(static_cast<size_t>(std::max(opts.jobs, 1)), ops.size());
  if (jobs <= 1 || !opProps)
    return TargetProcesses(opts, t, manifest, out, reproDir, planOf(manifest, opts.target.selection), shardEnv(opts, 0))
        .run();
  std::vector<json> docs(jobs);
  std::vector<SupervisorOptions> shards;
  std::vector<std::string> parts, captures;  // what each process printed, counted together below
  const std::string claims = out.substr(0, out.size() - 5) + ".claims";
  removeTree(claims);  // an earlier run's claims would keep every op from running
  for (size_t k = 0; k < jobs; ++k) {
    shards.push_back(shardOptions(opts, t, claims, k, jobs));
    parts.push_back(out.substr(0, out.size() - 5) + ".shard" + std::to_string(k + 1) + ".json");
    captures.push_back(capturePath(parts.back()));
  }
  // Which shard runs an op is known only once it claims it: the shards are
  // held to the plan together, after the merge; the plan is what the first
  // shard (installer properties and ops) and the others (ops) were launched for.
  auto plan = planOf(manifest, shards[0].target.selection);
  if (const auto rest = planOf(manifest, shards[1].target.selection); plan && rest) {
    std::set<std::string> have(plan->begin(), plan->end());
    for (const auto& key : *rest)
      if (have.insert(key).second) plan->push_back(key);
  } else {
    plan.reset();
  }
  std::vector<std::thread> threads;
  for (size_t k = 0; k < jobs; ++k)
    threads.emplace_back([&, k]() {
      docs[k] = TargetProcesses(shards[k], t, manifest, parts[k], reproDir, std::nullopt, shardEnv(opts, k)).run();
    });
  for (auto& th : threads) th.join();
  removeTree(claims);
  json doc = mergeShards(docs);
  doc["captured_output"] = capturedOutput(captures);
  if (plan) keepOrder(doc, *plan);  // the catalog's order, whichever process ran each op
  if (plan && doc.value("status", "") == "ok" && !doc.contains("stopped")) {
    const std::string why = doc.contains("crash") ? "not run: a target process " + doc["crash"].get<std::string>() +
                                                        " outside a case before reaching it"
                                                  : "";
    if (!checkAgainstPlan(doc, *plan, why))
      std::cout << "\n[" << doc.value("name", "?") << "] the target's processes do not hold the runs they were "
                << "launched for (" << doc["plan_mismatch"]["missing"].size() << " missing, "
                << doc["plan_mismatch"]["unexpected"].size() << " not launched): each missing one is an error"
                << std::endl;
  }
  writeText(out, jsonText(doc));
  return doc;
}

}  // namespace

json endOrphans() {
  json out = json::array();
  for (int round = 0; round < 4096; ++round) {  // a killed one's own children are ours next (a chain: one a round)
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
      std::string stat;
      try {
        stat = readFile(e.path().string() + "/stat", 1 << 16);
      } catch (const std::exception&) {
        continue;
      }
      const auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 1));
      std::string state;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid == getpid()) found.push_back(static_cast<pid_t>(std::stol(name)));
    }
    if (found.empty()) break;
    for (const pid_t pid : found) {
      std::string command;
      try {
        command = readFile("/proc/" + std::to_string(pid) + "/cmdline", 1 << 16);
      } catch (const std::exception&) {
      }
      for (auto& c : command)
        if (c == '\0') c = ' ';
      while (!command.empty() && command.back() == ' ') command.pop_back();
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      if (!command.empty())
        out.push_back({{"kind", "process"}, {"pid", pid}, {"command", bounded(command, 200)}, {"outlived", true}});
    }
  }
  return out;
}

}  // namespace flagprop
