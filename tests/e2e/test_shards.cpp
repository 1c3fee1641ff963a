// A run split across hosts (`flagprop run --shard I/N`) and merged back
// (`flagprop merge`): the merged report is the whole run's, result by
// result; a missing part is named and fails; parts that overlap or belong to
// other runs are refused.
#include "core/files.h"
#include "tests/e2e/shell.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kFp = FLAGPROP_BINARY;
const std::string kTargets = std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/targets/";

using flagprop::e2e::load;
using flagprop::e2e::sh;

// target name + " " + run key -> status, of a report.
std::map<std::string, std::string> statuses(const json& report) {
  std::map<std::string, std::string> out;
  for (const auto& t : report.at("targets"))
    for (const auto& r : t.at("results"))
      out[t.at("name").get<std::string>() + " " + r.at("key").get<std::string>()] = r.at("status");
  return out;
}

// Test cases counted over the JUnit files of a report folder.
int junitTests(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "junit")) {
    const std::string x = flagprop::readFile(e.path().string());
    for (size_t at = 0; (at = x.find("<testcase ", at)) != std::string::npos; ++at) ++n;
  }
  return n;
}

TEST(Shards, ThreePartsMergedAreTheWholeRun) {
  const fs::path dir = fs::temp_directory_path() / ("flagprop-test-shards-" + std::to_string(getpid()));
  flagprop::removeTree(dir.string());
  const std::string run = kFp + " run --no-db --seed 5 --explicit 4 --manifest " + kTargets + "well-behaved.json" +
                          " --manifest " + kTargets + "ops-two-faults.json --manifest " + kTargets +
                          "ops-returns-view.json --manifest " + kTargets + "r5-silent-skip.json";
  std::string out;
  ASSERT_EQ(sh(run + " --report-dir " + (dir / "whole").string(), &out), 0) << out;
  for (int i = 1; i <= 3; ++i)
    ASSERT_EQ(
        sh(run + " --shard " + std::to_string(i) + "/3 --report-dir " + (dir / ("part" + std::to_string(i))).string(),
           &out),
        0)
        << out;
  const std::string parts = (dir / "part1").string() + " " + (dir / "part2").string() + " " + (dir / "part3").string();
  ASSERT_EQ(sh(kFp + " merge " + parts + " --report-dir " + (dir / "merged").string(), &out), 0) << out;
  const json whole = load(dir / "whole" / "report.json"), merged = load(dir / "merged" / "report.json");
  EXPECT_EQ(statuses(merged), statuses(whole)) << "the merged parts are the whole run, result by result";
  size_t results = 0;
  for (const auto& t : merged.at("targets"))
    for (const auto& r : t.at("results")) {
      ++results;
      EXPECT_TRUE(r.contains("shard")) << r.dump();
    }
  EXPECT_EQ(junitTests(dir / "merged"), static_cast<int>(results)) << "JUnit counts every result once";
  EXPECT_EQ(merged.at("provenance").at("merged").at("count"), 3);
  EXPECT_TRUE(merged.at("provenance").at("merged").at("missing").empty());
  // A part missing: named in the verdict, exit 1.
  ASSERT_EQ(sh(kFp + " merge " + (dir / "part1").string() + " " + (dir / "part3").string() + " --report-dir " +
                   (dir / "merged2").string(),
               &out),
            1)
      << out;
  EXPECT_NE(out.find("verdict: part(s) 2 of 3 missing"), std::string::npos) << out;
  // A part given twice, or a part of another run: refused.
  EXPECT_EQ(sh(kFp + " merge " + (dir / "part1").string() + " " + (dir / "part1").string() + " --report-dir " +
                   (dir / "merged3").string(),
               &out),
            2)
      << out;
  EXPECT_NE(out.find("part 1 is given twice"), std::string::npos) << out;
  EXPECT_EQ(sh(kFp + " merge " + (dir / "part1").string() + " " + (dir / "whole").string() + " --report-dir " +
                   (dir / "merged4").string(),
               &out),
            2)
      << out;
  EXPECT_NE(out.find("not one run"), std::string::npos) << out;
  flagprop::removeTree(dir.string());
}

}  // namespace
