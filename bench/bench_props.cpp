// Benchmark (not a test).
//   flagprop_bench [CASES] [OPS_MANIFEST]
// 1. Cases per second for P1-P4 on the CPU mocks, and the harness's own cost
//    per case in µs (sandbox + mock build + installer load, without
//    RapidCheck and without the property's checks).
// 2. P9's calibration on the real clock: the delay the mock's stock run
//    spends (fixtures/targets/ops-timing-calibration.json), as P9 measures
//    it and as the mock measures it from inside, in µs (the test of the
//    same on a virtual clock is exact; this is the figure a host gives).
// 3. P5 per catalog op and dtype on OPS_MANIFEST (default: stock ATen on the
//    CPU, fixtures/targets/aten-cpu.json; on a GPU host e.g.
//    matrix/targets/h200-flaggems-ops.json): cases per second, the share of
//    time in the CPU reference, in the op under test and in the harness (and
//    the harness's own parts: inputs, verdicts, sandbox, other), and
//    Triton compilations per 100 cases.
#include "catalog/catalog.h"
#include "core/files.h"
#include "core/sandbox.h"
#include "suites/registry.h"
#include "targets/manifest.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>

using namespace flagprop;

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

RunOptions benchOptions(int cases) {
  RunOptions o;
  o.cases = cases;
  o.seed = 1;
  return o;
}

void installerProperties(TargetSession& s, int cases) {
  std::printf("flagprop_bench: %d generated cases per property, well-behaved fixture, CPU mocks\n", cases);
  std::printf("%-4s %-18s %10s %12s %8s\n", "id", "property", "cases/s", "us/case", "status");
  for (const auto& d : properties()) {
    if (d.scope != PropertyDef::Scope::Installer) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const PropertyOutcome r = runProperty(installerRun(s, d), benchOptions(cases));
    const double sec = secondsSince(t0);
    std::printf("%-4s %-18s %10.0f %12.1f %8s\n", d.id.c_str(), d.title.c_str(), r.casesRun / sec,
                1e6 * sec / std::max(r.casesRun, 1), r.status.c_str());
  }
}

// The per-case fixed work: the sandbox, and the sandbox with the mock build
// and the installer load (no installer call, no checks).
void harnessCost(TargetSession& s, int cases) {
  py::gil_scoped_acquire gil;
  const int n = cases * 3;
  const py::module_ session = pyImport("flagprop.engine.session");
  const py::object target = fromJson(s.targetJson());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) Sandbox sb;
  const double sandboxUs = 1e6 * secondsSince(t0) / n;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    Sandbox sb;
    session.attr("prepare_flag_gems")(target, py::dict());
    session.attr("load_installer")(target, fromJson(toJson(s.target().defaultGates())));
  }
  std::printf("harness: sandbox %.1f us/case; sandbox + mock build + installer load %.1f us/case\n", sandboxUs,
              1e6 * secondsSince(t0) / n);
  // The sandbox's cost grows with the watched modules loaded: with
  // FLAGPROP_BENCH_IMPORT=pkg (e.g. flag_gems on a GPU host) it is measured
  // again after importing pkg.
  if (const char* extra = std::getenv("FLAGPROP_BENCH_IMPORT")) {
    py::module_::import(extra);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < cases; ++i) Sandbox sb;
    std::printf("harness: sandbox %.1f us/case with %s imported (%zu modules loaded)\n", 1e6 * secondsSince(t0) / cases,
                extra, py::len(py::module_::import("sys").attr("modules")));
  }
}

// P9's p10_delta_us (µs per call, patch off minus on) for tanh float32, and
// the 10th percentile of the mock's stock runs in µs (its STOCK_RUN_US,
// cleared first).
std::pair<double, double> p9Delta(TargetSession& s) {
  Selection sel;
  sel.properties = {"P9/tanh/float32"};
  const auto runs = opRuns(s, {findProperty("P9")}, sel);
  py::gil_scoped_acquire gil;
  const py::object stockRuns = py::module_::import("flagprop_mocks.libentry").attr("STOCK_RUN_US");
  stockRuns.attr("clear")();
  double delta = std::nan("");
  {
    py::gil_scoped_release nogil;
    const PropertyOutcome o = runProperty(runs.at(0), benchOptions(1));
    if (o.status == "pass") delta = o.observations.at("timing").at("summary").at("host").at("p10_delta_us");
  }
  auto took = stockRuns.cast<std::vector<double>>();
  if (took.empty()) return {delta, std::nan("")};
  std::nth_element(took.begin(), took.begin() + took.size() / 10, took.end());
  return {delta, took[took.size() / 10]};
}

void p9Calibration(int repeats) {
  TargetSession delayed(loadTarget(fixturesDir() + "/targets/ops-timing-calibration.json"));
  json j = json::parse(readFile(fixturesDir() + "/targets/ops-timing-calibration.json"));
  const double asked = j["flag_gems"]["mock"]["run_delay_us"].get<double>();
  j["flag_gems"]["mock"]["run_delay_us"] = 0;
  j["name"] = "timing-baseline";
  TargetSession baseline(parseTarget(j, fixturesDir() + "/targets/baseline.json", fixturesDir() + "/targets"));
  baseline.setupOps({});
  std::printf("\nP9 calibration on the real clock: the mock's stock run spins %.0f us more per call\n", asked);
  std::printf("%-7s %14s %14s %10s\n", "repeat", "P9 delta us", "its cost us", "error %");
  for (int i = 0; i < repeats; ++i) {
    const auto [withDelay, slow] = p9Delta(delayed);
    const auto [without, fast] = p9Delta(baseline);
    const double delta = withDelay - without, cost = slow - fast;
    std::printf("%-7d %14.1f %14.1f %9.1f%%\n", i + 1, delta, cost, 100 * (delta - cost) / cost);
  }
}

void opProperty(TargetSession& ops, int cases) {
  std::printf("\nP5 numerics, %d cases per op and dtype, target %s on %s\n", cases, ops.target().name.c_str(),
              ops.target().device.c_str());
  std::printf("%-20s %-9s %9s %10s %10s %10s %9s %14s %7s   harness: %7s %8s %8s %8s %7s %6s\n", "op", "dtype",
              "cases/s", "us/case", "reference", "device op", "harness", "compiles/100", "status", "inputs", "verdicts",
              "sandbox", "control", "tamper", "other");
  for (const auto& run : opRuns(ops, {findProperty("P5")}, Selection{})) {
    const auto t0 = std::chrono::steady_clock::now();
    const PropertyOutcome r = runProperty(run, benchOptions(cases));
    const double sec = secondsSince(t0);
    const json st = r.observations.value("stats", json::object());
    const json sh = st.value("share", json::object());
    const int executed = st.value("cases_executed", 0);
    const json hs = st.value("harness_share", json::object());
    std::printf(
        "%-20s %-9s %9.0f %10.0f %9.1f%% %9.1f%% %8.1f%% %14.1f %7s   %16.1f%% %7.1f%% %7.1f%% %7.1f%% %6.1f%% "
        "%5.1f%%\n",
        run.op.c_str(), run.dtype.c_str(), executed / sec, 1e6 * sec / std::max(executed, 1),
        100 * sh.value("reference", 0.0), 100 * sh.value("device_op", 0.0), 100 * sh.value("harness", 0.0),
        st.value("compilations_per_100_cases", 0.0), r.status.c_str(), 100 * hs.value("inputs", 0.0),
        100 * hs.value("verdicts", 0.0), 100 * hs.value("sandbox", 0.0), 100 * hs.value("control", 0.0),
        100 * hs.value("tamper", 0.0), 100 * hs.value("other", 0.0));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 300;
  ensureInterpreter();
  TargetSession s(loadTarget(fixturesDir() + "/targets/well-behaved.json"));
  installerProperties(s, cases);
  harnessCost(s, cases);
  p9Calibration(3);
  TargetSession ops(loadTarget(argc > 2 ? argv[2] : fixturesDir() + "/targets/aten-cpu.json"));
  opProperty(ops, cases);
  return 0;
}
