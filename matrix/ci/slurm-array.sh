#!/usr/bin/env bash
# One part of a flagprop run per Slurm array task, then one report.
#
#   sbatch --array=1-4 matrix/ci/slurm-array.sh run MANIFEST OUTDIR
#   sbatch --dependency=afterany:JOBID matrix/ci/slurm-array.sh merge OUTDIR
#
# `run`: task I of N (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) runs
# `flagprop run --shard I/N` over MANIFEST into OUTDIR/part-I; every task
# must draw the same cases, so the seed is fixed (FLAGPROP_SEED, default 7).
# `merge`: `flagprop merge OUTDIR/part-*` into OUTDIR/merged (exit 1 when a
# part is missing or was stopped). FLAGPROP is the binary (default
# ./build/flagprop); FLAGPROP_ARGS more run options (e.g. --triton-cache on
# shared storage, --budget). Ask your cluster's GPU or DCU resource below.
#SBATCH --job-name=flagprop
#SBATCH --gres=gpu:1
#SBATCH --time=01:00:00
#SBATCH --output=flagprop-%A_%a.log
set -euo pipefail
FLAGPROP=${FLAGPROP:-./build/flagprop}
mode=${1:?usage: slurm-array.sh run MANIFEST OUTDIR | merge OUTDIR}
case "$mode" in
  run)
    manifest=${2:?usage: slurm-array.sh run MANIFEST OUTDIR}
    out=${3:?usage: slurm-array.sh run MANIFEST OUTDIR}
    i=${SLURM_ARRAY_TASK_ID:?not an array task: SLURM_ARRAY_TASK_ID is not set}
    n=${SLURM_ARRAY_TASK_COUNT:?not an array task: SLURM_ARRAY_TASK_COUNT is not set}
    mkdir -p "$out"
    # shellcheck disable=SC2086
    exec "$FLAGPROP" run --manifest "$manifest" --seed "${FLAGPROP_SEED:-7}" --shard "$i/$n" \
      --report-dir "$out/part-$i" ${FLAGPROP_ARGS:-}
    ;;
  merge)
    out=${2:?usage: slurm-array.sh merge OUTDIR}
    exec "$FLAGPROP" merge "$out"/part-* --report-dir "$out/merged"
    ;;
  *)
    echo "slurm-array.sh: unknown mode '$mode' (run or merge)" >&2
    exit 2
    ;;
esac
