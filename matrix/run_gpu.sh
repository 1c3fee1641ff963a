#!/usr/bin/env bash
# Builds flagprop on an NVIDIA GPU host and runs the GPU matrix.
#
# The host needs python3 with torch (2.x) and pybind11, g++ and cmake. What it
# lacks comes from git-ignored folders beside the checkout:
#   .carry/rapidcheck  Debian's librapidcheck-dev unpacked (dpkg -x)
#   .carry/gtest       Debian's libgtest-dev unpacked (used only if the host has none)
#   .carry/wheels      SQLAlchemy 2.x (+ typing_extensions) wheels for FlagGems
#   .targets/          Torch-FL's torch_fl/flagos/__init__.py and FlagGems' src/
# Usage: matrix/run_gpu.sh OUTDIR
set -u
OUTDIR=${1:?usage: matrix/run_gpu.sh OUTDIR}
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
echo "== flagprop run: GPU matrix"
./build-gpu/flagprop run --manifest matrix/targets/h200.json --seed 5 --report-dir "$OUTDIR/report-gpu" 2>&1 |
  grep -v '^\[ \|^\[=\|^\[-\|^$'
for f in "$OUTDIR"/report-gpu/reproducers/*.py; do
  [ -e "$f" ] || continue
  echo "== python3 $(basename "$f")"
  $PY "$f" >"$OUTDIR/repro.log" 2>&1
  rc=$?
  grep -v '^case:' "$OUTDIR/repro.log"
  echo "exit $rc"
done
echo "== flagprop run: CPU fixture matrix and the real installer x mocks (torch $($PY -c 'import torch; print(torch.__version__)'))"
./build-gpu/flagprop run --manifest fixtures/targets/default.json \
  --manifest matrix/targets/torch-fl-real-installer-mock-flaggems.json --seed 5 --report-dir "$OUTDIR/report-cpu" 2>&1 |
  tail -14
echo "== ctest"
(cd build-gpu && ctest -j8 2>&1 | grep -E "tests passed|Failed|Skipped")
