#!/usr/bin/env bash
# Builds flagprop on an NVIDIA GPU host and runs the GPU matrix.
#
# The host needs python3 with torch (2.x) and pybind11, g++ and cmake. What it
# lacks comes from git-ignored folders beside the checkout:
#   .carry/rapidcheck  Debian's librapidcheck-dev unpacked (dpkg -x)
#   .carry/gtest       Debian's libgtest-dev unpacked (used only if the host has none)
#   .carry/wheels      SQLAlchemy 2.x (+ typing_extensions) wheels for FlagGems
#   .targets/          Torch-FL's torch_fl/flagos/__init__.py and FlagGems' src/
# Usage: matrix/run_gpu.sh OUTDIR [installer|ops-smoke|ops|ops-torch-fl]...
#   installer     P1-P4: the GPU installer matrix, its reproducers, the CPU matrix and ctest (default)
#   ops-smoke     P5/P6 on FlagGems' kernels, 5 cases per op and dtype
#   ops           P5/P6 on FlagGems' kernels, the manifest's 200 cases per op and dtype
#   ops-torch-fl  P5/P6 with Torch-FL's installer active (helper supplied) and inactive (R5)
#   args          flagprop run with the arguments in $FLAGPROP_ARGS
set -u
OUTDIR=${1:?usage: matrix/run_gpu.sh OUTDIR [MODE...]}
shift
MODES=${*:-installer}
mkdir -p "$OUTDIR"
PY=$(command -v python3)
ROOT=$(pwd)
echo "== python: $PY $($PY -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())')"
$PY -m pip install -q --no-index --find-links .carry/wheels sqlalchemy typing_extensions 2>&1 | tail -2
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFLAGPROP_PYTHON="$PY" \
  -Drapidcheck_DIR="$ROOT/.carry/rapidcheck/usr/lib/x86_64-linux-gnu/cmake/rapidcheck" \
  -DCMAKE_PREFIX_PATH="$ROOT/.carry/gtest/usr" >"$OUTDIR/cmake.log" 2>&1 || { tail -40 "$OUTDIR/cmake.log"; exit 1; }
grep -E "Found (Torch|pybind11|GTest)" "$OUTDIR/cmake.log"
cmake --build build-gpu -j"$(nproc)" >"$OUTDIR/build.log" 2>&1 || { grep -E "error|Error" "$OUTDIR/build.log" | head -30; exit 1; }
echo "== built"
nvidia-smi -L
run_ops() {  # run_ops NAME flagprop-args...
  local name=$1
  shift
  echo "== flagprop run ($name)"
  local t0=$SECONDS
  ./build-gpu/flagprop run --seed 5 --timeout 560 --report-dir "$OUTDIR/report-$name" "$@" 2>&1 |
    grep -v '^\[ \|^\[=\|^\[-\|^$\|^Value of\|^  Actual\|^Expected\|runner.cpp\|UserWarning\|row_mask and col_mask\|tracemalloc'
  echo "== $name took $((SECONDS - t0)) s"
  run_reproducers "$OUTDIR/report-$name"
}
run_reproducers() {
  local n=0
  for f in "$1"/reproducers/*.py; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    [ $n -le 12 ] || { echo "(more reproducers in $1/reproducers)"; break; }
    echo "== python3 $(basename "$f")"
    timeout 120 $PY "$f" >"$OUTDIR/repro.log" 2>&1
    rc=$?
    grep -v '^case:\|^   tensor\|^call [0-9]*: args' "$OUTDIR/repro.log" | tail -8
    echo "exit $rc"
  done
}
for MODE in $MODES; do
  case $MODE in
    installer)
      echo "== flagprop run: GPU matrix"
      ./build-gpu/flagprop run --manifest matrix/targets/h200.json --seed 5 --report-dir "$OUTDIR/report-gpu" 2>&1 |
        grep -v '^\[ \|^\[=\|^\[-\|^$'
      run_reproducers "$OUTDIR/report-gpu"
      echo "== flagprop run: CPU fixture matrix and the real installer x mocks (torch $($PY -c 'import torch; print(torch.__version__)'))"
      ./build-gpu/flagprop run --manifest fixtures/targets/default.json \
        --manifest matrix/targets/torch-fl-real-installer-mock-flaggems.json --seed 5 --report-dir "$OUTDIR/report-cpu" 2>&1 |
        tail -22
      echo "== ctest"
      (cd build-gpu && ctest -j8 2>&1 | grep -E "tests passed|Failed|Skipped")
      ;;
    ops-smoke) run_ops ops-smoke --manifest matrix/targets/h200-flaggems-ops.json --cases 5 ;;
    ops) run_ops ops --manifest matrix/targets/h200-flaggems-ops.json ;;
    args) run_ops args $FLAGPROP_ARGS ;;  # FLAGPROP_ARGS: any flagprop run arguments
    ops-torch-fl) run_ops ops-torch-fl --manifest matrix/targets/h200-flaggems-ops-torch-fl.json \
                    --manifest matrix/targets/h200-flaggems-ops-torch-fl-r5.json ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
  esac
done
