#!/usr/bin/env bash
# Builds flagprop on an NVIDIA GPU host against its python3's torch (2.x) and
# runs the GPU checks.
#
# The host needs python3 with torch and pybind11, g++ and cmake. What it
# lacks comes from git-ignored folders beside the checkout:
#   .carry/librapidcheck-dev   Debian's librapidcheck-dev unpacked (dpkg -x)
#   .carry/libssl-dev          Debian's libssl-dev unpacked (OpenSSL headers)
#   .carry/libssl3             Debian's libssl3 unpacked (used when the host has no libcrypto.so.3)
#   .carry/libgtest-dev        Debian's libgtest-dev unpacked (used when the host has no GoogleTest)
#   .carry/wheels              a SQLAlchemy 2.x wheel for FlagGems; matplotlib (and its dependencies but numpy) for the P9 plots
#   .targets/                  FlagGems' src/ and the pinned files (docs/real-code.md)
# Usage: matrix/run_gpu.sh OUTDIR MODE...
#   build  configure and build into build-gpu (Release)
#   test   ctest: the CPU tests against this torch
#   pins   the installer pin matrix on cuda:0 (matrix/targets/h200.json) and its reproducers
#   pins-memory  the pin matrix (matrix/pins.json: CPU mocks and cuda:0) twice on one example
#          database ($OUTDIR/db), then flagprop diff between the R5 and latest pins of the second run
#          and between the two runs
#   ops    P5 / P6 on FlagGems' kernels for every catalog op, $FLAGPROP_CASES cases per op
#          and dtype (default 30), in $FLAGPROP_JOBS processes at once (default 6), each
#          stopped after $FLAGPROP_TIMEOUT s (default 400)
#   ops-torch-fl  P5 / P6 with the R5 installer active (helper libentry) and inactive (R5 libentry)
#   hits   P8 for six ops with the R5 installer active and inactive, and its counts on the seed input
#   streams-timing  P7 for six ops, P9 for eq.Scalar, masked_fill.Scalar, native_layer_norm with add.Tensor
#          and sum.dim_IntList as controls, with the R5 installer active and inactive; the native witness
#   all-ops  P5 / P6 for every overload FlagGems registers (matrix/targets/h200-flaggems-all.json) in one
#          run of $FLAGPROP_JOBS processes (--jobs, default 16), $FLAGPROP_CASES cases each (default 3),
#          within --budget $FLAGPROP_BUDGET s (default 420), each failure shrunk for at most
#          $FLAGPROP_SHRINK_TIME s (--shrink-time, default 20), each property run within $FLAGPROP_RUN_TIME s
#          (--run-time, default 20), at most $FLAGPROP_DISTINCT distinct failures per run (--distinct,
#          default 3; FLAGPROP_SHRINK_TIME=0 FLAGPROP_DISTINCT=1: each overload's verdict, unshrunk,
#          before any further search), at most $FLAGPROP_HEAVY_JOBS processes at once in the linear algebra
#          and convolution ops (--heavy-jobs, default 0: no cap); a coverage table, where the time went per
#          op family, and the failures, one line each
#   all-ops-kept  after all-ops: the same run again into $OUTDIR/all-kept, with the first sitting's Triton and
#          FlagGems caches and example database kept (a second sitting), then matrix/sittings.py: the runs both
#          executed side by side (cases, compilations, the op's seconds), where a case's time went, status changes
#   all-ops-dtypes  every registered overload in the default dtypes (matrix/targets/h200-flaggems-all-dtypes.json)
#          in $FLAGPROP_SHARDS parts (--shard, default 2) at once, $FLAGPROP_JOBS processes in all, each part
#          within --budget $FLAGPROP_BUDGET s, $FLAGPROP_HEAVY_JOBS heavy-op slots in all (--heavy-jobs: each
#          part has its own claims, so each gets its share), merged by flagprop merge into $OUTDIR/all-dtypes;
#          the coverage of each part and of the merge
#   warm   P5 on eq.Scalar, add.Tensor, where.self, tanh, sum.dim_IntList, masked_fill.Scalar (float32,
#          $FLAGPROP_CASES cases, default 200), cold then warm: cases/s and where the time goes
#   ab     the warm mode's six ops warm, the Python half of $FLAGPROP_BASE (a checkout of the baseline, run
#          through FLAGPROP_HOME with this build) against this checkout's: one seed, the cache filled by a
#          first run of the same seed and count, then base, new, base, new ($FLAGPROP_CASES, default 300); a
#          side that still compiles says so (compilations per run): only runs without them compare
#   batch  the warm mode's six ops warm (the cache filled by a first run of the same seed and count), one case
#          at a time (--batch 1) and in batches of $FLAGPROP_BATCH (default 8), twice each in turn
#          ($FLAGPROP_CASES, default 300): cases/s, where the time goes, the statuses and counterexamples of each
#   cold-precompile  the warm mode's six ops cold (empty caches) without and with --precompile
#          $FLAGPROP_PRECOMPILE (default 14): the run's wall time, each op's rate, what the workers did
#   contention  eight matrix and convolution ops (HEAVY_OPS), float32, 3 cases, cold (fresh Triton and
#          FlagGems caches, no example database) in each of $FLAGPROP_CONTENTION processes at once (default
#          "2 8"), each run within --budget $FLAGPROP_CONTENTION_TIMEOUT - 30 s (default 240): per op and property,
#          seconds per judged case and the op's share, so that the kernels' own cost is told from contention
#          for the one GPU (if 8 at once is much slower per case than 2, cap those families). Where one
#          command may run 10 minutes, run FLAGPROP_CONTENTION=2 and FLAGPROP_CONTENTION=8 as two commands
#   all-ops-rest  after all-ops (this OUTDIR): the same run continued (--continue) from the report in
#          $OUTDIR/$FLAGPROP_FROM (default all) into $OUTDIR/$FLAGPROP_INTO (default all-rest), for the
#          overloads its --budget left not run, within --budget $FLAGPROP_BUDGET s; the merged report's
#          coverage table. A third sitting: FLAGPROP_FROM=all-rest FLAGPROP_INTO=all-rest2
#   sandbox-cost  the sandbox's cost per case on the CPU mocks and with FlagGems (and Triton) imported
#   switch-cost  the stock control's switch per case (FlagGems' kernels off and on again) against how many
#          kernels a process registered: FlagGems' own for every overload, then synthetic ones
#          (bench/switch_cost.py)
#   profile  after warm: the warm run again under py-spy (.carry/bin/py-spy, a static binary from PyPI's
#          py-spy wheel); prints the top functions (bench/pyspy_top.py)
#   draft-repros  after all-ops: runs the reproducer of each bug-report draft (exit statuses)
#   repros-off  after all-ops: every reproducer as written and with FlagGems off (matrix/repros_off.py):
#          a finding judged against the stock path that still fails with FlagGems off is a flagprop defect
#   args   flagprop run with the arguments in $FLAGPROP_ARGS
set -u
OUTDIR=${1:?usage: matrix/run_gpu.sh OUTDIR MODE...}
shift
mkdir -p "$OUTDIR"
PY=$(command -v python3)
ROOT=$(pwd)
FP=./build-gpu/flagprop
echo "== $($PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())')"
$PY -m pip install -q --no-index --no-deps --target /tmp/site .carry/wheels/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export FLAGPROP_ROOT=$ROOT  # reproducers written outside the checkout find flagprop here

build() {
  local crypto
  crypto=$(ldconfig -p | awk '/libcrypto\.so\.3 /{print $NF; exit}')
  [ -n "$crypto" ] || crypto=$ROOT/.carry/libssl3/usr/lib/x86_64-linux-gnu/libcrypto.so.3
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLAGPROP_PYTHON="$PY" \
    -Drapidcheck_DIR="$ROOT/.carry/librapidcheck-dev/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" \
    -DOPENSSL_INCLUDE_DIR="$ROOT/.carry/libssl-dev/usr/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto" \
    -DCMAKE_PREFIX_PATH="$ROOT/.carry/libgtest-dev/usr" \
    >"$OUTDIR/cmake.log" 2>&1 || { tail -30 "$OUTDIR/cmake.log"; return 1; }
  local t0=$SECONDS
  cmake --build build-gpu -j"$(nproc)" >"$OUTDIR/build.log" 2>&1 || { grep -E "error" "$OUTDIR/build.log" | head -30; return 1; }
  echo "== built in $((SECONDS - t0)) s"
}
reproducers() {  # reproducers REPORT_DIR: runs up to $FLAGPROP_REPROS (default 16) of its reproducers
  local n=0 f rc
  for f in "$1"/reproducers/*.py; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    [ $n -le "${FLAGPROP_REPROS:-16}" ] || { echo "(more reproducers in $1/reproducers)"; break; }
    timeout 90 $PY "$f" >"$OUTDIR/repro.log" 2>&1
    rc=$?
    echo "== exit $rc: python3 $(basename "$f"): $(grep -m1 -E '^(REPRODUCED|not reproduced|could not)' "$OUTDIR/repro.log")"
  done
}
summary() {  # summary REPORT_DIR...: every result that is not pass, one line each
  $PY - "$@" <<'PYEOF'
import json, sys
for d in sys.argv[1:]:
    try:
        r = json.load(open(d + "/report.json"))
    except OSError:
        print("no report in", d); continue
    for t in r["targets"]:
        if t.get("status") != "ok":
            print("TARGET ERROR", t.get("name"), t.get("error")); continue
        for x in t["results"]:
            st = x["observations"].get("stats", {})
            if x["status"] != "pass":
                print("%-5s %-45s %s" % (x["status"], t["name"] + " " + x.get("key", x["property"]), x["reason"][:300]))
        print("--", t["name"], json.dumps(r["summary"]["results"]))
PYEOF
}
run_ops() {  # run_ops NAME MANIFEST...: every catalog op, in parallel groups
  local name=$1 jobs=${FLAGPROP_JOBS:-6} cases=${FLAGPROP_CASES:-30} i=0 args dirs=() t0=$SECONDS
  shift
  local ops
  ops=$($FP ops | cut -f1)
  for ((k = 0; k < jobs; k++)); do
    args=()
    i=0
    for op in $ops; do
      [ $((i % jobs)) -eq $k ] && args+=(--op "$op")
      i=$((i + 1))
    done
    local m
    for m in "$@"; do args+=(--manifest "$m"); done
    dirs+=("$OUTDIR/$name-$k")
    $FP run --seed 5 --cases "$cases" --timeout "${FLAGPROP_TIMEOUT:-400}" --report-dir "$OUTDIR/$name-$k" "${args[@]}" >"$OUTDIR/$name-$k.log" 2>&1 &
  done
  wait
  echo "== $name: ${#dirs[@]} groups in $((SECONDS - t0)) s"
  summary "${dirs[@]}"
  for d in "${dirs[@]}"; do reproducers "$d"; done
}
op_rates() {  # op_rates REPORT_JSON: per P5 run its cases/s and where a case's time went; what --precompile did
  $PY - "$1" <<'PYEOF'
import json, sys
for t in json.load(open(sys.argv[1]))["targets"]:
    pre = t.get("precompile")
    if pre:
        print("precompile: %d of %d calls in %d processes, %.1f s, %d compilations; stopped: %s; errors: %s" % (
              pre["ran"], pre["cases"], pre["workers"], pre["seconds"], pre["compilations"], pre["stopped"], pre["errors"][:2]))
    total = sum(r["seconds"] for r in t["results"]) + (pre or {}).get("seconds", 0)
    cases = sum(r["observations"].get("stats", {}).get("cases_executed", 0) for r in t["results"])
    print("all ops: %d cases in %.1f s of runs%s: %.1f cases/s" % (cases, total, " and precompile" if pre else "", cases / max(total, 1e-9)))
    for r in t["results"]:
        st = r["observations"].get("stats", {})
        sh, hs = st.get("share", {}), st.get("harness_share", {})
        n = st.get("cases_executed", 0)
        print("%-20s %-6s %4d cases %7.1f cases/s %7.0f us/case  in cases %3.0f%%  reference %4.0f%%  device op %4.0f%%  "
              "harness %4.0f%% (inputs %3.0f%%, verdicts %3.0f%%, sandbox %3.0f%%, control %3.0f%% [FlagGems off %3.0f%%], "
              "tamper %3.0f%%, other %3.0f%%)  compiles/100 %.0f" % (
              r["op"], r["status"], n, n / max(r["seconds"], 1e-9), st.get("us_per_case", 0), 100 * st.get("in_cases", 0),
              100 * sh.get("reference", 0), 100 * sh.get("device_op", 0), 100 * sh.get("harness", 0),
              100 * hs.get("inputs", 0), 100 * hs.get("verdicts", 0), 100 * hs.get("sandbox", 0),
              100 * hs.get("control", 0), 100 * hs.get("flaggems_off", 0), 100 * hs.get("tamper", 0),
              100 * hs.get("other", 0), st.get("compilations_per_100_cases", 0)))
        sb = st.get("sandbox", {})
        print("%-20s sandbox reused its snapshot in %d cases; walked sys.modules: %s" % (
              "", sb.get("reused", 0), json.dumps(sb.get("walked", {}))))
        b = st.get("batch")
        if b:
            print("%-20s batches %d, cases of them taken %d%s" % (
                  "", b.get("batches", 0), b.get("cases", 0), "; stopped: " + b["stopped"] if b.get("stopped") else ""))
PYEOF
}
all_ops() {  # all_ops NAME: the all-ops run into $OUTDIR/NAME (its Triton and FlagGems caches in $OUTDIR/triton-cache)
  t0=$SECONDS
  $FP run --seed 5 --cases "${FLAGPROP_CASES:-3}" --jobs "${FLAGPROP_JOBS:-16}" --budget "${FLAGPROP_BUDGET:-420}" \
    --shrink-time "${FLAGPROP_SHRINK_TIME:-20}" --run-time "${FLAGPROP_RUN_TIME:-20}" --distinct "${FLAGPROP_DISTINCT:-3}" \
    --heavy-jobs "${FLAGPROP_HEAVY_JOBS:-0}" \
    --triton-cache "$OUTDIR/triton-cache" --manifest matrix/targets/h200-flaggems-all.json --report-dir "$OUTDIR/$1" \
    >"$OUTDIR/$1.log" 2>&1
  echo "== all-ops: exit $? in $((SECONDS - t0)) s; console $(wc -l <"$OUTDIR/$1.log") lines, FlagGems warning lines on it: $(grep -c -i -E 'warning|deprecated' "$OUTDIR/$1.log")"
  tail -4 "$OUTDIR/$1.log"
  $PY matrix/coverage.py "$OUTDIR/$1"
}
WARM_OPS=(--property P5/eq.Scalar/float32 --property P5/add.Tensor/float32 --property P5/where.self/float32
          --property P5/tanh/float32 --property P5/sum.dim_IntList/float32 --property P5/masked_fill.Scalar/float32)
# The families whose cases were slowest on the H200, warm or cold (docs/benchmarks.md).
HEAVY_OPS=(--op addmv --op addbmm --op addmm --op bmm --op baddbmm --op _convolution_mode --op conv2d
           --op conv_transpose2d)
for MODE in "$@"; do
  case $MODE in
    build) build || exit 1 ;;
    test) (cd build-gpu && ctest -j8 -L cpu --timeout 300 2>&1 | grep -E "tests passed|Failed|\*\*\*") ;;
    pins)
      matrix/assemble_pins.sh || exit 1
      $FP run --manifest matrix/targets/h200.json --seed 5 --report-dir "$OUTDIR/pins" >"$OUTDIR/pins.log" 2>&1
      echo "== pins: exit $?"
      grep -E "^\[h200|^target|^h200" "$OUTDIR/pins.log" | grep -v "^\[h200.*\] P[0-9].* \.\.\. pass"
      summary "$OUTDIR/pins"
      reproducers "$OUTDIR/pins" ;;
    pins-memory)
      matrix/assemble_pins.sh >/dev/null || exit 1
      for n in 1 2; do
        $FP run --manifest matrix/pins.json --seed $((4 + n)) --db "$OUTDIR/db" --report-dir "$OUTDIR/pins-run$n" \
          >"$OUTDIR/pins-run$n.log" 2>&1
        echo "== pin matrix, run $n: exit $?"
        grep -E "^(target|pin-|h200-|results:|example database)" "$OUTDIR/pins-run$n.log"
      done
      $FP diff "$OUTDIR/pins-run2" --pins r5 latest --out "$OUTDIR/diff-pins"
      echo "== diff --pins r5 latest: exit $?"
      $FP diff "$OUTDIR/pins-run1" "$OUTDIR/pins-run2" --out "$OUTDIR/diff-runs"
      echo "== diff run 1 -> run 2: exit $?" ;;
    ops) run_ops ops matrix/targets/h200-flaggems-ops.json ;;
    hits)
      matrix/assemble_pins.sh >/dev/null || exit 1
      args=()
      for op in where.self eq.Scalar masked_fill.Scalar add.Tensor sum.dim_IntList native_layer_norm; do args+=(--op "$op"); done
      $FP run --seed 5 --cases "${FLAGPROP_CASES:-5}" --property P8 --dtype float32 "${args[@]}" \
        --manifest matrix/targets/h200-flaggems-ops-torch-fl.json --manifest matrix/targets/h200-flaggems-ops-torch-fl-r5.json \
        --report-dir "$OUTDIR/hits" >"$OUTDIR/hits.log" 2>&1
      echo "== hits: exit $?"
      grep -E "P8 fast-path hits" "$OUTDIR/hits.log"
      for t in h200-flaggems-ops-torch-fl-helper-supplied h200-flaggems-ops-torch-fl-r5; do
        $PY matrix/seed_hits.py "$FP" "$OUTDIR/hits/report.json" "$t" 2>&1 | grep -v Warning
      done ;;
    ops-torch-fl)
      matrix/assemble_pins.sh || exit 1
      run_ops ops-torch-fl matrix/targets/h200-flaggems-ops-torch-fl.json matrix/targets/h200-flaggems-ops-torch-fl-r5.json ;;
    streams-timing)
      matrix/assemble_pins.sh >/dev/null || exit 1
      ms=(--manifest matrix/targets/h200-flaggems-ops-torch-fl.json --manifest matrix/targets/h200-flaggems-ops-torch-fl-r5.json)
      p7=()
      for op in where.self eq.Scalar masked_fill.Scalar add.Tensor sum.dim_IntList native_layer_norm; do p7+=(--property "P7/$op/float32"); done
      p9=()
      for op in eq.Scalar masked_fill.Scalar native_layer_norm add.Tensor sum.dim_IntList; do p9+=(--property "P9/$op/float32"); done
      $FP run --seed 5 --cases 3 "${p7[@]}" "${p9[@]}" "${ms[@]}" --report-dir "$OUTDIR/streams-timing" >"$OUTDIR/st.log" 2>&1
      echo "== streams-timing: exit $?"
      grep -E "P7 stream|P9 A/B" "$OUTDIR/st.log"
      $PY -c "import json; t=json.load(open('$OUTDIR/streams-timing/report.json'))['targets'][0]; print('native witness:', t['provenance']['native_runtime'])" ;;
    all-ops-dtypes)  # every overload in the default dtypes, in $FLAGPROP_SHARDS parts (--shard, default 2) run at
      # once on the one GPU ($FLAGPROP_JOBS processes in all), merged (flagprop merge) into $OUTDIR/all-dtypes
      t0=$SECONDS
      n=${FLAGPROP_SHARDS:-2}
      parts=()
      for i in $(seq 1 "$n"); do
        $FP run --seed 5 --cases "${FLAGPROP_CASES:-3}" --jobs $(( ${FLAGPROP_JOBS:-16} / n )) --shard "$i/$n" \
          --budget "${FLAGPROP_BUDGET:-420}" --shrink-time "${FLAGPROP_SHRINK_TIME:-10}" \
          --run-time "${FLAGPROP_RUN_TIME:-20}" --distinct "${FLAGPROP_DISTINCT:-1}" \
          --heavy-jobs $(( (${FLAGPROP_HEAVY_JOBS:-0} + n - 1) / n )) \
          --triton-cache "$OUTDIR/triton-cache" --manifest matrix/targets/h200-flaggems-all-dtypes.json \
          --report-dir "$OUTDIR/part$i" >"$OUTDIR/part$i.log" 2>&1 &
        parts+=("$OUTDIR/part$i")
      done
      wait
      $FP merge "${parts[@]}" --report-dir "$OUTDIR/all-dtypes" >"$OUTDIR/merge.log" 2>&1
      echo "== all-ops-dtypes: $n parts merged, exit $? in $((SECONDS - t0)) s"
      tail -3 "$OUTDIR/merge.log"
      for d in "${parts[@]}" "$OUTDIR/all-dtypes"; do echo "== coverage of $d"; $PY matrix/coverage.py "$d" | head -8; done
      grep -h -E "^coverage before depth|judged alone" "$OUTDIR"/part*.log ;;
    all-ops) all_ops all ;;
    all-ops-kept)  # after all-ops (this OUTDIR): the same run again, its caches kept; the two sittings compared
      all_ops all-kept
      $PY matrix/sittings.py "$OUTDIR/all" "$OUTDIR/all-kept" | head -40 ;;
    contention)
      [ "${FLAGPROP_CONTENTION_TIMEOUT:-240}" -gt 60 ] || { echo "contention: FLAGPROP_CONTENTION_TIMEOUT must exceed 60 s"; continue; }
      for jobs in ${FLAGPROP_CONTENTION:-2 8}; do
        rm -rf "$OUTDIR/contention-$jobs" "$OUTDIR/contention-$jobs-cache" "$OUTDIR/contention-$jobs-flaggems"
        t0=$SECONDS
        # --budget ends the run 30 s before the timeout, so that its report is written
        FLAGGEMS_CACHE_DIR="$OUTDIR/contention-$jobs-flaggems" timeout "${FLAGPROP_CONTENTION_TIMEOUT:-240}" \
          $FP run --no-db --seed 5 --cases 3 --jobs "$jobs" --run-time 60 --shrink-time 0 --distinct 1 "${HEAVY_OPS[@]}" --dtype float32 \
          --budget $((${FLAGPROP_CONTENTION_TIMEOUT:-240} - 30)) \
          --triton-cache "$OUTDIR/contention-$jobs-cache" --manifest matrix/targets/h200-flaggems-all.json \
          --report-dir "$OUTDIR/contention-$jobs" >"$OUTDIR/contention-$jobs.log" 2>&1
        echo "== contention, $jobs processes at once: exit $? in $((SECONDS - t0)) s"
        $PY - "$OUTDIR/contention-$jobs/report.json" <<'PYEOF'
import json, sys
try:
    targets = json.load(open(sys.argv[1]))["targets"]
except (OSError, ValueError, KeyError) as e:
    sys.exit("contention: no report (%s)" % e)
for t in targets:
    for r in t.get("results", []):
        if not r.get("op"):  # a process result: the target process died outside a case
            print("%-20s %s" % (r.get("key", "?"), r.get("reason", "")[:200]))
            continue
        st = (r.get("observations") or {}).get("stats", {})
        n = st.get("cases_executed", 0)
        print("%-20s %-3s %-5s %3d cases %8.2f s/case  device op %3.0f%%  compiles %d" % (
              r["op"], r.get("property", "?"), r.get("status", "?"), n, r.get("seconds", 0) / max(n, 1),
              100 * st.get("share", {}).get("device_op", 0), st.get("compilations_per_100_cases", 0) * n // 100))
PYEOF
      done ;;
    all-ops-rest)  # all-ops continued (--continue) from $OUTDIR/$FLAGPROP_FROM (default all) into
      # $OUTDIR/$FLAGPROP_INTO (default all-rest): one run in several sittings
      t0=$SECONDS
      from=${FLAGPROP_FROM:-all} into=${FLAGPROP_INTO:-all-rest}
      $FP run --seed 5 --cases "${FLAGPROP_CASES:-3}" --jobs "${FLAGPROP_JOBS:-16}" --budget "${FLAGPROP_BUDGET:-420}" \
        --shrink-time "${FLAGPROP_SHRINK_TIME:-20}" --run-time "${FLAGPROP_RUN_TIME:-20}" --distinct "${FLAGPROP_DISTINCT:-3}" \
        --continue "$OUTDIR/$from" \
        --triton-cache "$OUTDIR/triton-cache" --manifest matrix/targets/h200-flaggems-all.json \
        --report-dir "$OUTDIR/$into" >"$OUTDIR/$into.log" 2>&1
      echo "== all-ops-rest: exit $? in $((SECONDS - t0)) s ($from into $into)"
      tail -4 "$OUTDIR/$into.log"
      $PY matrix/coverage.py "$OUTDIR/$into" ;;
    sandbox-cost)  # the sandbox's cost per case with FlagGems and Triton loaded (flagprop_bench)
      FLAGPROP_BENCH_IMPORT=flag_gems PYTHONPATH=$ROOT/.targets/FlagGems/src:$PYTHONPATH ./build-gpu/flagprop_bench 100 \
        2>&1 | grep -E "^harness" | tee "$OUTDIR/sandbox-cost.txt" ;;
    switch-cost)  # the stock control's switch per case, by registrations (bench/switch_cost.py)
      timeout 300 $PY bench/switch_cost.py --flaggems-src .targets/FlagGems/src 2>&1 | tail -6 | tee "$OUTDIR/switch-cost.txt"
      timeout 120 $PY bench/switch_cost.py 2>&1 | tail -6 | tee -a "$OUTDIR/switch-cost.txt" ;;
    profile)  # after warm: py-spy (.carry/bin/py-spy) over the warm run again; the top functions
      [ -x .carry/bin/py-spy ] || { echo "profile: no .carry/bin/py-spy"; continue; }
      .carry/bin/py-spy record -r 250 -f raw -o "$OUTDIR/profile.txt" --subprocesses -- \
        $FP run --seed 5 --cases "${FLAGPROP_CASES:-200}" "${WARM_OPS[@]}" --triton-cache "$OUTDIR/warm-cache" \
        --manifest matrix/targets/h200-flaggems-ops.json --report-dir "$OUTDIR/profiled" >"$OUTDIR/profile.log" 2>&1
      echo "== profile: exit $?"
      $PY bench/pyspy_top.py "$OUTDIR/profile.txt" 45 ;;
    ab)  # base against new on one warm cache (see the usage above)
      [ -d "${FLAGPROP_BASE:-}/python/flagprop" ] || { echo "ab: FLAGPROP_BASE must be a flagprop checkout"; continue; }
      rm -rf "$OUTDIR/ab-cache"
      for side in fill base new base new; do
        home=()
        [ $side = base ] && home=(env "FLAGPROP_HOME=$(cd "$FLAGPROP_BASE" && pwd)")
        n=$((${n:-0} + 1))
        "${home[@]}" $FP run --no-db --seed 5 --cases "${FLAGPROP_CASES:-300}" "${WARM_OPS[@]}" --triton-cache "$OUTDIR/ab-cache" \
          --manifest matrix/targets/h200-flaggems-ops.json --report-dir "$OUTDIR/ab-$n-$side" >"$OUTDIR/ab-$n-$side.log" 2>&1
        echo "== $side (run $n): exit $?"
        [ $side = fill ] || op_rates "$OUTDIR/ab-$n-$side/report.json"
      done ;;
    warm)  # P5 on six ops, float32, $FLAGPROP_CASES (default 200) cases: a cold run, then the same warm
      rm -rf "$OUTDIR/warm-cache"
      for pass in cold warm; do
        $FP run --seed 5 --cases "${FLAGPROP_CASES:-200}" "${WARM_OPS[@]}" --triton-cache "$OUTDIR/warm-cache" \
          --manifest matrix/targets/h200-flaggems-ops.json --report-dir "$OUTDIR/$pass" >"$OUTDIR/$pass.log" 2>&1
        echo "== $pass: exit $?"
        op_rates "$OUTDIR/$pass/report.json"
      done ;;
    batch)  # the warm mode's six ops warm, --batch 1 against --batch $FLAGPROP_BATCH, twice each in turn
      rm -rf "$OUTDIR/batch-cache"
      for run in fill b1 bN b1 bN; do
        n=1
        case $run in bN) n=${FLAGPROP_BATCH:-8} ;; esac
        $FP run --seed 5 --cases "${FLAGPROP_CASES:-300}" "${WARM_OPS[@]}" --batch "$n" --triton-cache "$OUTDIR/batch-cache" \
          --manifest matrix/targets/h200-flaggems-ops.json --report-dir "$OUTDIR/batch-$run" >"$OUTDIR/batch-$run.log" 2>&1
        echo "== $run (--batch $n): exit $?"
        [ $run = fill ] || op_rates "$OUTDIR/batch-$run/report.json"
        $PY -c 'import json,sys; [print("  ", r["key"], r["status"], r["cases_run"], json.dumps(r.get("counterexample"))[:120]) for t in json.load(open(sys.argv[1]))["targets"] for r in t["results"]]' "$OUTDIR/batch-$run/report.json"
      done ;;
    cold-precompile)  # the warm mode's six ops cold (empty Triton and FlagGems caches), without and with
      # --precompile $FLAGPROP_PRECOMPILE (default 14): the whole run's wall time and each op's rate
      for variant in plain precompile; do
        pre=()
        [ $variant = precompile ] && pre=(--precompile "${FLAGPROP_PRECOMPILE:-14}")
        rm -rf "$OUTDIR/cold-$variant-cache" "$OUTDIR/cold-$variant-flaggems"
        t0=$SECONDS
        FLAGGEMS_CACHE_DIR="$OUTDIR/cold-$variant-flaggems" $FP run --seed 5 --cases "${FLAGPROP_CASES:-200}" \
          "${WARM_OPS[@]}" "${pre[@]}" --triton-cache "$OUTDIR/cold-$variant-cache" \
          --manifest matrix/targets/h200-flaggems-ops.json --report-dir "$OUTDIR/cold-$variant" >"$OUTDIR/cold-$variant.log" 2>&1
        echo "== cold, $variant: exit $? in $((SECONDS - t0)) s (the whole flagprop run)"
        op_rates "$OUTDIR/cold-$variant/report.json"
      done ;;
    draft-repros)  # the reproducer of each bug-report draft of the all-ops run, 8 at once
      grep -ho 'reproducers/repro_[^ )`]*\.py' "$OUTDIR"/all/drafts/[0-9]*.md 2>/dev/null | sort -u | head -"${FLAGPROP_REPROS:-40}" |
        xargs -P 8 -I{} sh -c 'timeout 90 '"$PY"' '"$OUTDIR"'/all/{} >/dev/null 2>&1; echo "exit $? {}"' | sort ;;
    repros-off)  # after all-ops: every reproducer as written and with FlagGems off (matrix/repros_off.py)
      timeout 420 $PY matrix/repros_off.py "$OUTDIR/all" --jobs "${FLAGPROP_JOBS:-12}" --timeout 150 \
        >"$OUTDIR/repros-off.txt" 2>&1
      echo "== repros-off: exit $?"
      tail -1 "$OUTDIR/repros-off.txt"; grep -E "^1 +1 +stock" "$OUTDIR/repros-off.txt" | head -20 ;;
    args) $FP run $FLAGPROP_ARGS --report-dir "$OUTDIR/args"; summary "$OUTDIR/args" ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
  esac
done
