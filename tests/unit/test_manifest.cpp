// Bad input gets a clear one-line error naming the file and the field.
#include "core/files.h"
#include "suites/registry.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fs = std::filesystem;

namespace flagprop {
namespace {

// The folder of writeTemp's files, one per test process, removed when it ends.
const fs::path& tempDir() {
  static const struct Dir {
    fs::path path = fs::temp_directory_path() / ("flagprop-test-manifests-" + std::to_string(getpid()));
    ~Dir() { flagprop::removeTree(path.string()); }
  } dir;
  return dir.path;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  const fs::path& dir = tempDir();
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

// The error of parsing the minimal valid target patched with `patch`, or "".
std::string parseError(const json& patch) {
  json j = {{"schema", "flagprop.target/1"}, {"name", "x"}, {"ops", {{"kind", "aten"}}}};
  j.merge_patch(patch);
  return errorOf([&] { targetProperties(parseTarget(j, "m.json", fixturesDir() + "/targets")); });
}

// A catalog naming an overload flagprop cannot run (randint: random) is no
// target error: that op is an excluded skip with its reason and the others
// run. A name that is no overload at all is still an error (a typo).
TEST(Manifest, AnUnrunnableOverloadInACatalogIsASkipNotATargetError) {
  json j = {{"schema", "flagprop.target/1"},
            {"name", "x"},
            {"ops", {{"kind", "aten"}}},
            {"catalog", {"randint", "tanh"}},
            {"dtypes", {"float32"}}};
  const Target t = parseTarget(j, "m.json", fixturesDir() + "/targets");
  const auto planned = planOpRuns(t, {findProperty("P5")}, Selection{});
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0].op, "randint");
  EXPECT_EQ(planned[0].entry, nullptr);
  EXPECT_EQ(planned[0].skip.rfind("excluded: random", 0), 0u) << planned[0].skip;
  EXPECT_EQ(planned[1].op, "tanh");
  EXPECT_NE(planned[1].entry, nullptr);
  EXPECT_NE(parseError({{"catalog", {"randint.nope"}}}).find("no ATen overload randint.nope"), std::string::npos);
}

TEST(Manifest, MissingFile) {
  const auto e = errorOf([] { loadTarget("/nonexistent/flagprop.json"); });
  EXPECT_NE(e.find("/nonexistent/flagprop.json: no such file"), std::string::npos) << e;
}

TEST(Manifest, MalformedJson) {
  const auto e = errorOf([&] { loadTarget(writeTemp("bad.json", "{\"schema\": ")); });
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line";
  // A number beyond a double names the file, not only nlohmann's code.
  const std::string huge = writeTemp("huge.json", R"({"schema": "flagprop.target/1", "name": "x", "op_cases": 1e400})");
  const auto h = errorOf([&] { loadTarget(huge); });
  EXPECT_NE(h.find(huge + ": not valid JSON (a number out of range"), std::string::npos) << h;
  // A key given twice is an error wherever it is (nlohmann would keep the last).
  const auto d = errorOf([&] {
    loadTarget(writeTemp("twice.json",
                         R"({"schema": "flagprop.target/1", "name": "x", "ops": {"kind": "aten", "kind": "aten"}})"));
  });
  EXPECT_NE(d.find("field 'kind' is given twice in one object"), std::string::npos) << d;
  const std::string nested = R"({"schema": "flagprop.target/1", "name": "x", "ops": {"kind": "module", "path": ")" +
                             fixturesDir() + R"(/ops/example_ops.py", "globals": {"kind": 1, "FAULTS": []}}})";
  EXPECT_EQ(errorOf([&] { loadTarget(writeTemp("nested.json", nested)); }), "")
      << "the same key in an object and in one nested in it is no duplicate";
}

TEST(Manifest, NotARegularFileTooBigOrTooDeep) {
  const std::string fifo = (fs::temp_directory_path() / ("flagprop-test-fifo-" + std::to_string(getpid()))).string();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(errorOf([&] { loadTarget(fifo); }).find("is not a regular file"), std::string::npos);
  EXPECT_NE(errorOf([&] { loadTarget("/dev/zero"); }).find("is not a regular file"), std::string::npos);
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("big.json", std::string(2 << 20, ' '))); }).find("larger than"),
            std::string::npos);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("deep.json", deep)); }).find("nested deeper than"), std::string::npos);
  fs::remove(fifo);
  // A symbolic link loop is named as one, not as a missing file.
  const fs::path loop = fs::path(fifo + "-loop");
  fs::remove(loop);
  fs::create_symlink(loop, loop);
  const auto l = errorOf([&] { loadTarget(loop.string()); });
  EXPECT_NE(l.find("Too many levels of symbolic links"), std::string::npos) << l;
  fs::remove(loop);
}

TEST(Manifest, WrongSchemaAndMissingFields) {
  EXPECT_NE(errorOf([&] {
              loadTarget(writeTemp("s.json", R"({"schema": "x/1", "name": "a"})"));
            }).find("expected 'flagprop.target/1'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              loadTarget(writeTemp("n.json", R"({"schema": "flagprop.target/1"})"));
            }).find("field 'name' is missing"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { loadTarget(writeTemp("p.json", target(R"(, "mode": "sideways")"))); }).find("installer.mode"),
            std::string::npos);
}

TEST(Manifest, UnknownFieldsAreErrorsInEverySection) {
  EXPECT_NE(parseError({{"tragets", 1}}).find("unknown field 'tragets'"), std::string::npos);
  EXPECT_NE(parseError({{"gates", {{"accelerator", "dcu"}, {"routes_to_flagems", true}}}})
                .find("unknown field 'gates.routes_to_flagems'"),
            std::string::npos);
  EXPECT_NE(parseError({{"ops", {{"kind", "aten"}, {"enabel", "flag_gems"}}}}).find("unknown field 'ops.enabel'"),
            std::string::npos);
  const std::string m = writeTemp("mx.json", R"({"schema": "flagprop.matrix/1", "tragets": ["a.json"]})");
  EXPECT_NE(errorOf([&] { expandManifest(m); }).find("unknown field 'tragets'"), std::string::npos);
  const std::string empty = writeTemp("me.json", R"({"schema": "flagprop.matrix/1", "targets": []})");
  EXPECT_NE(errorOf([&] { expandManifest(empty); }).find("lists no targets"), std::string::npos);
}

TEST(Manifest, FieldsThatDoNotApplyToTheTargetAreErrors) {
  const std::string hash(64, 'a');
  EXPECT_NE(parseError({{"flag_gems", {{"kind", "mock"}, {"libentry_sha256", hash}}}}).find("not to the mocks"),
            std::string::npos);
  EXPECT_NE(parseError({{"ops", {{"kind", "aten"}, {"sha256", hash}}}}).find("applies to kind 'module' only"),
            std::string::npos);
  EXPECT_NE(parseError({{"ops", {{"kind", "module"}, {"path", "/etc/passwd"}}}}).find("must be a Python file"),
            std::string::npos);
  EXPECT_NE(parseError({{"labels", {"cpu", 3}}}).find("field 'labels' must list non-empty strings"), std::string::npos);
  EXPECT_NE(parseError({{"catalog", {"nope.Tensor"}}})
                .find("names op 'nope.Tensor', which flagprop cannot run: no ATen overload nope.Tensor"),
            std::string::npos);
  EXPECT_NE(parseError({{"dtypes", {"float8"}}}).find("no catalog dtype 'float8'"), std::string::npos);
  EXPECT_NE(parseError({{"ops", {{"kind", "module"}, {"path", "missing.py"}}}}).find("is not an existing regular file"),
            std::string::npos);
  EXPECT_NE(parseError({{"properties", {"P1"}}}).find("needs an installer"), std::string::npos);
  EXPECT_NE(parseError({{"properties", {"P99"}}}).find("names no property"), std::string::npos);
  EXPECT_NE(parseError({{"expect", {{"P5/tahn", "pass"}}}}).find("no catalog op 'tahn'"), std::string::npos);
  // An expectation no result of the target can meet would pass silently.
  EXPECT_NE(parseError({{"expect", {{"P1", "fail"}}}}).find("names P1, which this target does not run"),
            std::string::npos);
  EXPECT_NE(parseError({{"catalog", {"tanh"}}, {"expect", {{"P5/add.Tensor", "fail"}}}}).find("leaves out"),
            std::string::npos);
  // A target naming no dtypes runs every dtype ATen's schema takes by
  // default (tanh in int32 too, past its hand-written entry's floating
  // set), not the rarer ones.
  EXPECT_EQ(parseError({{"expect", {{"P5/tanh/int32", "fail"}}}}), "");
  EXPECT_NE(
      parseError({{"expect", {{"P5/tanh/int8", "fail"}}}}).find("names tanh in int8, which this target does not run"),
      std::string::npos);
  EXPECT_NE(parseError({{"dtypes", {"float32"}}, {"expect", {{"P5/tanh/float16", "fail"}}}}).find("does not run"),
            std::string::npos);
  EXPECT_EQ(parseError({{"expect", {{"P5/tanh/float16", "fail"}}}}), "");
  EXPECT_NE(parseError({{"schema", "flagprop.matrix/1"}}).find("is a matrix"), std::string::npos);
  EXPECT_NE(errorOf([] {
              parseTarget({{"schema", "flagprop.target/1"}, {"name", "x"}, {"gates", nullptr}}, "m.json", "/");
            }).find("field 'gates' must be a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError({{"op_cases", 0}}).find("op_cases' must be an integer"), std::string::npos);
  // Read from text, nlohmann stores a non-negative literal as unsigned: the lower bound still applies
  // (0 cases would be a run that judges nothing; 0 elements broke the layout generator).
  for (const std::string field : {"op_cases", "max_elements", "cases"})
    EXPECT_NE(parseError(json::parse("{\"" + field + "\": 0}")).find(field + "' must be an integer from 1"),
              std::string::npos)
        << field;
  EXPECT_NE(parseError(json::parse(R"({"layout_palette": 4097})")).find("from 0 to 4096"), std::string::npos);
  EXPECT_EQ(parseError(json::parse(R"({"layout_palette": 0, "op_cases": 1})")), "");
  EXPECT_NE(parseError({{"device", "gpu"}}).find("must be cpu, cuda:N or flagos:N"), std::string::npos);
  EXPECT_EQ(parseError(json::object()), "");
  const Target t = parseTarget({{"schema", "flagprop.target/1"}, {"name", "x"}}, "m.json", fixturesDir());
  EXPECT_FALSE(t.hasInstaller());
  EXPECT_EQ(targetProperties(t), (std::vector<std::string>{"P5", "P6"}));
}

TEST(Manifest, MissingInstallerPath) {
  const auto e = errorOf([&] {
    loadTarget(writeTemp("m.json",
                         R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": "nope/__init__.py"}})"));
  });
  EXPECT_NE(e.find("field 'installer.path' 'nope/__init__.py' is not an existing regular file"), std::string::npos)
      << e;
}

TEST(Manifest, MissingFlagGemsCheckout) {
  const auto e = errorOf([&] {
    loadTarget(writeTemp("fg.json", R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": ")" +
                                        kInstaller +
                                        R"("}, "flag_gems": {"kind": "source", "path": "/nonexistent/src"}})"));
  });
  EXPECT_NE(e.find("flag_gems.path"), std::string::npos) << e;
}

TEST(Manifest, HashMismatchNamesBothHashes) {
  const std::string zeros(64, '0');
  const Target t = loadTarget(writeTemp("h.json", target(R"(, "sha256": ")" + zeros + "\"")));
  const auto e = errorOf([&] { TargetSession s(t); });
  EXPECT_NE(e.find("installer sha256 mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find("expected " + zeros), std::string::npos) << e;
  EXPECT_NE(e.find("saw " + sha256File(kInstaller)), std::string::npos) << e;
}

// A symbolic link planted at writeText's temporary name (the code under
// test can guess it: the path, the pid, ".tmp") is not written through: the
// file it points at keeps its text, and the report file is written.
TEST(Files, AWriteDoesNotFollowALinkPlantedAtItsTemporaryName) {
  const fs::path dir = fs::temp_directory_path() / ("flagprop-planted-" + std::to_string(getpid()));
  removeTree(dir.string());
  fs::create_directories(dir);
  const fs::path victim = dir / "victim", target = dir / "report.json";
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, target.string() + "." + std::to_string(getpid()) + ".tmp");
  writeText(target.string(), "written");
  EXPECT_EQ(readFile(victim.string()), "keep");
  EXPECT_EQ(readFile(target.string()), "written");
  removeTree(dir.string());
}

TEST(Files, RemoveTreeRemovesEverythingBelowAndNothingElse) {
  const fs::path root = fs::temp_directory_path() / "flagprop-remove-tree";
  removeTree(root.string());
  fs::create_directories(root / "a" / "b");
  std::ofstream(root / "a" / "b" / "f") << "x";
  const fs::path outside = fs::temp_directory_path() / "flagprop-remove-tree-outside";
  std::ofstream(outside) << "keep";
  fs::create_symlink(outside, root / "a" / "link");
  removeTree(root.string());
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside)) << "a link is removed, not followed";
  removeTree(root.string());  // absent: nothing to do
  fs::remove(outside);
}

TEST(Manifest, Sha256IsComputedWithoutTheInterpreter) {
  const std::string p = writeTemp("abc.txt", "abc");
  EXPECT_EQ(sha256File(p), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2 example
  EXPECT_THROW(sha256File("/nonexistent"), FileError);
}

TEST(Manifest, InstallerFunctionMissingOrModuleRaisingOrComponentsWrong) {
  const Target t = loadTarget(writeTemp("f.json", target(R"(, "function": "no_such_installer")")));
  EXPECT_NE(errorOf([&] { TargetSession s(t); }).find("has no installer 'no_such_installer'"), std::string::npos);
  const std::string raising = std::string(FLAGPROP_SOURCE_DIR) + "/tests/data/raises_on_load.py";
  const Target r = loadTarget(writeTemp(
      "r.json", R"({"schema": "flagprop.target/1", "name": "a", "installer": {"path": ")" + raising + "\"}}"));
  const auto e = errorOf([&] { TargetSession s(r); });
  EXPECT_NE(e.find("raised while loading: ImportError: this installer module cannot load"), std::string::npos) << e;
  const Target c = loadTarget(writeTemp("c.json", target(R"(, "components": ["key", "run"])")));
  EXPECT_NE(errorOf([&] {
              TargetSession s(c);
            }).find("installer.components declares key, run, but the installer source rebinds"),
            std::string::npos);
  const Target u = loadTarget(writeTemp("u.json", target(R"(, "components": ["kee"])")));
  EXPECT_NE(errorOf([&] { TargetSession s(u); }).find("unknown component(s) kee"), std::string::npos);
}

TEST(Manifest, AnOpModuleThatIsNotPythonIsOneTargetError) {
  const std::string notPython = writeTemp("not_python.py", "root:x:0:0:root:/root:/bin/bash\n");
  const Target t = loadTarget(writeTemp(
      "np.json",
      R"({"schema": "flagprop.target/1", "name": "a", "ops": {"kind": "module", "path": ")" + notPython + "\"}}"));
  EXPECT_NE(errorOf([&] { TargetSession s(t); }).find("does not load as Python"), std::string::npos);
}

TEST(Manifest, PinnedMockFieldsAreCheckedAgainstTheSchema) {
  const Target t =
      loadTarget(writeTemp("mk.json", target(R"(}, "flag_gems": {"kind": "mock", "mock": {"helper": "sometimes"})")));
  EXPECT_NE(errorOf([&] { TargetSession s(t); }).find("flag_gems.mock"), std::string::npos);
}

// A pin with the example installer, its hash as given, and a torch version.
std::string fixturePin(const std::string& name, const std::string& sha, const std::string& torch) {
  const json pin = {
      {"schema", "flagprop.pin/1"},
      {"name", name},
      {"torch", torch},
      {"torch_fl", {{"commit", "fixture"}, {"installer", kInstaller}, {"sha256", sha}}},
      {"flag_gems", {{"commit", "fixture"}, {"src", "/nonexistent/src"}, {"libentry_sha256", std::string(64, 'b')}}},
      {"routing", {{"accelerator", "dcu"}, {"routes_to_flaggems", true}}}};
  const std::string pinPath = writeTemp(name + ".pin.json", pin.dump());
  return writeTemp(name + ".target.json", json{{"schema", "flagprop.target/1"},
                                               {"name", name},
                                               {"pin", pinPath},
                                               {"flag_gems", {{"kind", "mock"}}},
                                               {"properties", {"P1"}},
                                               {"cases", 5}}
                                              .dump());
}

TEST(Pins, APinSuppliesTheInstallerItsHashAndTheGates) {
  const Target t = loadTarget(fixturePin("pin-ok", sha256File(kInstaller), ""));
  ASSERT_TRUE(t.pin.has_value());
  EXPECT_EQ(t.installer.path, kInstaller);
  EXPECT_EQ(t.installer.sha256, sha256File(kInstaller));
  ASSERT_TRUE(t.gates.has_value());
  EXPECT_EQ(t.gates->accelerator, "dcu");
  TargetSession s(t);
  EXPECT_TRUE(s.unverified().empty());
  EXPECT_EQ(s.provenance().at("pin").at("name"), "pin-ok");
}

TEST(Pins, AMismatchIsATargetErrorUnlessTheRunIsUnverified) {
  const Target t = loadTarget(fixturePin("pin-bad-hash", std::string(64, '0'), ""));
  const std::string e = errorOf([&] { TargetSession s(t); });
  EXPECT_NE(e.find("installer sha256 mismatch for " + kInstaller + ": expected " + std::string(64, '0') + ", saw "),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  TargetSession unverified(t, true);
  ASSERT_EQ(unverified.unverified().size(), 1u);
  const Target v = loadTarget(fixturePin("pin-bad-torch", sha256File(kInstaller), "0.0.1"));
  EXPECT_NE(errorOf([&] { TargetSession s(v); }).find(", the pin pin-bad-torch names 0.0.1"), std::string::npos);
}

TEST(Pins, FieldsThePinSuppliesMayNotBeGivenTwice) {
  const std::string path = fixturePin("pin-twice", sha256File(kInstaller), "");
  json j = json::parse(readFile(path));
  j["installer"] = {{"path", kInstaller}};
  EXPECT_NE(errorOf([&] { parseTarget(j, "m.json", "/"); }).find("'installer.path' comes from the pin"),
            std::string::npos);
  j.erase("installer");
  const std::string badPin = writeTemp("bad.pin.json", R"({"schema": "flagprop.pin/1", "name": "x", "torch_fl": {}})");
  j["pin"] = badPin;
  EXPECT_NE(errorOf([&] { parseTarget(j, "m.json", "/"); }).find(badPin + ": needs the sections"), std::string::npos);
}

TEST(Manifest, MatrixExpandsRelativeToItself) {
  const auto paths = expandManifest(defaultManifest());
  ASSERT_EQ(paths.size(), 32u);
  for (const auto& p : paths) EXPECT_TRUE(fs::exists(p)) << p;
}

}  // namespace
}  // namespace flagprop
