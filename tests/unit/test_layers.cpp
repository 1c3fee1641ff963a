// Layers depend one way: a file includes only files of its own layer or of
// layers below it. The order (lowest first): core, generators, catalog,
// targets, harness, suites, runner, reports, tools (the CLI). docs/design.md
// says what each layer holds.
#include "core/files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kLayers = {"core",   "generators", "catalog", "targets", "harness",
                                          "suites", "runner",     "reports", "tools"};

int rank(const std::string& layer) {
  const auto it = std::find(kLayers.begin(), kLayers.end(), layer);
  return it == kLayers.end() ? -1 : static_cast<int>(it - kLayers.begin());
}

// "file: includes higher/x.h" for every include of a higher layer (or of
// tests/ or bench/) under `root`.
std::vector<std::string> backEdges(const fs::path& root) {
  static const std::regex include(R"re(^\s*#\s*include\s*"([^"/]+)/[^"]+")re");
  std::vector<std::string> out;
  for (const auto& layer : kLayers) {
    if (!fs::is_directory(root / layer)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / layer)) {
      const auto ext = e.path().extension();
      if (ext != ".h" && ext != ".cpp") continue;
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string target = m[1];
        const bool outside = target == "tests" || target == "bench";
        if (outside || rank(target) > rank(layer))
          out.push_back(fs::relative(e.path(), root).string() + ": includes " + target + "/");
      }
    }
  }
  return out;
}

TEST(Layers, NoLowerLayerIncludesAHigherOne) {
  const auto edges = backEdges(FLAGPROP_SOURCE_DIR);
  std::string all;
  for (const auto& e : edges) all += e + "\n";
  EXPECT_TRUE(edges.empty()) << all;
  for (const auto& layer : kLayers) EXPECT_TRUE(fs::is_directory(fs::path(FLAGPROP_SOURCE_DIR) / layer)) << layer;
}

TEST(Layers, TheCheckCatchesABackEdge) {
  const fs::path root = fs::temp_directory_path() / "flagprop-layers-teeth";
  flagprop::removeTree(root.string());
  fs::create_directories(root / "catalog");
  fs::create_directories(root / "suites");
  std::ofstream(root / "suites" / "ok.h") << "#include \"catalog/catalog.h\"\n";
  std::ofstream(root / "catalog" / "bad.cpp") << "#include <vector>\n  #include \"suites/registry.h\"\n";
  const auto edges = backEdges(root);
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0], "catalog/bad.cpp: includes suites/");
  flagprop::removeTree(root.string());
}

// "file:line" for every call of std::filesystem::remove_all in flagprop's
// sources under `root` (its layers and tools/): flagprop links libtorch, and
// libtorch 2.x exports its own std::filesystem::remove_all, which crashed a
// process with torch 2.11 loaded on an H200 (core/files.h, removeTree).
std::vector<std::string> removeAllCalls(const fs::path& root) {
  static const std::regex call(R"re(\bremove_all\s*\()re");
  std::vector<std::string> out;
  std::vector<std::string> folders = kLayers;
  folders.push_back("tools");
  for (const auto& folder : folders) {
    if (!fs::is_directory(root / folder)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = e.path().extension();
      if (ext != ".h" && ext != ".cpp") continue;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const std::string code = line.substr(0, line.find("//"));
        if (std::regex_search(code, call))
          out.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(n));
      }
    }
  }
  return out;
}

TEST(Layers, NoStdFilesystemRemoveAll) {
  std::string all;
  for (const auto& c : removeAllCalls(FLAGPROP_SOURCE_DIR)) all += c + "\n";
  EXPECT_TRUE(all.empty()) << "use flagprop::removeTree (core/files.h) instead:\n" << all;
}

TEST(Layers, TheRemoveAllCheckCatchesACall) {
  const fs::path root = fs::temp_directory_path() / "flagprop-remove-all-teeth";
  flagprop::removeTree(root.string());
  fs::create_directories(root / "runner");
  std::ofstream(root / "runner" / "x.cpp")
      << "// fs::remove_all(dir) is not used\nvoid f() {\n  fs::remove_all(dir, ec);\n}\n";
  EXPECT_EQ(removeAllCalls(root), (std::vector<std::string>{"runner/x.cpp:3"}));
  flagprop::removeTree(root.string());
}

}  // namespace
