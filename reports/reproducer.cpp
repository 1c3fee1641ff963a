#include "reports/reproducer.h"

#include "core/files.h"
#include "core/python.h"
#include "runner/runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
#include <vector>

#ifndef FLAGPROP_SOURCE_DIR
#error "FLAGPROP_SOURCE_DIR must be defined by the build"
#endif
#ifndef FLAGPROP_PYTHON_EXE
#error "FLAGPROP_PYTHON_EXE must be defined by the build"
#endif

extern char** environ;

namespace fs = std::filesystem;

namespace flagprop {

namespace {

// A JSON string literal is also a valid Python string literal (ASCII only:
// non-ASCII and control characters are \u escapes; bad UTF-8 becomes U+FFFD).
std::string pyString(const std::string& s) { return json(s).dump(-1, ' ', true, json::error_handler_t::replace); }

// `j` as a Python literal; arrays and objects that do not fit in `width`
// columns at `indent` are broken one element per line.
std::string pyLiteral(const json& j, size_t indent = 0, size_t width = 100) {
  switch (j.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return j.get<bool>() ? "True" : "False";
    case json::value_t::string:
      return pyString(j.get<std::string>());
    case json::value_t::array:
    case json::value_t::object: {
      const bool obj = j.is_object();
      const std::string open = obj ? "{" : "[", close = obj ? "}" : "]";
      std::string one = open;
      for (auto it = j.begin(); it != j.end(); ++it)
        one += (it == j.begin() ? "" : ", ") + (obj ? pyString(it.key()) + ": " : "") +
               pyLiteral(it.value(), 0, std::string::npos);
      one += close;
      if (width == std::string::npos || indent + one.size() <= width || j.empty()) return one;
      std::string out = open + "\n";
      for (auto it = j.begin(); it != j.end(); ++it)
        out += std::string(indent + 4, ' ') + (obj ? pyString(it.key()) + ": " : "") +
               pyLiteral(it.value(), indent + 4, width) + ",\n";
      return out + std::string(indent, ' ') + close;
    }
    default:
      return j.dump();  // numbers: JSON's forms are Python's
  }
}

// Absolute paths of the machine that wrote a reproducer, and what a
// reproducer says instead: "{HERE}" (its own folder, the report's
// reproducers/), "{HERE}/.." (the report folder), "{ROOT}" (the flagprop
// checkout). The longest root wins.
struct Roots {
  std::vector<std::pair<std::string, std::string>> byLength;  // (absolute path, placeholder)

  explicit Roots(const std::string& reproDir) {
    const auto add = [&](const fs::path& p, const std::string& as) {
      std::error_code ec;
      const fs::path lexical = fs::absolute(p).lexically_normal();
      const fs::path canonical = fs::weakly_canonical(lexical, ec);
      for (const fs::path& form : {lexical, ec ? lexical : canonical}) {
        std::string s = form.string();
        while (s.size() > 1 && s.back() == '/') s.pop_back();
        if (s.size() > 1) byLength.emplace_back(s, as);
      }
    };
    add(reproDir, "{HERE}");
    add(fs::absolute(reproDir).lexically_normal().parent_path(), "{HERE}/..");
    add(dataRoot(), "{ROOT}");
    std::sort(byLength.begin(), byLength.end(),
              [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }

  // `path` with a known root replaced by its placeholder ("{ROOT}/x/y.py"),
  // or "" when it is under none.
  std::string placeholder(const std::string& path) const {
    for (const auto& [root, as] : byLength)
      if (path == root || (path.rfind(root + "/", 0) == 0)) return as + path.substr(root.size());
    return "";
  }

  // Every known root in `text` replaced by its placeholder.
  std::string scrub(std::string text) const {
    const auto part = [](char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; };
    for (const auto& [root, as] : byLength)
      for (size_t at = text.find(root); at != std::string::npos; at = text.find(root, at + 1)) {
        const size_t end = at + root.size();
        if (end < text.size() && part(text[end])) continue;  // /work/main2 is not under /work/main
        text.replace(at, root.size(), as);
      }
    return text;
  }

  // Data: every string under a known root as its placeholder (the
  // reproducer expands them back where it runs).
  json data(const json& j) const {
    if (j.is_string()) {
      const std::string p = placeholder(j.get<std::string>());
      return p.empty() ? j : json(p);
    }
    if (!j.is_structured()) return j;
    json out = j;
    for (auto it = out.begin(); it != out.end(); ++it) it.value() = data(it.value());
    return out;
  }
};

// Text a person reads (the finding, a crash's reason): known roots as
// placeholders, any other absolute path shortened to ".../<its last part>".
std::string display(const std::string& text, const Roots& roots) {
  static const std::regex abs(R"((^|[\s('"=:<])/(?:[A-Za-z0-9_.+@-]+/)+([A-Za-z0-9_.+@-]+))");
  return std::regex_replace(roots.scrub(text), abs, "$1.../$2");
}

// `text` as comment lines ("# ..."), wrapped at `width` columns.
std::string comment(const std::string& text, size_t width = 79) {
  std::string out, line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t sp = text.find(' ', start);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(start, sp - start);
    if (!line.empty() && line.size() + 1 + word.size() > width - 2) {
      out += "# " + line + "\n";
      line = "  " + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    start = sp + 1;
  }
  if (!line.empty()) out += "# " + line + "\n";
  return out;
}

// The code-under-test path `path` as the reproducer writes it: under a known
// root as its placeholder, else as it is (the variable says to edit it).
std::string codePath(const std::string& path, const Roots& roots) {
  if (path.empty()) return "";
  const std::string p = roots.placeholder(path);
  return p.empty() ? path : p;
}

// The folder among `folders` that holds `rel`, or "".
std::string findIn(const std::vector<std::string>& folders, const std::string& rel) {
  for (const auto& f : folders)
    if (fs::exists(fs::path(f) / rel)) return (fs::path(f) / rel).string();
  return "";
}

// The packages a reproducer embeds.
const char* kPackages[] = {"flagprop_mocks", "flagprop"};

// flagprop.tools.slim's request for a reproducer of check kind `kind`: the
// functions the template (reproducer.py.in) calls (observe and judge through
// check, which calls both with its `kind`), `kind` bound for check and
// describe so that only its branches are followed, and the table's budget.
json sliceRequest(const std::string& kind, size_t budget) {
  json entries = {"flagprop.judging.checks:check", "flagprop.judging.checks:describe",
                  "flagprop.judging.checks:verdict_of"};
  if (kind == "op") {
    entries.push_back("flagprop.engine.ops:setup");
    entries.push_back("flagprop.engine.ops:build_cpu");
    entries.push_back("flagprop.judging.checks:describe_values");
  }
  json folders = json::array();
  for (const auto& f : pythonFolders()) folders.push_back(fs::absolute(f).string());
  return {
      {"folders", folders},
      {"packages", kPackages},
      {"entries", entries},
      {"bindings",
       {{"flagprop.judging.checks:check", {{"kind", kind}}}, {"flagprop.judging.checks:describe", {{"kind", kind}}}}},
      {"budget", budget}};
}

// The module table entries of package `name` in folder `root` and of its
// subpackages (folders holding an __init__.py), whole, as escaped string
// literals; the reproducer imports them on demand, in any order.
void appendPackage(const std::string& name, const fs::path& root, std::string& out) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(root)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    if (p.extension() == ".py" && p.filename() != "__init__.py")
      out +=
          "_MODULES.append((" + pyString(name + "." + p.stem().string()) + ", False, " + pyString(readFile(p)) + "))\n";
    else if (fs::is_regular_file(p / "__init__.py"))
      appendPackage(name + "." + p.filename().string(), p, out);
  }
  out += "_MODULES.append((" + pyString(name) + ", True, " + pyString(readFile(root / "__init__.py")) + "))\n";
}

// Last resort when flagprop.tools.slim cannot run: every module whole.
std::string wholeModulesTable() {
  const auto folders = pythonFolders();
  std::string out = "_MODULES = []\n";
  for (const char* pkg : kPackages) {
    const std::string init = findIn(folders, std::string(pkg) + "/__init__.py");
    if (init.empty()) throw FileError(std::string("no ") + pkg + "/__init__.py in flagprop's Python folders");
    appendPackage(pkg, fs::path(init).parent_path(), out);
  }
  return out + "_PACKED = \"\"\n";
}

std::atomic<unsigned> gSliceCount{0};

// The module table (flagprop.tools.slim's render) for a reproducer of `kind`
// within `budget` bytes; `note` says what was embedded and how.
std::string sliceModules(const std::string& kind, size_t budget, std::string& note) {
  const std::string slim = findIn(pythonFolders(), "flagprop/tools/slim.py");
  const std::string stem =
      (fs::temp_directory_path() / ("flagprop-slim-" + std::to_string(getpid()) + "-" + std::to_string(gSliceCount++)))
          .string();
  const std::string req = stem + ".request.json", out = stem + ".out.json", log = stem + ".log";
  std::string why;
  json answer;
  if (slim.empty()) {
    why = "flagprop/tools/slim.py is not in flagprop's Python folders";
  } else {
    writeText(req, sliceRequest(kind, budget).dump());
    const ChildResult r =
        runChild({FLAGPROP_PYTHON_EXE, "-I", "-S", "-B", slim, "--request", req, "--out", out}, 120, log);
    const int rc = r.exitCode;
    try {
      answer = json::parse(readFile(out));
    } catch (const std::exception&) {
    }
    if (rc != 0 || !answer.is_object() || !answer.value("ok", false)) {
      why = answer.is_object() && answer.contains("error") ? answer["error"].get<std::string>()
                                                           : "flagprop.tools.slim exited with " + std::to_string(rc);
      try {
        const std::string text = readFile(log);
        if (!text.empty()) why += ": " + text.substr(text.rfind('\n', text.size() - 2) + 1);
      } catch (const std::exception&) {
      }
    }
  }
  for (const auto& f : {req, out, log}) {
    std::error_code ec;
    fs::remove(f, ec);
  }
  if (!why.empty()) {
    note = "The whole of flagprop's Python modules are embedded (cutting them down failed: " + why + ").";
    return wholeModulesTable();
  }
  std::string packed;
  for (const auto& n : answer.at("packed")) packed += (packed.empty() ? "" : ", ") + n.get<std::string>();
  note = answer.value("sliced", false)
             ? "Only the part of flagprop's Python code this case runs is embedded, docstrings removed"
             : "The whole of flagprop's Python modules are embedded, docstrings removed (" +
                   answer.value("note", std::string()) + ")";
  note += " (" + std::to_string(answer.value("code_bytes", 0)) + " of " +
          std::to_string(answer.value("full_bytes", 0)) +
          " bytes; the documented source is python/flagprop and mocks/flagprop_mocks in flagprop)." +
          (packed.empty() ? std::string(" Each module is readable below.")
                          : " Packed (zlib, base85) to keep the file small: " + packed +
                                "; `python3 THIS_FILE --dump-code DIR` writes every module out as a file.");
  return answer.at("text").get<std::string>();
}

// sliceModules, once per check kind and 2 KiB step of the budget (rounded
// down, so the table still fits): the slice depends on nothing else, and a
// run with many failures would otherwise start the slicer (about 0.5 s) for
// each reproducer.
std::string moduleTable(const std::string& kind, size_t budget, std::string& note) {
  static std::mutex mu;
  static std::map<std::pair<std::string, size_t>, std::pair<std::string, std::string>> done;  // -> (table, note)
  const size_t step = budget / 2048 * 2048;
  const auto key = std::make_pair(kind, step ? step : budget);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = done.find(key); it != done.end()) {
      note = it->second.second;
      return it->second.first;
    }
  }
  std::string table = sliceModules(kind, key.second, note);
  std::lock_guard<std::mutex> lock(mu);
  done.emplace(key, std::make_pair(table, note));
  return table;
}

// An op case's input tensors as flagprop.engine.ops.build_cpu makes them from their
// layouts, where this process has flagprop's interpreter running (the
// target's own process; not the parent that records a crash): {"call.input":
// repr of the values, or "(N elements)" beyond `limit`}, or null.
json inputValues(const json& kaseIn, size_t limit = 16) {
  if (!Py_IsInitialized() || !kaseIn.is_object() || !kaseIn.contains("calls")) return nullptr;
  try {
    py::gil_scoped_acquire gil;
    const py::object build = pyImport("flagprop.engine.ops").attr("build_cpu");
    json out = json::object();
    size_t k = 0;
    for (const auto& call : kaseIn.at("calls")) {
      const py::list tensors = build(fromJson(call));
      for (size_t i = 0; i < tensors.size(); ++i) {
        const py::object t = tensors[i];
        const size_t n = t.attr("numel")().cast<size_t>();
        out[std::to_string(k) + "." + std::to_string(i)] =
            n <= limit ? py::repr(t.attr("tolist")()).cast<std::string>() : "(" + std::to_string(n) + " elements)";
      }
      ++k;
    }
    return out;
  } catch (const std::exception&) {
    return nullptr;  // a comment the reproducer can do without
  }
}

// What a reproducer aims to stay within, in bytes (a GitHub issue body holds
// 65536 characters).
constexpr size_t kTargetBytes = 40000;
constexpr size_t kMinCodeBudget = 8000;

}  // namespace

namespace {

// The reproducer's file in `dir`: repro_NAME_KEY[SUFFIX]_TAG.py, a name of
// letters, digits, '_' and '-' within 255 bytes (at most 80 of the name,
// 120 of the key); TAG, the manifest path's hash, keeps two manifests of
// one name apart.
std::string reproducerPath(const std::string& dir, const json& target, const PropertyOutcome& outcome,
                           const std::string& nameSuffix) {
  const std::string name = target.value("name", std::string("target"));
  const std::string tag = std::to_string(std::hash<std::string>{}(target.value("manifest", std::string())) % 10000);
  const auto part = [](std::string s, size_t most) {
    for (auto& ch : s)
      if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
    return s.substr(0, most);
  };
  return (fs::path(dir) / ("repro_" + part(name, 80) + "_" + part(outcome.key(), 120) + nameSuffix + "_" + tag + ".py"))
      .string();
}

// What every reproducer starts with after its first comment: how to run
// it, its exit statuses, the checks of its python and arguments.
const char* kPrologue =
    "#\n"
    "# Run it with the python3 that has torch (flagprop itself is not needed):\n"
    "#     python3 THIS_FILE\n"
    "# Exit status: 1 the failure reproduces, 0 it does not, 2 a file of the code\n"
    "# under test is missing, 3 it cannot run here (this python has no torch, no\n"
    "# device, ...). `python3 THIS_FILE --dump-code DIR` writes the embedded code\n"
    "# out as files (and exits 0 without running the case).\n"
    "\n"
    "import json\n"
    "import os\n"
    "import sys\n"
    "\n"
    "if sys.version_info[0] < 3:\n"
    "    try:\n"
    "        sys.stdout.write(\"cannot run: this is Python %d; run it with the python3 that has torch\\n\" %\n"
    "                         sys.version_info[0])\n"
    "    finally:\n"
    "        sys.exit(3)\n"
    "_USAGE = (\"usage: python3 %s [--dump-code DIR]\\n  runs the counterexample; exit 1 it reproduces, 0 it \"\n"
    "          \"does not, 2 a file of the code under test is missing, 3 it cannot run here\\n\" % sys.argv[0])\n"
    "if any(a in (\"-h\", \"--help\") for a in sys.argv[1:]):\n"
    "    sys.stdout.write(_USAGE)\n"
    "    sys.exit(0)\n"
    "if sys.argv[1:] and not (len(sys.argv) <= 3 and sys.argv[1] == \"--dump-code\") and \\\n"
    "        not set(sys.argv[1:]) <= {\"--in-child\", \"--in-sanitizer\"}:  # the last two: its own children\n"
    "    sys.stdout.write(\"cannot run: unknown arguments %s\\n\" % \" \".join(sys.argv[1:]) + _USAGE)\n"
    "    sys.exit(3)\n"
    "if \"--dump-code\" not in sys.argv:\n"
    "    try:\n"
    "        import torch\n"
    "    except Exception as e:  # never let a python without torch look like a verdict\n"
    "        try:\n"
    "            sys.stdout.write(\"cannot run: this python (%s) cannot import torch (%s: %s); run it with \"\n"
    "                             \"the python3 that has torch: python3 %s\\n\" % (sys.executable,\n"
    "                                                                        type(e).__name__, e, sys.argv[0]))\n"
    "        finally:\n"
    "            sys.exit(3)\n"
    "\n"
    "# The code under test: edit these to point at your files. \"{ROOT}/...\" is\n"
    "# under FLAGPROP_ROOT (below), \"{HERE}/...\" next to this file; \"\": none.\n";

// The code under test as the reproducer's variables (INSTALLER_PATH ...
// FLAGPROP_ROOT): paths under the checkout or the report as {ROOT} / {HERE}.
std::string codeVariables(const std::string& dir, const json& target, const Roots& roots) {
  const json inst = target.value("installer", json::object()), fg = target.value("flag_gems", json::object()),
             ops = target.value("ops", json::object());
  json pythonPath = json::array();
  for (const auto& p : inst.value("python_path", json::array()))
    pythonPath.push_back(codePath(p.get<std::string>(), roots));
  // The files the run used (the checkout, or an installed copy's share
  // folder), relative to the reproducer wherever the report is: inside the
  // checkout, in a folder beside it, from an installed flagprop.
  const fs::path rootAbs = fs::path(dataRoot()).lexically_normal(), dirAbs = fs::absolute(dir).lexically_normal();
  const std::string flagpropRoot = pyString(rootAbs.lexically_relative(dirAbs).string());
  std::string head = "INSTALLER_PATH = " + pyString(codePath(inst.value("path", std::string()), roots)) +
                     "  # the installer's source (installer mode \"source\")\n";
  head += "OPS_PATH = " + pyString(codePath(ops.value("path", std::string()), roots)) +
          "  # a Python file of ops (ops kind \"module\")\n";
  head += "FLAGGEMS_SRC = " + pyString(codePath(fg.value("path", std::string()), roots)) +
          "  # your FlagGems checkout's src folder (flag_gems kind \"source\")\n";
  head += "PYTHON_PATH = " + pyLiteral(pythonPath, 0) + "  # folders put first on sys.path for the installer\n";
  head +=
      "# The flagprop files that hold the \"{ROOT}\" paths (the checkout, or an installed\n"
      "# copy's share/flagprop): $FLAGPROP_ROOT if set, else this (the run's, relative to\n"
      "# this file's folder) if they are there, else the nearest folder above this file\n"
      "# or above the current directory that holds them all.\n";
  return head + "FLAGPROP_ROOT = " + flagpropRoot + "\n\n";
}

// The case and what the run knew of it (TARGET_NAME ... TARGET).
std::string caseVariables(const json& target, const json& provenance, const PropertyOutcome& outcome,
                          const Roots& roots) {
  const json obs = outcome.observations.is_object() ? outcome.observations : json::object();
  json rest = roots.data(target);
  for (const char* section : {"installer", "flag_gems", "ops"})
    if (rest.contains(section) && rest[section].is_object() && rest[section].contains("path"))
      rest[section]["path"] = "";
  if (rest.contains("installer") && rest["installer"].is_object()) rest["installer"]["python_path"] = json::array();
  std::string head = "TARGET_NAME = " + pyString(target.value("name", std::string("target"))) + "\n";
  head += "KEY = " + pyString(outcome.key()) + "\n";
  head += "PROPERTY = " + pyString(outcome.property) + "\n";
  head += "KIND = " + pyString(outcome.checkKind) + "  # flagprop.judging.checks' kind\n";
  head += "REASON = " + pyString(display(outcome.reason, roots)) + "\n";
  head += "CRASH = " + pyString(display(obs.value("crash", std::string()), roots)) +
          "  # the case ended the suite's process: it runs in a child process\n";
  head += "CRASH_LIMIT_S = " + std::to_string(obs.value("limit_s", 120)) + "\n";
  head += "# What the run had (the reproducer prints what it has).\n";
  head += "VERSIONS = " + pyLiteral(provenance.value("versions", json::object())) + "\n";
  head += "INSTALLER_SHA256 = " + pyString(provenance.value("installer_sha256", std::string())) + "\n";
  head += "OPS_SHA256 = " + pyString(provenance.value("ops_sha256", std::string())) + "\n";
  head += "# The case (shrunk), as flagprop.judging.checks.check takes it.\n";
  head += "CASE = " + pyLiteral(roots.data(outcome.counterexample)) + "\n";
  head += "JUDGING = " + pyLiteral(roots.data(outcome.judging)) + "\n";
  head +=
      "# Earlier calls run first, in order, in the same process (a failure that needs them:\n"
      "# [{\"key\": run key, \"kind\", \"case\", \"judging\"}]); empty: the case alone.\n";
  head += std::string(kPrefixLine) + "\n";
  if (outcome.checkKind == "op") {
    head +=
        "# The inputs the run built from those layouts (\"call.input\": their values), which\n"
        "# the reproducer compares with its own; None: not recorded.\n";
    head += "INPUTS = " + pyLiteral(inputValues(outcome.counterexample)) + "\n";
  }
  head += "# The target (Target::toJson); its paths are the variables above.\n";
  return head + "TARGET = " + pyLiteral(rest) + "\n\n";
}

}  // namespace

std::string writeReproducer(const std::string& dir, const json& target, const json& provenance,
                            const PropertyOutcome& outcome, const std::string& nameSuffix) {
  fs::create_directories(dir);
  const std::string path = reproducerPath(dir, target, outcome, nameSuffix);
  const Roots roots(dir);
  const std::string reason = display(outcome.reason, roots);
  std::string head = "# -*- coding: utf-8 -*-\n";
  head += comment("flagprop reproducer: " + outcome.key() + " (" + outcome.title + ") on target " +
                  target.value("name", std::string("target")) + ".");
  head += "#\n" + comment("Finding: " + reason.substr(0, 600) + (reason.size() > 600 ? " ..." : ""));
  head += kPrologue;
  head += codeVariables(dir, target, roots) + caseVariables(target, provenance, outcome, roots);
  const std::string tail = readFile(dataRoot() + "/reports/reproducer.py.in");
  const size_t other = head.size() + tail.size() + 600;  // and the table's own comment
  const size_t budget = other + kMinCodeBudget < kTargetBytes ? kTargetBytes - other : kMinCodeBudget;
  std::string note;
  const std::string table = moduleTable(outcome.checkKind, budget, note);
  writeText(path, head + comment(display(note, roots)) + table + tail);
  return path;
}

void setReproducerPrefix(const std::string& path, const json& prefix, const std::string& reason) {
  std::string text = readFile(path);
  const size_t at = text.find(std::string("\n") + kPrefixLine + "\n");
  if (at == std::string::npos) throw FileError(path + ": no " + kPrefixLine + " line to replace");
  text.replace(at + 1, std::string(kPrefixLine).size(), "PREFIX = " + pyLiteral(prefix));
  const size_t r = text.find("\nREASON = ");
  if (r != std::string::npos) {
    const size_t end = text.find('\n', r + 1);
    text.replace(r + 1, end - r - 1, "REASON = " + pyString(reason));
  }
  writeText(path, text);
}

}  // namespace flagprop
