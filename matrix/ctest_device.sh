#!/usr/bin/env bash
# ctest entry for a device runner: runs a device matrix when the device and the
# code under test are present, else exits 77 (ctest: skipped) saying why.
# Usage: ctest_device.sh cuda|dcu PYTHON FLAGPROP MANIFEST REPORT_DIR
set -u
label=$1 py=$2 flagprop=$3 manifest=$4 report=$5
case "$label" in
  cuda) probe='import torch; assert torch.cuda.is_available(), "no CUDA device"' ;;
  dcu) probe='import torch_fl, torch_fl.flagos as f; assert f.device_count() > 0, "no flagos device"' ;;
  *) echo "unknown label $label"; exit 2 ;;
esac
if ! why=$("$py" -c "$probe" 2>&1); then
  echo "skipped: $label device absent: $(echo "$why" | tail -1)"
  exit 77
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$label" = cuda ] && [ ! -f "$root/.targets/pins/torch-fl-r5/torch_fl/flagos/__init__.py" ]; then
  echo "skipped: .targets/torch-fl and .targets/FlagGems (see README, 'Pointing it at real code') are absent"
  exit 77
fi
exec "$flagprop" run --manifest "$manifest" --report-dir "$report"
