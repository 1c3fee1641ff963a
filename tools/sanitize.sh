#!/usr/bin/env bash
# Builds flagprop and its tests with AddressSanitizer and
# UndefinedBehaviorSanitizer in a build folder of their own (default
# /tmp/flagprop-build-asan: outside the checkout, so that the tests also prove
# they hold for a build folder there) and runs CPU tests in it (which ones:
# below). Needs what tools/setup.sh installs.
# Usage: tools/sanitize.sh [BUILD_DIR]
#
# What runs: every unit and teeth entry (flagprop's C++ in process: the
# generators, shrinking, properties, manifests, records, the runner's parts;
# the P9 timing tests too, whose clock is a virtual one), and the end-to-end
# entries in E2E below: each drives the flagprop binary through a path of its
# own in process supervision, descriptors, files or the example database, in
# well under a minute under ASan (7-38 s each here). Left out: the other
# end-to-end entries, whose time is the code under test's Python and whose
# C++ paths these already take (the default run, the runs over every
# registered overload, shrinking and confirming at length); they run in the
# main build's ctest.
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
# -O0 -g1: line tables for the reports; a translation unit compiles in about
# 35 s here against 82 s at -O1 (targets/manifest.cpp, 2 cores), and the
# entries' time is the embedded Python's, not flagprop's. Configured on every
# call (cheap; a change of flags rebuilds).
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="-O0 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
rm -rf "$reports"
mkdir -p "$reports"
cmake --build "$dir" -j"$(nproc)" --target flagprop flagprop_tests
E2E=(
  Cli.AFinishedDocumentMissingRunsGetsAnErrorForEach
  Cli.AnOpWritingToTheConsoleDescriptorReachesOnlyItsCapture
  Cli.AnOpThatClosesFlagpropsDescriptorsIsIsolated
  Cli.ACapturedOutputIsCappedAndSaysHowMuchWasCut
  Cli.CapturedOutputOfSeveralProcessesIsCountedTogether
  Cli.WhatTheCodeUnderTestPrintsIsCapturedAndListed
  Cli.AnEscapeSequenceTheOpRaisesNeverReachesTheConsole
  Cli.ACorrectOpPrintingNonAsciiTextPassesInAnyLocale
  Cli.TargetProcessOutlivesAnInterruptMeantForTheRun
  Cli.NothingTheCodeUnderTestStartsOutlivesTheRun
  Cli.ThreadsAndProcessesTheCodeUnderTestLeavesRunningAreReported
  Cli.ADeathBetweenCasesGoesOnInAFreshProcess
  Cli.AProcessThatExitsMidCaseIsAFailureItsReproducerReproduces
  Cli.AnOpsSystemExitIsTheOpRaising
  Cli.CrashedTargetAndBadManifestDoNotStopTheRun
  Cli.AReportFileThatCannotBeWrittenLeavesTheRestAndExitsFour
  Cli.AnUnexpectedFailureGetsABlockWithRelativePaths
  Cli.BadUsageExitsTwoWithAMessage
  Cli.HeavyJobsLeaveTheHeavyOpsUntilASlotIsFree
  Cli.PrecompileWorkersAreSharedOutUnderJobs
  Cli.PrecompileWorkersLeaveNothingRunning
  Memory.DiffBetweenTwoPinsOfOneRun
  Memory.AFaultOfEveryFirstCallIsAFailNotFlaky
  Memory.TwoRunsAtOnceOnOneDatabaseLoseNothing
)
joined=$(
  IFS='|'
  echo "${E2E[*]}"
)
e2e_regex="^(${joined//./\\.})\$"
status=0
ctest --test-dir "$dir" --output-on-failure -j2 -L '^cpu-(unit|teeth)$' || status=$?
# An entry renamed or removed must not leave this list quietly shorter.
listed=$(ctest --test-dir "$dir" -N -R "$e2e_regex" | sed -n 's/^Total Tests: //p')
if [ "$listed" != "${#E2E[@]}" ]; then
  echo "sanitize: E2E names ${#E2E[@]} entries but ctest has $listed of them; update the list in $0" >&2
  status=1
fi
ctest --test-dir "$dir" --output-on-failure -j2 -R "$e2e_regex" || status=$?
tools/sanitizer_reports.sh "$reports" || status=1
exit "$status"
