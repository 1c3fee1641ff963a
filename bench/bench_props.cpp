// Benchmark (not a test): cases per second for P1-P4 on the CPU mocks, and
// the harness's own cost per case in µs (sandbox + mock build + installer
// load, without RapidCheck and without the property's checks).
#include "core/sandbox.h"
#include "suites/property.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace flagprop;

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 300;
  ensureInterpreter();
  py::gil_scoped_acquire gil;
  TargetSession s(loadTarget(fixturesDir() + "/targets/well-behaved.json"));
  std::printf("flagprop_bench: %d generated cases per property, well-behaved fixture, CPU mocks\n", cases);
  std::printf("%-4s %-18s %10s %12s %8s\n", "id", "property", "cases/s", "us/case", "status");
  for (const auto& d : properties()) {
    RunOptions o;
    o.cases = cases;
    o.seed = 1;
    const auto t0 = std::chrono::steady_clock::now();
    const PropertyOutcome r = d.run(s, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-4s %-18s %10.0f %12.1f %8s\n", d.id, d.title, r.casesRun / sec, 1e6 * sec / r.casesRun,
                r.status.c_str());
  }
  // Harness cost: the per-case fixed work, no installer call, no checks.
  const int n = cases * 3;
  py::module_ session = helper("session");
  py::dict spec;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    Sandbox sb;
  }
  const double sandboxUs = 1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    Sandbox sb;
    session.attr("prepare_flag_gems")(s.targetDict(), spec);
    session.attr("load_installer")(s.targetDict(), py::dict());
  }
  const double harnessUs = 1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("harness: sandbox %.1f us/case; sandbox + mock build + installer load %.1f us/case\n", sandboxUs,
              harnessUs);
  return 0;
}
