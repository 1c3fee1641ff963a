#!/usr/bin/env bash
# Prints every sanitizer report under DIR (files that ASan's and UBSan's
# log_path option writes, one per process: NAME.PID) and exits 1 when there
# is one, 0 when DIR holds none; exit 2 when DIR is not a folder.
# Usage: tools/sanitizer_reports.sh DIR (tools/sanitize.sh runs it).
set -euo pipefail
dir=${1:?usage: tools/sanitizer_reports.sh DIR}
if [ ! -d "$dir" ]; then
  echo "sanitizer_reports: $dir is not a folder" >&2
  exit 2
fi
found=0
for f in "$dir"/*; do
  [ -f "$f" ] || continue
  [ -s "$f" ] || continue
  found=$((found + 1))
  echo "=== sanitizer report ${f##*/} (process ${f##*.}) ==="
  head -c 20000 "$f"
  echo
done
if [ "$found" -gt 0 ]; then
  echo "sanitizer_reports: $found process(es) wrote a sanitizer report (listed above)" >&2
  exit 1
fi
echo "sanitizer_reports: no sanitizer report in $dir"
