#include "runner/precompile.h"

#include "core/files.h"
#include "core/python.h"
#include "runner/runner.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <unistd.h>

namespace fs = std::filesystem;

namespace flagprop {

json precompile(const TargetSession& session, const std::vector<PropertyRun>& runs, const PrecompileOptions& opts) {
  if (opts.workers <= 0) return nullptr;
  std::vector<json> cases;
  try {
    cases = precompileCases(session.target(), runs);
  } catch (const std::exception&) {
    return nullptr;
  }
  if (cases.empty()) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  // At most one worker per call and per core of the host (each imports torch and compiles).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int n = std::min({opts.workers, static_cast<int>(cases.size()), cores});
  json out = {{"workers", n},
              {"cases", cases.size()},
              {"ran", 0},
              {"failed", 0},
              {"compilations", 0},
              {"stopped", json::array()},
              {"errors", json::array()}};
  fs::path dir;
  const auto remove = [&] {
    try {
      if (!dir.empty()) removeTree(dir.string());  // not std::filesystem::remove_all: see removeTree
    } catch (const std::exception&) {
    }
  };
  try {
    std::string scratch = (fs::temp_directory_path() / "flagprop-precompile-XXXXXX").string();
    if (!mkdtemp(scratch.data()))
      throw std::runtime_error("cannot make a folder in " + fs::temp_directory_path().string());
    dir = scratch;
    const std::string job = (dir / "job.json").string();
    writeText(job, json{{"target", session.targetJson()},
                        {"gates", toJson(session.target().defaultGates())},
                        {"op_names",
                         [&] {
                           json names = json::array();
                           for (const auto& c : cases)
                             if (std::find(names.begin(), names.end(), c.at("op")) == names.end())
                               names.push_back(c.at("op"));
                           return names;
                         }()},
                        {"cases", cases}}
                       .dump());
    std::string pythonPath;
    for (const auto& f : pythonFolders()) pythonPath += (pythonPath.empty() ? "" : ":") + fs::absolute(f).string();
    if (const char* p = std::getenv("PYTHONPATH"); p && *p) pythonPath += std::string(":") + p;
    // Each worker's share is cases k, k + n, ...; `skip[k]` of them are done
    // (a worker that died on a call is followed by a fresh one from the next).
    std::vector<int> skip(n, 0), restarts(n, 0);
    std::vector<bool> pending(n, true);
    std::vector<std::string> captures;
    for (int k = 0; k < n; ++k) captures.push_back((dir / ("worker-" + std::to_string(k) + ".txt")).string());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.totalSeconds);
    for (int round = 0; round <= kPrecompileRestarts; ++round) {
      std::vector<int> who;
      std::vector<ChildSpec> specs;
      for (int k = 0; k < n; ++k) {
        if (!pending[k]) continue;
        const std::string base = (dir / ("worker-" + std::to_string(k))).string();
        ::unlink((base + ".json.inflight").c_str());
        who.push_back(k);
        specs.push_back({{FLAGPROP_PYTHON_EXE, "-m", "flagprop.engine.precompile", job, std::to_string(k),
                          std::to_string(n), base + ".json", std::to_string(skip[k])},
                         captures[k],
                         {"PYTHONPATH=" + pythonPath, "FLAGPROP_PRECOMPILE_WORKER=" + std::to_string(k),
                          "FLAGPROP_PRECOMPILE_PARENT=" + std::to_string(getpid())},
                         CaseWatch{base + ".json.inflight", opts.caseSeconds},
                         false,
                         true});
      }
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now()).count());
      if (specs.empty() || left <= 0) break;
      const std::vector<ChildResult> results = runChildren(specs, left);
      for (size_t j = 0; j < who.size(); ++j) {
        const int k = who[j];
        const std::string base = (dir / ("worker-" + std::to_string(k))).string();
        const ChildResult& r = results[j];
        pending[k] = false;
        json w;
        try {
          w = json::parse(readFile(base + ".json"));
        } catch (const std::exception&) {
        }
        if (w.is_object() && r.exitCode == 0 && !r.signal && !r.timedOut && !r.stopped) {
          for (const char* f : {"ran", "failed", "compilations"}) out[f] = out[f].get<int>() + w.value(f, 0);
          for (const auto& e : w.value("errors", json::array()))
            if (out["errors"].size() < 5) out["errors"].push_back(e);
          continue;
        }
        json fly;  // the call it was on, and its counts before that call
        try {
          fly = json::parse(readFile(base + ".json.inflight"));
        } catch (const std::exception&) {
        }
        std::string why = r.stopped ? "stopped with the run"
                          : r.caseTimedOut
                              ? "stopped: one call ran longer than " + std::to_string(opts.caseSeconds) + " s"
                          : r.timedOut ? "stopped after " + std::to_string(opts.totalSeconds) + " s"
                          : r.signal   ? "died with signal " + std::to_string(r.signal)
                                       : "exited with code " + std::to_string(r.exitCode);
        if (fly.is_object()) {
          out["ran"] = out["ran"].get<int>() + fly.value("ran", 0);
          out["failed"] = out["failed"].get<int>() + fly.value("failed", 0) + 1;  // the call it died on
          const json& c = fly.value("case", json::object());
          why += " on " + c.value("op", std::string("?")) + " (call " + std::to_string(fly.value("i", 0)) +
                 " of its share)";
          const int next = fly.value("i", 0) + 1;
          const int share = (static_cast<int>(cases.size()) - k + n - 1) / n;
          // A crash or a hang on one call: a fresh worker goes on from the next.
          if ((r.signal || r.caseTimedOut || r.exitCode != 0) && !r.stopped && !(r.timedOut && !r.caseTimedOut) &&
              next < share && restarts[k] < kPrecompileRestarts) {
            skip[k] = next;
            ++restarts[k];
            pending[k] = true;
            why += "; a fresh worker went on";
          }
        }
        out["stopped"].push_back("worker " + std::to_string(k) + " " + why);
      }
    }
    const json printed = capturedOutput(captures, 10);
    if (printed.value("lines", 0) > 0) out["output"] = printed;
  } catch (const std::exception& e) {
    out["stopped"].push_back(std::string("the workers could not start: ") + e.what());
  }
  remove();
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace flagprop
