#!/usr/bin/env bash
# Builds flagprop and its tests with AddressSanitizer and
# UndefinedBehaviorSanitizer in a build folder of their own (default
# /tmp/flagprop-build-asan: outside the checkout, so that the tests also prove
# they hold for a build folder there) and runs the CPU tests in it. Needs what
# tools/setup.sh installs. Usage: tools/sanitize.sh [BUILD_DIR]
#
# Left out: the default run and the runs of stock ATen over every registered
# overload (the same code as the other end-to-end runs, minutes longer under
# ASan). The P9 timing tests run: their clock is a virtual one.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/flagprop-build-asan}
# (Set before the build too: it runs the test binary to list its tests.)
# Leaks: CPython and LibTorch keep their allocations to the end by design.
# Signals: a fixture that dies of SIGSEGV must die of it (the suite checks
# how its target process ended), not become ASan's exit status 1.
# Reports: every instrumented process (the run-target, confirm and worker
# processes the tests start included, whose stderr the suite captures as the
# code under test's output) writes its reports to a file of its own under
# $dir/sanitizer-reports, and any such file fails this script after the
# tests, so that a report in a child is never taken for an op's failure.
reports="$dir/sanitizer-reports"
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:halt_on_error=1:log_path=$reports/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan
# A build folder configured from another checkout cannot be rebuilt from
# this one (CMake refuses a second source folder): start it again.
if [ -f "$dir/CMakeCache.txt" ] &&
  ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(pwd -P)" "$dir/CMakeCache.txt"; then
  echo "sanitize: $dir was configured from another checkout; configuring it again"
  rm -rf "$dir"
fi
if [ ! -f "$dir/build.ninja" ]; then
  # -O1 -g1: line tables for the reports, a third of RelWithDebInfo's compile time.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
fi
rm -rf "$reports"
mkdir -p "$reports"
cmake --build "$dir" -j"$(nproc)" --target flagprop flagprop_tests
status=0
ctest --test-dir "$dir" --output-on-failure -j2 -L cpu -E 'DefaultRun|StockAtenHasNoFinding' || status=$?
tools/sanitizer_reports.sh "$reports" || status=1
exit "$status"
