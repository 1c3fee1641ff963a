#!/usr/bin/env bash
# ctest entry for a device runner: runs one target manifest (or a group of its
# ops) on one device when the device and the code under test are present, else
# exits 77 (ctest: skipped) saying why.
#
# Usage: ctest_device.sh [--requires FILE]... cuda|dcu PYTHON FLAGPROP MANIFEST REPORT_DIR [RUN_ARG...]
#   --requires FILE  skip (77) when FILE is absent (the code under test in
#                    .targets/); repeatable. Without any, a cuda entry requires
#                    .targets/pins/torch-fl-r5/torch_fl/flagos/__init__.py.
#   RUN_ARG...       more arguments for `flagprop run` (e.g. --op add.Tensor).
#
# GPU selection. Under `ctest --resource-spec-file` with the test property
# RESOURCE_GROUPS "gpus:1", ctest sets CTEST_RESOURCE_GROUP_0_GPUS to
# "id:N,slots:S"; this script then shows the process only that GPU:
# CUDA_VISIBLE_DEVICES=N (cuda) or HIP_VISIBLE_DEVICES=N (dcu), so the
# manifest's cuda:0 / flagos:0 is GPU N. N counts the GPUs the host (or the
# job) makes visible: when CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES is
# already set (a Slurm allocation, a CI runner), N picks its N-th entry.
# matrix/resource_spec.py writes a spec numbered the same way. Without the
# variable every GPU stays visible, as before.
#
# Environment: FLAGPROP_DEVICE_CASES=N passes --cases N to flagprop (a quick
# run; the manifests' own counts otherwise). Where none of /dev/nvidiactl,
# /dev/nvidia0, /dev/kfd, /dev/dxg exists the entry skips without asking
# torch; FLAGPROP_DEVICE_PROBE_ALWAYS=1 asks torch anyway.
set -u
requires=()
while [ "${1:-}" = --requires ]; do
  [ $# -ge 2 ] || { echo "ctest_device.sh: --requires needs a FILE"; exit 2; }
  requires+=("$2")
  shift 2
done
[ $# -ge 5 ] || { echo "usage: ctest_device.sh [--requires FILE]... cuda|dcu PYTHON FLAGPROP MANIFEST REPORT_DIR [RUN_ARG...]"; exit 2; }
label=$1 py=$2 flagprop=$3 manifest=$4 report=$5
shift 5
case "$label" in
  cuda) probe='import torch; assert torch.cuda.is_available(), "no CUDA device"'; visvar=CUDA_VISIBLE_DEVICES ;;
  dcu) probe='import torch_fl, torch_fl.flagos as f; assert f.device_count() > 0, "no flagos device"'; visvar=HIP_VISIBLE_DEVICES ;;
  *) echo "unknown label $label"; exit 2 ;;
esac

if [ -n "${CTEST_RESOURCE_GROUP_0_GPUS:-}" ]; then
  # "id:N,slots:S" (one GPU per entry: RESOURCE_GROUPS "gpus:1").
  id=$(printf '%s\n' "$CTEST_RESOURCE_GROUP_0_GPUS" | sed -n 's/^id:\([^,;]*\),.*$/\1/p')
  if [ -z "$id" ]; then
    echo "ctest_device.sh: cannot read CTEST_RESOURCE_GROUP_0_GPUS='$CTEST_RESOURCE_GROUP_0_GPUS'"
    exit 2
  fi
  dev=$id
  if [ -n "${!visvar+x}" ]; then
    # Already narrowed by the host or the job: the spec's N is an index into it.
    IFS=, read -r -a visible <<<"${!visvar}"
    case "$id" in
      *[!0-9]*) dev="" ;;
      *) dev=${visible[$id]:-} ;;
    esac
    if [ -z "$dev" ]; then
      echo "ctest_device.sh: resource group gpus id $id is not among $visvar='${!visvar}' (regenerate the spec with matrix/resource_spec.py)"
      exit 2
    fi
  fi
  export "$visvar=$dev"
  echo "ctest_device.sh: resource group gpus id $id -> $visvar=$dev"
fi

# No GPU device node at all: skip without starting Python (CI runs every entry).
nodes=(/dev/nvidiactl /dev/nvidia0 /dev/kfd /dev/dxg)
found=""
for n in "${nodes[@]}"; do [ -e "$n" ] && found=$n; done
if [ -z "$found" ] && [ -z "${FLAGPROP_DEVICE_PROBE_ALWAYS:-}" ]; then
  echo "skipped: $label device absent: no GPU device node (${nodes[*]})"
  exit 77
fi
if ! why=$("$py" -c "$probe" 2>&1); then
  echo "skipped: $label device absent${CTEST_RESOURCE_GROUP_0_GPUS:+ ($visvar=${!visvar})}: $(echo "$why" | tail -1)"
  exit 77
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$label" = cuda ] && [ ${#requires[@]} -eq 0 ]; then
  requires=("$root/.targets/pins/torch-fl-r5/torch_fl/flagos/__init__.py")
fi
for f in ${requires[@]+"${requires[@]}"}; do
  if [ ! -e "$f" ]; then
    echo "skipped: $f is absent (.targets/: see docs/real-code.md)"
    exit 77
  fi
done
extra=()
[ -n "${FLAGPROP_DEVICE_CASES:-}" ] && extra=(--cases "$FLAGPROP_DEVICE_CASES")
exec "$flagprop" run --manifest "$manifest" --report-dir "$report" ${extra[@]+"${extra[@]}"} "$@"
