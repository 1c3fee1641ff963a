// Coverage before depth (--budget): every op run first judges its cases
// with shrinking, distinct failures and replays off; only then is each
// failure searched again with the run's own settings, the same cases and
// then shrinking; a budget that ends first leaves the failure as found.
#include "core/files.h"
#include "tests/e2e/shell.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using json = nlohmann::json;
using flagprop::e2e::load;
using flagprop::e2e::sh;

namespace {

const std::string kFp = FLAGPROP_BINARY;
const std::string kTargets = std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/targets/";

fs::path scratch(const std::string& name) { return flagprop::e2e::scratch("budget-" + name); }

}  // namespace

// The edge-fault fixture under a budget it cannot exhaust: the console's
// run lines show every op run once before any is run a second time (the
// failures), and every failure in the report is the second pass's: shrunk,
// judged again, no first-pass mark.
TEST(Budget, EveryRunGetsItsFirstPassBeforeAnyFailureIsShrunk) {
  const fs::path d = scratch("first-pass");
  std::string out;
  ASSERT_EQ(sh(kFp + " run --no-db --seed 3 --cases 3 --budget 3600 --verbose --confirm-time 0 --manifest " + kTargets +
                   "ops-edge-faults.json --report-dir " + (d / "r").string(),
               &out),
            0)
      << out;
  std::map<std::string, int> seen;
  bool second = false;
  int repeated = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[fixture-ops-edge-faults] P", 0) != 0 || line.find(" ... ") == std::string::npos) continue;
    const std::string label = line.substr(0, line.find(" ... "));
    if (++seen[label] == 2) {
      second = true;
      ++repeated;
      EXPECT_NE(line.find(" ... fail"), std::string::npos) << line;  // only failures run again
    } else {
      EXPECT_FALSE(second) << "a first pass after a second: " << line;
    }
  }
  EXPECT_GE(repeated, 5) << out;
  EXPECT_NE(out.find("coverage before depth: "), std::string::npos) << out;
  const json report = load(d / "r/report.json");
  int failed = 0;
  for (const auto& r : report.at("targets").at(0).at("results")) {
    if (r.value("status", "") != "fail") continue;
    ++failed;
    EXPECT_FALSE(r.at("observations").value("first_pass", false)) << r.dump();
    EXPECT_TRUE(r.at("observations").contains("replays")) << r.dump();  // judged again in the second pass
  }
  EXPECT_EQ(failed, repeated);
  flagprop::removeTree(d.string());
}

// A budget that ends during the second pass (cumsum blocks once a result
// is written, hangs_after_a_result: the second pass never ends):
// the failure of the first pass stays as found, marked, with its
// reproducer, and the run says the budget cut it short.
TEST(Budget, AFailureTheBudgetLeftUnshrunkStaysAsFoundAndSaysSo) {
  const fs::path d = scratch("cut");
  json m = load(kTargets + "ops-edge-faults.json");
  m["name"] = "fixture-ops-second-pass-hangs";
  m["ops"]["path"] = std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/ops/edge_ops.py";
  m["ops"]["globals"] = {{"FAULTS", {"scan_0d", "hangs_after_a_result"}}};
  m["catalog"] = {"cumsum"};
  m["dtypes"] = {"float32"};
  m["properties"] = {"P5"};
  m["expect"] = {{"P5", "fail"}};
  flagprop::writeText((d / "m.json").string(), m.dump());
  std::string out;
  EXPECT_EQ(sh(kFp + " run --no-db --seed 3 --cases 3 --budget 30 --manifest " + (d / "m.json").string() +
                   " --report-dir " + (d / "r").string(),
               &out),
            1)
      << out;
  const json report = load(d / "r/report.json");
  const json& results = report.at("targets").at(0).at("results");
  ASSERT_EQ(results.size(), 1u) << out;
  const json& r = results.at(0);
  EXPECT_EQ(r.value("status", ""), "fail") << r.dump();
  EXPECT_TRUE(r.at("observations").value("first_pass", false)) << r.dump();
  EXPECT_NE(r.value("reason", "").find("[first pass of a budgeted run: not yet shrunk or judged again]"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(r.value("reproducer", ""))) << r.dump();
  EXPECT_NE(out.find("as first found; 1 target(s) cut short by the budget"), std::string::npos) << out;
  flagprop::removeTree(d.string());
}
