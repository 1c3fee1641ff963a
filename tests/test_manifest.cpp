// Bad input gets a clear one-line error naming what is wrong.
#include "suites/property.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace flagprop {
namespace {

std::string writeTemp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "flagprop-test-manifests";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "";
}

const std::string kInstaller = fixturesDir() + "/installers/example_installer.py";

std::string target(const std::string& extra) {
  return R"({"schema": "flagprop.target/1", "name": "t", "installer": {"path": ")" + kInstaller + "\"" + extra + "}}";
}

TEST(Manifest, MissingFile) {
  const auto e = errorOf([] { loadTarget("/nonexistent/flagprop.json"); });
  EXPECT_NE(e.find("/nonexistent/flagprop.json: no such file"), std::string::npos) << e;
}

TEST(Manifest, MalformedJson) {
  const auto p = writeTemp("bad.json", "{\"schema\": ");
  const auto e = errorOf([&] { loadTarget(p); });
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line";
}

TEST(Manifest, WrongSchemaAndMissingFields) {
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("s.json", R"({"schema": "x/1", "name": "a"})")); }).find("expected 'flagprop.target/1'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("n.json", R"({"schema": "flagprop.target/1"})")); }).find("missing field 'name'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              loadTarget(writeTemp("i.json", R"({"schema": "flagprop.target/1", "name": "a", "properties": ["P1"]})"));
            }).find("P1 needs an installer"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("p.json", target(R"(, "mode": "sideways")"))); }).find("installer.mode"),
            std::string::npos);
}

TEST(Manifest, MissingInstallerPath) {
  const auto e = errorOf([&] {
    loadTarget(writeTemp("m.json", R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": "nope/__init__.py"}})"));
  });
  EXPECT_NE(e.find("installer.path 'nope/__init__.py' does not exist"), std::string::npos) << e;
}

TEST(Manifest, MissingFlagGemsCheckout) {
  const auto e = errorOf([&] {
    loadTarget(writeTemp("fg.json", R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": ")" + kInstaller +
                                        R"("}, "flag_gems": {"kind": "source", "path": "/nonexistent/src"}})"));
  });
  EXPECT_NE(e.find("has no flag_gems/utils/libentry.py"), std::string::npos) << e;
}

TEST(Manifest, HashMismatchNamesBothHashes) {
  const std::string zeros(64, '0');
  const Target t = loadTarget(writeTemp("h.json", target(R"(, "sha256": ")" + zeros + "\"")));
  const auto e = errorOf([&] { TargetSession s(t); });
  EXPECT_NE(e.find("installer sha256 mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find("expected " + zeros), std::string::npos) << e;
  EXPECT_NE(e.find("saw " + sha256File(kInstaller)), std::string::npos) << e;
}

TEST(Manifest, InstallerFunctionMissingOrModuleRaising) {
  const Target t = loadTarget(writeTemp("f.json", target(R"(, "function": "no_such_installer")")));
  EXPECT_NE(errorOf([&] { TargetSession s(t); }).find("has no installer 'no_such_installer'"), std::string::npos);
  const std::string raising = std::string(FLAGPROP_SOURCE_DIR) + "/tests/data/raises_on_load.py";
  const Target r = loadTarget(writeTemp("r.json", R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": ")" +
                                                      raising + "\"}}"));
  const auto e = errorOf([&] { TargetSession s(r); });
  EXPECT_NE(e.find("raised while loading: ImportError: this installer module cannot load"), std::string::npos) << e;
}

TEST(Manifest, MatrixExpandsRelativeToItself) {
  const auto paths = expandManifest(defaultManifest());
  ASSERT_EQ(paths.size(), 18u);
  for (const auto& p : paths) EXPECT_TRUE(fs::exists(p)) << p;
}

}  // namespace
}  // namespace flagprop
