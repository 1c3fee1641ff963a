#include "runner/precompile.h"

#include "core/files.h"
#include "core/python.h"
#include "runner/runner.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

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
  const int n = std::min<int>(opts.workers, static_cast<int>(cases.size()));
  json out = {{"workers", n}, {"cases", cases.size()}, {"ran", 0}, {"failed", 0}, {"compilations", 0},
              {"stopped", json::array()}, {"errors", json::array()}};
  fs::path dir;
  const auto remove = [&] {
    try {
      if (!dir.empty()) removeTree(dir.string());  // not std::filesystem::remove_all: see removeTree
    } catch (const std::exception&) {
    }
  };
  try {
    std::string scratch = (fs::temp_directory_path() / "flagprop-precompile-XXXXXX").string();
    if (!mkdtemp(scratch.data())) throw std::runtime_error("cannot make a folder in " + fs::temp_directory_path().string());
    dir = scratch;
    const std::string job = (dir / "job.json").string();
    writeText(job, json{{"target", session.targetJson()},
                        {"gates", toJson(session.target().defaultGates())},
                        {"op_names", [&] {
                           json names = json::array();
                           for (const auto& c : cases)
                             if (std::find(names.begin(), names.end(), c.at("op")) == names.end()) names.push_back(c.at("op"));
                           return names;
                         }()},
                        {"cases", cases}}
                       .dump());
    std::string pythonPath;
    for (const auto& f : pythonFolders()) pythonPath += (pythonPath.empty() ? "" : ":") + fs::absolute(f).string();
    if (const char* p = std::getenv("PYTHONPATH"); p && *p) pythonPath += std::string(":") + p;
    std::vector<ChildSpec> specs;
    for (int k = 0; k < n; ++k) {
      const std::string base = (dir / ("worker-" + std::to_string(k))).string();
      specs.push_back({{FLAGPROP_PYTHON_EXE, "-m", "flagprop.precompile", job, std::to_string(k), std::to_string(n),
                        base + ".json"},
                       base + ".txt",
                       {"PYTHONPATH=" + pythonPath, "FLAGPROP_PRECOMPILE_WORKER=" + std::to_string(k),
                        "FLAGPROP_PRECOMPILE_PARENT=" + std::to_string(getpid())},
                       CaseWatch{base + ".json.inflight", opts.caseSeconds}});
    }
    const std::vector<ChildResult> results = runChildren(specs, opts.totalSeconds);
    std::vector<std::string> captures;
    for (int k = 0; k < n; ++k) {
      const std::string base = (dir / ("worker-" + std::to_string(k))).string();
      captures.push_back(base + ".txt");
      const ChildResult& r = results[k];
      json w;
      try {
        w = json::parse(readFile(base + ".json"));
      } catch (const std::exception&) {
      }
      if (!w.is_object() || r.exitCode != 0 || r.signal || r.timedOut || r.stopped) {
        const std::string why = r.stopped        ? "stopped with the run"
                                : r.caseTimedOut ? "stopped: one call ran longer than " + std::to_string(opts.caseSeconds) + " s"
                                : r.timedOut     ? "stopped after " + std::to_string(opts.totalSeconds) + " s"
                                : r.signal       ? "died with signal " + std::to_string(r.signal)
                                                 : "exited with code " + std::to_string(r.exitCode);
        out["stopped"].push_back("worker " + std::to_string(k) + " " + why);
      }
      if (!w.is_object()) continue;
      for (const char* f : {"ran", "failed", "compilations"}) out[f] = out[f].get<int>() + w.value(f, 0);
      for (const auto& e : w.value("errors", json::array()))
        if (out["errors"].size() < 5) out["errors"].push_back(e);
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
