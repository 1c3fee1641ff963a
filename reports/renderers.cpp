#include "reports/renderers.h"

#include "core/files.h"
#include "core/python.h"
#include "reports/report.h"
#include "runner/runner.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

namespace flagprop {

namespace fs = std::filesystem;

namespace {
// Writes `path` (its folder made again where the code under test removed
// it); returns what failed, or nothing.
std::vector<std::string> save(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  try {
    writeText(path, text);
  } catch (const std::exception& e) {
    return {e.what()};
  }
  return {};
}

std::vector<std::string> writeJson(const json& report, const std::string& dir, std::ostream&) {
  return save(dir + "/report.json", jsonText(report));
}

std::vector<std::string> writeMarkdown(const json& report, const std::string& dir, std::ostream&) {
  return save(dir + "/report.md", renderMarkdown(report));
}

std::vector<std::string> writeJunit(const json& report, const std::string& dir, std::ostream&) {
  std::vector<std::string> failed;
  const json& targets = report.at("targets");
  for (size_t i = 0; i < targets.size(); ++i)
    for (auto& f : writeTargetJunit(dir, i, targets[i], report.at("provenance"))) failed.push_back(std::move(f));
  return failed;
}

std::vector<std::string> writeConsole(const json& report, const std::string&, std::ostream& console) {
  printSummary(report, console);
  return {};
}
}  // namespace

const std::vector<ReportFormat>& reportFormats() {
  static const std::vector<ReportFormat> formats = {
      {"json", "report.json", writeJson},   {"markdown", "report.md", writeMarkdown},
      {"junit", "junit/*.xml", writeJunit}, {"html", "report.html", {}, true},
      {"drafts", "drafts/*.md", {}, true},  {"console", "", writeConsole},
  };
  return formats;
}

std::string junitFileName(size_t index, const std::string& targetName) {
  std::string name = targetName.substr(0, 80);  // a file name is at most 255 bytes
  for (auto& c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  char num[16];
  std::snprintf(num, sizeof num, "%03zu", index + 1);
  return std::string(num) + "_" + name + ".xml";
}

std::vector<std::string> writeTargetJunit(const std::string& dir, size_t index, const json& target,
                                          const json& provenance) {
  try {
    return save(dir + "/junit/" + junitFileName(index, target.value("name", std::string("target"))),
                junitXml(target, provenance));
  } catch (const std::exception& e) {
    return {"junit: " + std::string(e.what())};
  }
}

std::vector<std::string> renderReport(const json& report, const std::string& dir, const RenderOptions& options,
                                      std::ostream& console) {
  std::vector<std::string> failed, python;
  const auto write = [&](const ReportFormat& f) {
    std::vector<std::string> lines;
    try {
      lines = f.write(report, dir, console);
    } catch (const std::exception& e) {  // one format's failure costs the report that format only
      lines = {(f.files.empty() ? f.name : f.files) + ": " + e.what()};
    }
    failed.insert(failed.end(), lines.begin(), lines.end());
    return lines.empty();
  };
  // The C++ files first (report.json among them: the Python formats read
  // it), then the Python formats in one child, the console summary last.
  bool jsonWritten = false;
  for (const auto& f : reportFormats())
    if (f.python && (f.name != "drafts" || options.drafts))
      python.push_back(f.name);
    else if (!f.python && f.name != "console" && write(f) && f.name == "json")
      jsonWritten = true;
  if (!python.empty()) {
    const std::string why =
        jsonWritten ? renderWithPython(dir, python) : "report.json, which they are made from, was not written";
    if (!why.empty()) failed.push_back("report.html / drafts: " + why);
  }
  for (const auto& f : reportFormats())
    if (f.name == "console" && options.console) write(f);
  return failed;
}

std::string renderWithPython(const std::string& dir, const std::vector<std::string>& names, std::string* written) {
  std::string folders, script;
  for (const auto& f : pythonFolders()) {
    folders += (folders.empty() ? "" : "\n") + fs::absolute(f).string();
    if (script.empty() && fs::is_regular_file(fs::path(f) / "flagprop" / "reporting" / "render.py"))
      script = fs::absolute(fs::path(f) / "flagprop" / "reporting" / "render.py").string();
  }
  if (script.empty()) return "flagprop/reporting/render.py is in none of flagprop's Python folders (" + folders + ")";
  // -I: the user's environment and site packages play no part; flagprop.reporting.render
  // puts `folders` (one a line) on its path itself.
  std::vector<std::string> argv = {FLAGPROP_PYTHON_EXE, "-I", "-B", script, fs::absolute(dir).string(), folders};
  argv.insert(argv.end(), names.begin(), names.end());
  const std::string log =
      (fs::temp_directory_path() / ("flagprop-report-" + std::to_string(getpid()) + ".log")).string();
  std::error_code ec;
  fs::remove(log, ec);
  ChildSpec writer{argv, log};
  writer.finishOnStop = true;  // an interrupted run's report is written too
  const ChildResult r = runChildren({writer}, 600).at(0);
  std::string text;
  try {
    text = readFile(log);
  } catch (const std::exception&) {
  }
  fs::remove(log, ec);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (r.exitCode == 0) {
    if (written) *written = text;
    return "";
  }
  const std::string last = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  return last.empty() ? "the report writer exited with " + std::to_string(r.exitCode) : last;
}

}  // namespace flagprop
