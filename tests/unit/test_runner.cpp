// The runner's pieces alone: how the watch reads a case's compile stamp,
// what a case that ended its process is recorded as, and the per-case
// record files it reads.
#include "catalog/catalog.h"
#include "core/files.h"
#include "runner/runner.h"
#include "targets/manifest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// overwriteFile (the in-flight record and the stage file, written at every
// case): whatever the file held before, longer, shorter or the same length,
// or after someone else grew or unlinked it, it holds exactly the
// new text.
TEST(Records, AnOverwrittenFileHoldsExactlyTheNewText) {
  const std::string path =
      (fs::temp_directory_path() / ("flagprop-test-overwrite-" + std::to_string(getpid()))).string();
  fs::remove(path);
  for (const std::string text : {"a longer first text", "short", "", "xy", "xy", "a longer text again", ""}) {
    flagprop::overwriteFile(path, text);
    EXPECT_EQ(flagprop::readFile(path), text);
  }
  flagprop::overwriteFile(path, "0123456789");
  std::ofstream(path, std::ios::app) << "written by another";  // grown behind the writer's back
  flagprop::overwriteFile(path, "abc");
  EXPECT_EQ(flagprop::readFile(path), "abc");
  fs::remove(path);  // unlinked: a fresh file under the name
  flagprop::overwriteFile(path, "after unlink");
  EXPECT_EQ(flagprop::readFile(path), "after unlink");
  fs::remove(path);
}

// The watch's reading of a compile stamp (runner.h, stageCompileAge): a
// stamp written a moment ago reads as 0 s old even where its text was rounded
// up past the reader's clock (which once stopped a case that was still
// compiling as a hang: 16 of 25,236 reads of a "%.3f" stamp were ahead);
// an old stamp reads as its age; no stamp, or one far ahead (not this
// clock's), as -1.
TEST(Watch, AStampRoundedUpPastTheClockIsJustWrittenNotMissing) {
  const std::string path = (fs::temp_directory_path() / ("flagprop-stamp-" + std::to_string(getpid()))).string();
  const auto writeStamp = [&](const std::string& stamp) {
    std::ofstream f(path, std::ios::trunc);
    f << "device          " << stamp;
  };
  const auto nowPlus = [](double s) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() + s);
    return std::string(text);
  };
  writeStamp(nowPlus(0.5));  // within the slack: a rounded stamp read at once is ahead by as much as 0.0005 s
  const double ahead = flagprop::stageCompileAge(path);
  EXPECT_GE(ahead, 0.0);
  EXPECT_LT(ahead, 0.5);
  writeStamp(nowPlus(-2.0));
  const double old = flagprop::stageCompileAge(path);
  EXPECT_GT(old, 1.9);
  EXPECT_LT(old, 10.0);
  writeStamp(nowPlus(60.0));
  EXPECT_EQ(flagprop::stageCompileAge(path), -1);
  writeStamp("");
  EXPECT_EQ(flagprop::stageCompileAge(path), -1);
  EXPECT_EQ(flagprop::readStage(path), "device");
  fs::remove(path);
  EXPECT_EQ(flagprop::stageCompileAge(path), -1);
}

// A case that ended its process is recorded with the judging of the entry
// its run used: a target calling ATen runs log in int32 by the entry derived
// from log's schema (the hand-written one takes floating dtypes only), and
// the crash's result, whose reproducer judges by it, carries that schema.
TEST(Crash, ACrashedCaseIsJudgedByTheEntryItsRunUsed) {
  const flagprop::Target aten =
      flagprop::loadTarget(std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/targets/aten-cpu-flaggems-overloads.json");
  const json fly = {{"key", "P5/log/int32"}, {"case", {{"op", "log"}, {"dtype", "int32"}, {"calls", json::array()}}}};
  const flagprop::PropertyOutcome o = flagprop::crashOutcome(fly, "target process died with signal 11", aten);
  EXPECT_EQ(o.op, "log");
  EXPECT_EQ(o.dtype, "int32");
  const std::string schema = o.judging.value("schema", "");
  EXPECT_EQ(schema, json(flagprop::opIn("log", "int32", true)->judging).value("schema", ""));
  EXPECT_NE(schema, "");
  EXPECT_EQ(flagprop::findOp("log")->judging.schema, "");  // the entry findOp gives would lose it
  const json floating = {{"key", "P5/log/float32"}, {"case", fly.at("case")}};
  EXPECT_EQ(flagprop::crashOutcome(floating, "target process died with signal 11", aten).judging.value("schema", ""),
            "");
}

}  // namespace
