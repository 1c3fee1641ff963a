// P9 A/B timing: its calibration against a known host delay on a virtual
// clock, and its refusals where the patch is not active or never taken.
#include "core/files.h"
#include "tests/fixture_sessions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace flagprop {
namespace {

json hostTiming(TargetSession& s) {
  Selection sel;
  sel.properties = {"P9/tanh/float32"};
  const auto runs = opRuns(s, {findProperty("P9")}, sel);
  const auto o = runProperty(runs.at(0), test::fixedSeed(1));
  EXPECT_EQ(o.status, "pass") << o.reason;
  return o.observations.at("timing").at("summary").at("host");
}

// The 10th percentile of what the mock's stock runs took since
// `clearStockRuns`, µs per call, from entry to return: the same statistic
// as P9's p10_delta_us, which a loaded or noisy host disturbs least.
double p10StockRunUs() {
  py::gil_scoped_acquire gil;
  auto took = py::module_::import("flagprop_mocks.libentry").attr("STOCK_RUN_US").cast<std::vector<double>>();
  if (took.empty()) return 0;
  std::nth_element(took.begin(), took.begin() + took.size() / 10, took.end());
  return took[took.size() / 10];
}

void clearStockRuns() {
  py::gil_scoped_acquire gil;
  py::module_::import("flagprop_mocks.libentry").attr("STOCK_RUN_US").attr("clear")();
}

// Replaces Python's time.perf_counter, for its lifetime, with a virtual
// clock that moves one tick (2^-20 s, about 0.95 µs: a binary fraction, so
// sums of ticks are exact) each time it is read. Host time is then a count
// of reads: the same on an idle machine and a loaded one.
class VirtualClock {
 public:
  static constexpr double kTickUs = 1e6 / (1 << 20);
  VirtualClock() {
    py::gil_scoped_acquire gil;
    time_ = py::module_::import("time");
    real_ = time_.attr("perf_counter");
    py::dict scope;
    py::exec(R"(
import itertools
_ticks = itertools.count(1)
def perf_counter():
    return next(_ticks) / 1048576.0
)",
             scope);
    time_.attr("perf_counter") = scope["perf_counter"];
  }
  ~VirtualClock() {
    py::gil_scoped_acquire gil;
    time_.attr("perf_counter") = real_;
  }
  VirtualClock(const VirtualClock&) = delete;
  VirtualClock& operator=(const VirtualClock&) = delete;

 private:
  py::object time_, real_;
};

// P9's calibration: the mock's stock run spends a known delay per call
// (100 µs asked, spun on the clock) that the fast run skips. Patch off minus
// patch on, less the same difference without the delay, must equal the
// delay's whole cost to the stock path: the stock run with the delay less
// the one without (10th percentiles, as P9's delta), measured inside the
// mock. On the virtual clock both sides are exact counts, so they must agree
// to a tick per call; a P9 that swapped A and B, timed outside its loop,
// divided by the wrong number of calls or paired the wrong samples would
// not. (The same calibration on the real clock is a figure that
// flagprop_bench prints, not a test: a loaded CI host moves it by 10 %.)
TEST(Timing, P9MeasuresAKnownHostDelayToATickOnAVirtualClock) {
  auto& delayed = test::fixtureSession("ops-timing-calibration");
  json j = json::parse(readFile(fixturesDir() + "/targets/ops-timing-calibration.json"));
  const double asked = j["flag_gems"]["mock"]["run_delay_us"].get<double>();
  ASSERT_GE(asked, 50.0) << "the calibration needs a delay long enough to dwarf the Python around it";
  j["flag_gems"]["mock"]["run_delay_us"] = 0;
  j["name"] = "timing-baseline";
  TargetSession baseline(parseTarget(j, fixturesDir() + "/targets/baseline.json", fixturesDir() + "/targets"));
  baseline.setupOps({});
  VirtualClock clock;
  clearStockRuns();
  const double withDelay = hostTiming(delayed).at("p10_delta_us").get<double>();
  const double slow = p10StockRunUs();
  clearStockRuns();
  const double without = hostTiming(baseline).at("p10_delta_us").get<double>();
  const double fast = p10StockRunUs();
  ASSERT_GE(slow, asked) << "the mock's delayed runs did not run (or not for the delay asked)";
  ASSERT_LT(fast, asked) << "the baseline's stock runs spun the delay too";
  const double delta = withDelay - without, cost = slow - fast;
  RecordProperty("measured_us", std::to_string(delta));
  RecordProperty("cost_us", std::to_string(cost));
  EXPECT_GE(delta, asked - VirtualClock::kTickUs);
  EXPECT_NEAR(delta, cost, VirtualClock::kTickUs) << "with the delay minus without, µs: " << withDelay << " - "
                                                  << without << " (cost " << slow << " - " << fast << ")";
}

TEST(Timing, P9RefusesWhenThePatchIsNotActiveAndSaysWhy) {
  const auto o = test::runFixtureOp("ops-timing-refused", "P9", "tanh", "float32", 1);
  EXPECT_EQ(o.status, "skip");
  EXPECT_NE(o.reason.find("refused: P1 does not show the patch active"), std::string::npos) << o.reason;
  const auto never = test::runFixtureOp("ops-never-fast", "P9", "tanh", "float32", 1);
  EXPECT_EQ(never.status, "skip");
  EXPECT_NE(never.reason.find("refused: P8 shows no fast hits"), std::string::npos) << never.reason;
}

}  // namespace
}  // namespace flagprop
