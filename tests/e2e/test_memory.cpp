// Memory across runs: the example database (--db), flaky verdicts and
// `flagprop diff`, end to end through the CLI.
#include "core/files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Runs `cmd` in a shell; its exit status, its stdout and stderr in `out`.
int sh(const std::string& cmd, std::string* out = nullptr) {
  static int n = 0;
  const std::string log = (fs::temp_directory_path() /
                           ("flagprop-test-memory-" + std::to_string(getpid()) + "-" + std::to_string(++n) + ".log"))
                              .string();
  const int rc = std::system((cmd + " >" + log + " 2>&1").c_str());
  std::stringstream ss;
  {
    std::ifstream in(log);
    ss << in.rdbuf();
  }
  fs::remove(log);
  if (out) *out = ss.str();
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

json load(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// A fresh folder for one test.
fs::path scratch(const std::string& what) {
  const fs::path d = fs::temp_directory_path() / ("flagprop-test-memory-" + what + "-" + std::to_string(getpid()));
  flagprop::removeTree(d.string());
  fs::create_directories(d);
  return d;
}

const std::string kFixtures = std::string(FLAGPROP_SOURCE_DIR) + "/fixtures";

// Fixture manifest `file` (fixtures/targets/) with its installer and ops
// paths made absolute, to be written elsewhere.
json fixtureManifest(const std::string& file) {
  json m = load(kFixtures + "/targets/" + file);
  m["ops"]["path"] = kFixtures + "/ops/example_ops.py";
  m["installer"]["path"] = kFixtures + "/installers/example_installer.py";
  return m;
}

// fixtures/targets/ops-sum-drops-element.json with its op's fault on or off
// (same target name: the "fixed" version of the same target), written into
// `dir` with absolute paths.
fs::path sumManifest(const fs::path& dir, bool fault) {
  json m = fixtureManifest("ops-sum-drops-element.json");
  m["ops"]["globals"]["FAULTS"] = fault ? json::array({"sum_drops_element"}) : json::array();
  m["properties"] = {"P5"};
  m["dtypes"] = {"float32"};  // one run: the fixture itself also runs float16 and bfloat16
  m["expect"] = fault ? json{{"P5", "fail"}} : json::object();
  const fs::path p = dir / (fault ? "sum-fault.json" : "sum-fixed.json");
  std::ofstream(p) << m.dump(2);
  return p;
}

std::string run(const fs::path& manifest, const fs::path& db, const fs::path& report, int seed) {
  return std::string(FLAGPROP_BINARY) + " run --manifest " + manifest.string() + " --db " + db.string() +
         " --report-dir " + report.string() + " --seed " + std::to_string(seed);
}

size_t filesIn(const fs::path& dir, const std::string& suffix = ".json") {
  size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().string().size() > suffix.size() &&
        it->path().string().compare(it->path().string().size() - suffix.size(), suffix.size(), suffix) == 0)
      ++n;
  return n;
}

const json& onlyResult(const json& report) { return report.at("targets").at(0).at("results").at(0); }

}  // namespace

// A failure is stored; the next run judges it first and fails on it without
// a search; once the fault is gone the run says fixed, when and where the
// example was stored, and forgets it; `flagprop diff` between those runs
// shows exactly that one change and exits as it should.
TEST(Memory, AStoredFailureIsReplayedFirstThenReportedFixed) {
  const fs::path d = scratch("replay"), db = d / "db";
  const fs::path faulty = sumManifest(d, true), fixed = sumManifest(d, false);
  std::string out;
  ASSERT_EQ(sh(run(faulty, db, d / "r1", 5), &out), 0) << out;
  const json r1 = load(d / "r1/report.json");
  const json& first = onlyResult(r1);
  EXPECT_EQ(first.value("status", ""), "fail");
  // A steady failure is judged again and fails every time: not flaky.
  EXPECT_EQ(first.at("observations").at("replays").value("failed", 0),
            first.at("observations").at("replays").value("of", -1));
  const int stored = r1.at("summary").at("db").value("stored", 0);
  EXPECT_GE(stored, 1);
  EXPECT_EQ(filesIn(db), static_cast<size_t>(stored));
  EXPECT_NE(out.find("example database " + db.string() + ": 0 replayed"), std::string::npos) << out;

  ASSERT_EQ(sh(run(faulty, db, d / "r2", 6), &out), 0) << out;
  const json r2 = load(d / "r2/report.json");
  const json& again = onlyResult(r2);
  EXPECT_EQ(again.value("status", ""), "fail");
  EXPECT_EQ(again.value("cases_run", 0), 1) << "no search after the stored example failed";
  EXPECT_TRUE(again.at("observations").at("db").contains("still_failing"));
  EXPECT_NE(again.value("reason", "").find("the stored example of"), std::string::npos);
  EXPECT_EQ(r2.at("summary").at("db").value("still_failing", 0), 1);
  EXPECT_EQ(r2.at("summary").at("db").value("stored", -1), 0) << "the replayed example is stored already";
  EXPECT_EQ(filesIn(db), static_cast<size_t>(stored));

  ASSERT_EQ(sh(run(fixed, db, d / "r3", 6), &out), 0) << out;
  const json r3 = load(d / "r3/report.json");
  const json& now = onlyResult(r3);
  EXPECT_EQ(now.value("status", ""), "pass");
  const json fixedList = now.at("observations").at("db").at("fixed");
  EXPECT_EQ(fixedList.size(), static_cast<size_t>(stored));
  for (const auto& f : fixedList) {
    EXPECT_EQ(f.value("stored_in", ""), (d / "r1").string());
    EXPECT_FALSE(f.value("stored_at", "").empty());
  }
  EXPECT_EQ(r3.at("summary").at("db").value("fixed", 0), stored);
  EXPECT_EQ(filesIn(db), 0u) << "a fixed example is forgotten";
  const std::string md = flagprop::readFile((d / "r3/report.md").string());
  EXPECT_NE(md.find("Stored examples that no longer fail"), std::string::npos);

  // diff: r1 (fail) -> r3 (pass) is one fixed result; the reverse one new failure (exit 1).
  const std::string diff = std::string(FLAGPROP_BINARY) + " diff ";
  ASSERT_EQ(sh(diff + (d / "r1").string() + " " + (d / "r3").string() + " --out " + (d / "d13").string(), &out), 0)
      << out;
  const json d13 = load(d / "d13/diff.json");
  ASSERT_EQ(d13.at("changes").size(), 1u) << d13.dump(1);
  EXPECT_EQ(d13.at("changes").at(0).value("class", ""), "fixed");
  EXPECT_EQ(d13.at("changes").at(0).value("key", ""), "P5/sum.dim_IntList/float32");
  EXPECT_TRUE(fs::is_regular_file(d / "d13/diff.md") && fs::is_regular_file(d / "d13/diff.html"));
  ASSERT_EQ(sh(diff + (d / "r3").string() + " " + (d / "r1").string() + " --out " + (d / "d31").string(), &out), 1)
      << out;
  const json d31 = load(d / "d31/diff.json");
  ASSERT_EQ(d31.at("changes").size(), 1u);
  EXPECT_EQ(d31.at("changes").at(0).value("class", ""), "new failure");
  EXPECT_FALSE(d31.at("changes").at(0).value("replay", "").empty()) << "a new failure comes with its replay command";
  EXPECT_NE(out.find("new failure 1"), std::string::npos) << out;
  // r1 and r2 both fail the same way: nothing changed.
  ASSERT_EQ(sh(diff + (d / "r1").string() + " " + (d / "r2").string() + " --out " + (d / "d12").string(), &out), 0)
      << out;
  EXPECT_TRUE(load(d / "d12/diff.json").at("changes").empty()) << out;
  // Bad input is a one-line usage error.
  EXPECT_EQ(sh(diff + d.string() + " " + (d / "r1").string() + " --out " + (d / "dx").string(), &out), 2);
  EXPECT_NE(out.find("holds no report.json"), std::string::npos) << out;
  EXPECT_EQ(sh(diff + (d / "r1").string() + " --bogus", &out), 2);
  EXPECT_NE(out.find("unknown option '--bogus'"), std::string::npos) << out;
  // A report.json of the right schema and the wrong shape is bad input (2), not a "new failure" (1).
  fs::create_directories(d / "odd");
  std::ofstream(d / "odd/report.json")
      << R"({"schema": "flagprop.report/1", "targets": [{"name": "x", "results": [{"key": 7}]}]})";
  EXPECT_EQ(sh(diff + (d / "r1").string() + " " + (d / "odd").string() + " --out " + (d / "dodd").string(), &out), 2)
      << out;
  EXPECT_NE(out.find("not a result document"), std::string::npos) << out;
  flagprop::removeTree(d.string());
}

// Two runs at once on one database: every example either stores is there,
// and no temporary file is left.
TEST(Memory, TwoRunsAtOnceOnOneDatabaseLoseNothing) {
  const fs::path d = scratch("concurrent"), db = d / "db";
  const fs::path faulty = sumManifest(d, true);
  const std::string two = kFixtures + "/targets/ops-two-faults.json";
  std::string out;
  const int rc =
      sh("(" + run(faulty, db, d / "a", 11) + " > " + (d / "a.log").string() + " 2>&1 & " +
             std::string(FLAGPROP_BINARY) + " run --manifest " + two + " --db " + db.string() + " --report-dir " +
             (d / "b").string() + " --seed 12 > " + (d / "b.log").string() + " 2>&1 & wait)",
         &out);
  ASSERT_EQ(rc, 0) << out;
  const json a = load(d / "a/report.json"), b = load(d / "b/report.json");
  const int storedA = a.at("summary").at("db").value("stored", 0),
            storedB = b.at("summary").at("db").value("stored", 0);
  EXPECT_GE(storedA, 1);
  EXPECT_GE(storedB, 1);
  EXPECT_EQ(filesIn(db / "fixture-ops-sum-drops-element@cpu"), static_cast<size_t>(storedA));
  EXPECT_EQ(filesIn(db / "fixture-ops-two-faults@cpu"), static_cast<size_t>(storedB));
  EXPECT_EQ(filesIn(db, ".tmp"), 0u);
  // Each stored file is a whole example document.
  for (const auto& e : fs::recursive_directory_iterator(db))
    if (e.is_regular_file()) {
      const json ex = load(e.path());
      EXPECT_EQ(ex.value("schema", ""), "flagprop.example/1");
      EXPECT_TRUE(ex.contains("case") && ex.contains("stored_at") && ex.contains("identity")) << e.path();
    }
  flagprop::removeTree(d.string());
}

// A fault that does not recur when its case is judged again is flaky, with
// its tally: never a plain pass or fail. --no-db leaves no database.
TEST(Memory, AFaultThatDoesNotRecurIsReportedFlakyWithItsTally) {
  const fs::path d = scratch("flaky");
  std::string out;
  const std::string cmd = std::string(FLAGPROP_BINARY) + " run --manifest " + kFixtures + "/targets/ops-flaky.json" +
                          " --property P5 --no-db --report-dir " + (d / "r").string() + " --seed 3";
  ASSERT_EQ(sh(cmd, &out), 0) << out;  // the manifest expects flaky
  const json r = load(d / "r/report.json");
  const json& res = onlyResult(r);
  EXPECT_EQ(res.value("status", ""), "flaky");
  const json tally = res.at("observations").at("replays");
  EXPECT_GE(tally.value("failed", 0), 1);
  EXPECT_LT(tally.value("failed", 0), tally.value("of", 0));
  EXPECT_EQ(res.value("reason", "")
                .rfind("flaky: the case failed " + std::to_string(tally.value("failed", 0)) + " of the " +
                           std::to_string(tally.value("of", 0)),
                       0),
            0u)
      << res.value("reason", "");
  // Judged first in a fresh process too, where it held.
  ASSERT_TRUE(res.at("observations").contains("fresh")) << res.dump();
  EXPECT_FALSE(res.at("observations").at("fresh").value("failed", true));
  EXPECT_EQ(tally.value("of", 0), 8);  // found, 3 more in its process, 1 first in a fresh one and 3 more there
  EXPECT_NE(res.value("reason", "").find("4 of them in a fresh process"), std::string::npos) << res.value("reason", "");
  EXPECT_EQ(r.at("summary").at("results").value("flaky", 0), 1);
  EXPECT_FALSE(r.at("summary").contains("db"));
  EXPECT_NE(out.find(": P5 flaky 1/1 ("), std::string::npos) << out;  // as the manifest expects: its cell alone
  // A manifest that expects a plain fail sees an unexpected result.
  json m = fixtureManifest("ops-flaky.json");
  m["expect"] = {{"P5", "fail"}};
  std::ofstream(d / "expects-fail.json") << m.dump(2);
  EXPECT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + (d / "expects-fail.json").string() +
                   " --property P5 --no-db --report-dir " + (d / "r2").string() + " --seed 3",
               &out),
            1)
      << out;
  EXPECT_NE(out.find("FLAKY P5 numerics · mean.dim float32 (unexpected)"), std::string::npos) << out;
  flagprop::removeTree(d.string());
}

// A fault of every process's first call (first_call_mean: right when judged
// again in its process) fails again when judged first in a fresh process,
// and only then: a plain fail, with the fresh judgings in its tally, never
// flaky.
TEST(Memory, AFaultOfEveryFirstCallIsAFailNotFlaky) {
  const fs::path d = scratch("first-call");
  json m = fixtureManifest("ops-flaky.json");
  m["name"] = "fixture-ops-first-call";
  m["ops"]["globals"]["FAULTS"] = {"first_call_mean"};
  m["expect"] = {{"P5", "fail"}};
  std::ofstream(d / "first-call.json") << m.dump(2);
  std::string out;
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + (d / "first-call.json").string() +
                   " --property P5 --no-db --report-dir " + (d / "r").string() + " --seed 3",
               &out),
            0)
      << out;
  const json r = load(d / "r/report.json");
  const json& res = onlyResult(r);
  EXPECT_EQ(res.value("status", ""), "fail") << res.value("reason", "");
  ASSERT_TRUE(res.at("observations").contains("fresh")) << res.dump();
  EXPECT_TRUE(res.at("observations").at("fresh").value("failed", false));
  const json tally = res.at("observations").at("replays");
  EXPECT_EQ(tally.value("failed", 0), 2);  // found, and first in the fresh process
  EXPECT_EQ(tally.value("of", 0), 8);
  EXPECT_NE(res.value("reason", "").find("a fault of the first call in every process"), std::string::npos)
      << res.value("reason", "");
  EXPECT_FALSE(res.value("reproducer", "").empty()) << res.dump();
  flagprop::removeTree(d.string());
}

// `flagprop diff REPORT --pins A B` pairs the targets of two pins of one
// matrix run by name and shows what differs; report.html shows the same
// table across the pins.
TEST(Memory, DiffBetweenTwoPinsOfOneRun) {
  const fs::path d = scratch("pins");
  auto target = [](const std::string& pin, const json& results) {
    return json{{"name", "pin-" + pin + "-cpu-mocks"},
                {"status", "ok"},
                {"manifest", "m.json"},
                {"provenance", {{"pin", {{"name", pin}}}}},
                {"results", results}};
  };
  auto res = [](const std::string& key, const std::string& status, const std::string& reason) {
    return json{
        {"key", key}, {"property", key}, {"status", status}, {"reason", reason}, {"observations", json::object()}};
  };
  const json report = {{"schema", "flagprop.report/1"},
                       {"provenance", json::object()},
                       {"summary", {{"results", json::object()}, {"unexpected", json::array()}, {"target_errors", 0}}},
                       {"targets",
                        {target("r5", {res("P1", "fail", "silent-skip: the helper is missing"),
                                       res("P2", "pass", "100 held"), res("P3", "skip", "not active")}),
                         target("latest", {res("P1", "pass", "100 held"), res("P2", "pass", "100 held"),
                                           res("P3", "pass", "100 held")})}}};
  fs::create_directories(d / "m");
  std::ofstream(d / "m/report.json") << report.dump();
  std::string out;
  const std::string diff = std::string(FLAGPROP_BINARY) + " diff " + (d / "m").string();
  ASSERT_EQ(sh(diff + " --pins r5 latest --out " + (d / "d").string(), &out), 0) << out;
  const json dj = load(d / "d/diff.json");
  ASSERT_EQ(dj.at("changes").size(), 2u) << dj.dump(1);
  std::set<std::string> seen;
  for (const auto& c : dj.at("changes")) seen.insert(c.value("key", "") + " " + c.value("class", ""));
  EXPECT_EQ(seen, (std::set<std::string>{"P1 fixed", "P3 coverage gained"}));
  EXPECT_EQ(dj.at("changes").at(0).value("target", ""), "pin-{pin}-cpu-mocks");
  EXPECT_EQ(sh(diff + " --pins latest r5 --out " + (d / "d2").string(), &out), 1) << out;
  EXPECT_EQ(sh(diff + " --pins r5 r7 --out " + (d / "d3").string(), &out), 2) << out;
  EXPECT_NE(out.find("no target of pin 'r7'"), std::string::npos) << out;
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " html " + (d / "m").string(), &out), 0) << out;
  const std::string page = flagprop::readFile((d / "m/report.html").string());
  EXPECT_NE(page.find("Across the pins"), std::string::npos);
  EXPECT_NE(page.find("coverage gained"), std::string::npos);
  flagprop::removeTree(d.string());
}

// A case a target process died on is judged once more in the fresh process
// that goes on: a death that recurs is a confirmed crash (the segfault
// fixture, every time), one that does not is flaky (CRASH_ONCE: the op dies
// only the first time).
TEST(Memory, ADeathThatDoesNotRecurInAFreshProcessIsFlaky) {
  const fs::path d = scratch("crash-once");
  json m = fixtureManifest("ops-segfault.json");
  m["ops"]["globals"] = {{"FAULTS", json::array()}, {"CRASH_ONCE", (d / "crashed-once").string()}};
  m["catalog"] = {"rsqrt"};
  m["properties"] = {"P5"};
  m["expect"] = {{"P5", "flaky"}};
  std::ofstream(d / "crash-once.json") << m.dump(2);
  std::string out;
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + (d / "crash-once.json").string() +
                   " --no-db --report-dir " + (d / "r").string() + " --seed 4",
               &out),
            0)
      << out;
  EXPECT_TRUE(fs::exists(d / "crashed-once")) << "the op died once";
  const json r = load(d / "r/report.json");
  const json& res = onlyResult(r);
  EXPECT_EQ(res.value("status", ""), "flaky");
  EXPECT_NE(res.value("reason", "").find("signal 11"), std::string::npos) << res.value("reason", "");
  EXPECT_EQ(res.at("observations").value("recurred", true), false);
  EXPECT_EQ(res.at("observations").at("replays"), (json{{"failed", 1}, {"of", 2}}));
  EXPECT_EQ(r.at("targets").at(0).at("crashes").size(), 1u);

  // The segfault fixture dies every time: confirmed, a plain fail.
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + kFixtures + "/targets/ops-segfault.json" +
                   " --op rsqrt --property P5 --no-db --report-dir " + (d / "s").string() + " --seed 4",
               &out),
            0)
      << out;
  const json s = load(d / "s/report.json");
  const json& died = onlyResult(s);
  EXPECT_EQ(died.value("status", ""), "fail");
  EXPECT_EQ(died.at("observations").value("recurred", false), true);
  EXPECT_NE(died.value("reason", "").find("and again when it was judged in a fresh process"), std::string::npos);
  flagprop::removeTree(d.string());
}

// A stored example that is broken, edited or of another run never decides a
// verdict: one whose case the harness cannot build, or of another dtype, is
// dropped (and the search runs and finds the real failure); a file with a
// field of the wrong type is skipped; a file that is not a whole example is
// written over when the run stores the same example.
TEST(Memory, ABrokenOrForeignStoredExampleNeverDecidesAVerdict) {
  const fs::path d = scratch("broken"), db = d / "db";
  const fs::path faulty = sumManifest(d, true);
  std::string out;
  ASSERT_EQ(sh(run(faulty, db, d / "r0", 5), &out), 0) << out;
  const fs::path folder = db / "fixture-ops-sum-drops-element@cpu";
  fs::path first;
  for (const auto& e : fs::directory_iterator(folder))
    if (load(e.path()).value("rank", -1) == 0) first = e.path();
  ASSERT_FALSE(first.empty());
  const json good = load(first);
  struct Variant {
    std::string name;
    std::function<void(json&)> edit;
    bool dropped;  // else skipped (not replayed at all)
  };
  const std::vector<Variant> variants = {
      {"case-empty", [](json& ex) { ex["case"] = json::object(); }, true},
      {"no-tensors", [](json& ex) { ex["case"]["calls"][0].erase("tensors"); }, true},
      {"other-dtype",
       [](json& ex) {
         ex["case"]["dtype"] = "float16";
         ex["case"]["calls"][0]["tensors"][0]["dtype"] = "float16";
       },
       true},
      // 10^10 elements (40 GB of float32) past the target's max_elements:
      // dropped before anything is built (else it would be allocated)
      {"too-large",
       [](json& ex) {
         ex["case"]["calls"][0]["tensors"][0]["shape"] = {100000, 100000};
         ex["case"]["calls"][0]["tensors"][0]["storage"] = 10000000000LL;
       },
       true},
      {"reason-int", [](json& ex) { ex["reason"] = 7; }, false},
      {"case-string", [](json& ex) { ex["case"] = "hello"; }, false},
  };
  int k = 0;
  for (const auto& v : variants) {
    flagprop::removeTree(db.string());
    fs::create_directories(folder);
    json ex = good;
    v.edit(ex);
    std::ofstream(folder / first.filename()) << ex.dump();
    const fs::path rep = d / ("r" + std::to_string(++k));
    ASSERT_EQ(sh(run(faulty, db, rep, 5), &out), 0) << v.name << out;  // seed 5: the search finds the same case
    const json r = load(rep / "report.json");
    const json& res = onlyResult(r);
    EXPECT_EQ(res.value("status", ""), "fail") << v.name;
    EXPECT_TRUE(res.at("observations").contains("seed")) << v.name << ": the search ran";
    EXPECT_FALSE(res.at("observations").contains("db") && res.at("observations").at("db").contains("still_failing"))
        << v.name;
    EXPECT_EQ(r.at("summary").at("db").value("still_failing", -1), 0) << v.name;
    EXPECT_EQ(r.at("summary").at("db").value("dropped", -1), v.dropped ? 1 : 0) << v.name;
    EXPECT_EQ(r.at("summary").at("db").value("replayed", -1), v.dropped ? 1 : 0) << v.name;
    if (v.name == "too-large")
      EXPECT_NE(res.dump().find("past the target's max_elements"), std::string::npos) << res.dump();
    // The run stored its own examples, the first written over the broken file.
    EXPECT_EQ(load(folder / first.filename()).at("case"), good.at("case")) << v.name;
  }
  flagprop::removeTree(d.string());
}

// A lost device context is judged again in a fresh process too: lost again
// is a confirmed fail, not lost again (LOSE_DEVICE_ONCE) is flaky.
TEST(Memory, ALostDeviceThatDoesNotRecurInAFreshProcessIsFlaky) {
  const fs::path d = scratch("lost-once");
  json m = fixtureManifest("ops-device-lost.json");
  m["ops"]["globals"] = {{"FAULTS", json::array()}, {"LOSE_DEVICE_ONCE", (d / "lost-once").string()}};
  m["properties"] = {"P5"};
  m["dtypes"] = {"float32"};
  m["expect"] = {{"P5", "flaky"}};
  std::ofstream(d / "lost-once.json") << m.dump(2);
  std::string out;
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + (d / "lost-once.json").string() +
                   " --no-db --report-dir " + (d / "r").string() + " --seed 4",
               &out),
            0)
      << out;
  const json report = load(d / "r/report.json");
  const json& res = onlyResult(report);
  EXPECT_EQ(res.value("status", ""), "flaky") << res.value("reason", "");
  EXPECT_NE(res.value("reason", "").find("the device context was lost"), std::string::npos) << res.value("reason", "");
  EXPECT_EQ(res.at("observations").at("replays"), (json{{"failed", 1}, {"of", 2}}));
  m["ops"]["globals"] = {{"FAULTS", {"device_lost"}}};
  m["expect"] = {{"P5", "fail"}};
  std::ofstream(d / "lost.json") << m.dump(2);
  ASSERT_EQ(sh(std::string(FLAGPROP_BINARY) + " run --manifest " + (d / "lost.json").string() +
                   " --no-db --report-dir " + (d / "s").string() + " --seed 4",
               &out),
            0)
      << out;
  const json again = load(d / "s/report.json");
  const json& lost = onlyResult(again);
  EXPECT_EQ(lost.value("status", ""), "fail");
  EXPECT_EQ(lost.at("observations").value("recurred", false), true);
  EXPECT_NE(lost.value("reason", "").find("and again when it was judged in a fresh process"), std::string::npos);
  flagprop::removeTree(d.string());
}
