// ddmin (tools/confirm.h): the fewest earlier calls a history-dependent
// failure needs, from a test that says whether a subsequence still fails;
// and confirmAlone's verdicts from what its fresh processes answer.
#include "tools/confirm.h"

#include "core/files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sstream>

#include <unistd.h>

namespace {

std::vector<size_t> upTo(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

bool holds(const std::vector<size_t>& s, size_t x) { return std::find(s.begin(), s.end(), x) != s.end(); }

}  // namespace

// One poisoning call among 100: found alone, in about 2·log2(100) tests.
TEST(Ddmin, OneCallThatMattersIsFoundAloneInLogarithmicTests) {
  int tests = 0;
  const auto least = flagprop::ddmin(
      upTo(100), [&](const std::vector<size_t>& s) { return ++tests, holds(s, 42); }, 100);
  EXPECT_EQ(least, std::vector<size_t>({42}));
  EXPECT_LE(tests, 16);
}

// Two calls that matter only together (a cache filled by one, read stale by
// the other): both kept, in their order; the rest dropped.
TEST(Ddmin, TwoCallsThatMatterTogetherAreBothKeptInOrder) {
  const auto least = flagprop::ddmin(
      upTo(64), [](const std::vector<size_t>& s) { return holds(s, 7) && holds(s, 50); }, 200);
  EXPECT_EQ(least, std::vector<size_t>({7, 50}));
}

// Past its test budget it returns a subsequence that failed (the whole
// input at worst), never one that was not seen to fail.
TEST(Ddmin, PastItsBudgetItReturnsTheSmallestSeenToFail) {
  std::vector<std::vector<size_t>> failed = {upTo(40)};
  const auto least = flagprop::ddmin(
      upTo(40),
      [&](const std::vector<size_t>& s) {
        const bool f = holds(s, 3) && holds(s, 30);
        if (f) failed.push_back(s);
        return f;
      },
      3);
  EXPECT_TRUE(std::find(failed.begin(), failed.end(), least) != failed.end());
  EXPECT_TRUE(holds(least, 3) && holds(least, 30));
}

namespace {

// confirmAlone on one failing result whose process judged one call before
// it, each confirming process being a shell script that answers as the
// memo fixture would (fails after any earlier call, passes alone; fails
// also at its `aloneFailsAt`-th start) and, from its `silentFrom`-th start
// on, writes no verdict (a process that died, or the --confirm-time running
// out). Returns the result as confirmAlone left it.
flagprop::json confirmedWithSilenceFrom(int silentFrom, int aloneFailsAt = 0) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flagprop-test-confirm-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string count = (dir / "count").string(), history = (dir / "doc.json.history.1.jsonl").string();
  flagprop::writeText(history, R"({"key":"P5/add.Tensor/float32","kind":"op","case":{},"judging":{}})"
                               "\n");
  const std::string script = (dir / "target.sh").string();
  flagprop::writeText(script,
                      "n=$(( $(cat " + count + " 2>/dev/null || echo 0) + 1 )); echo $n > " + count +
                          "\n"
                          "while [ $# -gt 0 ]; do case $1 in --out) out=$2;; --confirm) ask=$2;; esac; shift; done\n"
                          "[ $n -ge " +
                          std::to_string(silentFrom) +
                          " ] && exit 0\n"
                          "if grep -q '\"prefix\":\\[\\]' \"$ask\"; then f=false; else f=true; fi\n"
                          "[ $n -eq " +
                          std::to_string(aloneFailsAt) +
                          " ] && f=true\n"
                          "echo \"{\\\"confirm\\\":{\\\"judged\\\":true,\\\"failed\\\":$f}}\" > \"$out\"\n");
  flagprop::json doc = {{"name", "t"},
                        {"manifest", (dir / "m.json").string()},
                        {"results",
                         {{{"key", "P10/add.Tensor/int64"},
                           {"status", "fail"},
                           {"reason", "wrong"},
                           {"counterexample", {{"calls", flagprop::json::array()}}},
                           {"observations", {{"history", {{"file", history}, {"calls", 1}}}}}}}}};
  flagprop::ConfirmOptions o;
  o.command = {"/bin/sh", script};
  o.seconds = 600;
  o.processSeconds = 60;
  std::ostringstream log;
  flagprop::confirmAlone(doc, (dir / "doc.json").string(), o, log);
  fs::remove_all(dir);
  return doc.at("results").at(0);
}

}  // namespace

// Starts: 1 alone (passes), 2 after the earlier call (fails), then the
// check of the tries each way: 3 alone, 4 and 5 after the call. Every
// answer in: history-dependent. A process that gives no verdict during the
// check is no pass: the result stays the failure it was, unjudged, never
// flaky (a run under load once called the memo fixture's P10 flaky so);
// nor does it hide flakiness the judged processes showed.
TEST(Confirm, AProcessWithoutAVerdictDecidesNothing) {
  const flagprop::json all = confirmedWithSilenceFrom(100);
  EXPECT_EQ(all.value("status", ""), "fail") << all.dump();
  EXPECT_TRUE(all.at("observations").at("alone").value("history_dependent", false)) << all.dump();
  for (const int silent : {2, 4, 5}) {
    const flagprop::json r = confirmedWithSilenceFrom(silent);
    EXPECT_EQ(r.value("status", ""), "fail") << silent << ": " << r.dump();
    EXPECT_EQ(r.value("reason", ""), "wrong") << silent << ": " << r.dump();
    EXPECT_FALSE(r.at("observations").at("alone").value("judged", true)) << silent << ": " << r.dump();
  }
  // Alone it passed once and failed once: flaky, whatever the unjudged
  // processes after the calls would have said.
  const flagprop::json flaky = confirmedWithSilenceFrom(4, 3);
  EXPECT_EQ(flaky.value("status", ""), "flaky") << flaky.dump();
  EXPECT_NE(flaky.value("reason", "").find("alone it failed 1 of 2 fresh processes, after the calls before it 0 of 0"),
            std::string::npos)
      << flaky.dump();
}
