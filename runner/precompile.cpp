#include "runner/precompile.h"

#include "core/files.h"
#include "core/python.h"
#include "runner/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <unistd.h>

namespace fs = std::filesystem;

namespace flagprop {

namespace {

// The distinct ops of `cases`, in order.
json opNames(const std::vector<json>& cases) {
  json names = json::array();
  for (const auto& c : cases)
    if (std::find(names.begin(), names.end(), c.at("op")) == names.end()) names.push_back(c.at("op"));
  return names;
}

// One precompile: its scratch folder, its job file, its n workers and what
// they did (`out`, the report's precompile). Worker k's share is cases k,
// k + n, ...; skip[k] of them are done (a worker that died on a call is
// followed by a fresh one from the next).
class PrecompileJob {
 public:
  PrecompileJob(std::vector<json> cases, int n, const PrecompileOptions& opts)
      : cases_(std::move(cases)), n_(n), opts_(opts), skip_(n, 0), restarts_(n, 0), pending_(n, true) {
    out = {{"workers", n},
           {"cases", cases_.size()},
           {"ran", 0},
           {"failed", 0},
           {"compilations", 0},
           {"stopped", json::array()},
           {"errors", json::array()}};
  }
  ~PrecompileJob() {
    try {
      if (!dir_.empty()) removeTree(dir_.string());  // not std::filesystem::remove_all: see removeTree
    } catch (const std::exception&) {
    }
  }

  // Writes the job file for `session`; throws std::runtime_error / FileError.
  void prepare(const TargetSession& session) {
    std::string scratch = (fs::temp_directory_path() / "flagprop-precompile-XXXXXX").string();
    if (!mkdtemp(scratch.data()))
      throw std::runtime_error("cannot make a folder in " + fs::temp_directory_path().string());
    dir_ = scratch;
    job_ = (dir_ / "job.json").string();
    writeText(job_, json{{"target", session.targetJson()},
                         {"gates", toJson(session.target().defaultGates())},
                         {"op_names", opNames(cases_)},
                         {"cases", cases_}}
                        .dump());
    for (const auto& f : pythonFolders()) pythonPath_ += (pythonPath_.empty() ? "" : ":") + fs::absolute(f).string();
    if (const char* p = std::getenv("PYTHONPATH"); p && *p) pythonPath_ += std::string(":") + p;
    for (int k = 0; k < n_; ++k) captures_.push_back((dir_ / ("worker-" + std::to_string(k) + ".txt")).string());
  }

  // Runs the workers, a fresh one after each that died on a call, until
  // every share is done or the time is up.
  void run() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts_.totalSeconds);
    for (int round = 0; round <= kPrecompileRestarts; ++round) {
      std::vector<int> who;
      std::vector<ChildSpec> specs;
      for (int k = 0; k < n_; ++k) {
        if (!pending_[k]) continue;
        ::unlink((base(k) + ".json.inflight").c_str());
        who.push_back(k);
        specs.push_back(spec(k));
      }
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now()).count());
      if (specs.empty() || left <= 0) break;
      const std::vector<ChildResult> results = runChildren(specs, left);
      for (size_t j = 0; j < who.size(); ++j) take(who[j], results[j]);
    }
    const json printed = capturedOutput(captures_, 10);
    if (printed.value("lines", 0) > 0) out["output"] = printed;
  }

  json out;

 private:
  std::string base(int k) const { return (dir_ / ("worker-" + std::to_string(k))).string(); }

  ChildSpec spec(int k) const {
    return {{FLAGPROP_PYTHON_EXE, "-m", "flagprop.engine.precompile", job_, std::to_string(k), std::to_string(n_),
             base(k) + ".json", std::to_string(skip_[k])},
            captures_[k],
            {"PYTHONPATH=" + pythonPath_, "FLAGPROP_PRECOMPILE_WORKER=" + std::to_string(k),
             "FLAGPROP_PRECOMPILE_PARENT=" + std::to_string(getpid())},
            CaseWatch{base(k) + ".json.inflight", opts_.caseSeconds},
            false,
            true};
  }

  // What worker k did, from its file (it finished) or its in-flight record
  // (it died, hung or was stopped on a call).
  void take(int k, const ChildResult& r) {
    pending_[k] = false;
    json w;
    try {
      w = json::parse(readFile(base(k) + ".json"));
    } catch (const std::exception&) {
    }
    if (w.is_object() && r.exitCode == 0 && !r.signal && !r.timedOut && !r.stopped) {
      for (const char* f : {"ran", "failed", "compilations"}) out[f] = out[f].get<int>() + w.value(f, 0);
      for (const auto& e : w.value("errors", json::array()))
        if (out["errors"].size() < 5) out["errors"].push_back(e);
      return;
    }
    json fly;  // the call it was on, and its counts before that call
    try {
      fly = json::parse(readFile(base(k) + ".json.inflight"));
    } catch (const std::exception&) {
    }
    std::string why = r.stopped        ? "stopped with the run"
                      : r.caseTimedOut ? "stopped: one call ran longer than " + std::to_string(opts_.caseSeconds) + " s"
                      : r.timedOut     ? "stopped after " + std::to_string(opts_.totalSeconds) + " s"
                      : r.signal       ? "died with signal " + std::to_string(r.signal)
                                       : "exited with code " + std::to_string(r.exitCode);
    if (fly.is_object()) why += onCall(k, r, fly);
    out["stopped"].push_back("worker " + std::to_string(k) + " " + why);
  }

  // The call worker k stopped on, counted as failed; a crash or a hang on
  // one call has a fresh worker go on from the next. What to add to the why.
  std::string onCall(int k, const ChildResult& r, const json& fly) {
    out["ran"] = out["ran"].get<int>() + fly.value("ran", 0);
    out["failed"] = out["failed"].get<int>() + fly.value("failed", 0) + 1;  // the call it died on
    const json& c = fly.value("case", json::object());
    std::string why =
        " on " + c.value("op", std::string("?")) + " (call " + std::to_string(fly.value("i", 0)) + " of its share)";
    const int next = fly.value("i", 0) + 1;
    const int share = (static_cast<int>(cases_.size()) - k + n_ - 1) / n_;
    if ((r.signal || r.caseTimedOut || r.exitCode != 0) && !r.stopped && !(r.timedOut && !r.caseTimedOut) &&
        next < share && restarts_[k] < kPrecompileRestarts) {
      skip_[k] = next;
      ++restarts_[k];
      pending_[k] = true;
      why += "; a fresh worker went on";
    }
    return why;
  }

  const std::vector<json> cases_;
  const int n_;
  const PrecompileOptions& opts_;
  std::vector<int> skip_, restarts_;
  std::vector<bool> pending_;
  std::vector<std::string> captures_;
  fs::path dir_;
  std::string job_, pythonPath_;
};

}  // namespace

json precompile(const TargetSession& session, const std::vector<PropertyRun>& runs, const PrecompileOptions& opts) {
  if (opts.workers <= 0) return nullptr;
  std::vector<json> cases;
  try {
    cases = precompileCases(session.target(), runs, opts.run);
  } catch (const std::exception&) {
    return nullptr;
  }
  if (cases.empty()) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  // At most one worker per call and per core of the host (each imports torch and compiles).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int n = std::min({opts.workers, static_cast<int>(cases.size()), cores});
  json out;
  {
    PrecompileJob job(std::move(cases), n, opts);
    try {
      job.prepare(session);
      job.run();
    } catch (const std::exception& e) {
      job.out["stopped"].push_back(std::string("the workers could not start: ") + e.what());
    }
    out = job.out;
  }  // the scratch folder is removed
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace flagprop
