#!/usr/bin/env bash
# Assembles the FlagGems trees the GPU manifests name from a FlagGems src/
# checkout and the pinned libentry.py files, all in the git-ignored .targets/
# (see docs/real-code.md):
#   .targets/FlagGems/src                          a FlagGems checkout's src/
#   .targets/pins/libentry-r5/libentry.py          the R5 libentry.py (SHA256 4c22919c...)
#   .targets/pins/libentry-helper/libentry.py      one with _descriptor_cache_key (ed5d38a9...)
# makes .targets/flaggems-r5/src and .targets/flaggems-helper/src (hard links
# to the checkout but for libentry.py). Exits 1 naming the file that is
# missing or whose SHA256 differs.
set -euo pipefail
cd "$(dirname "$0")/.."
src=.targets/FlagGems/src
[ -f "$src/flag_gems/utils/libentry.py" ] || { echo "assemble_pins: $src has no flag_gems/utils/libentry.py"; exit 1; }
assemble() {  # assemble NAME LIBENTRY SHA256
  local name=$1 lib=$2 want=$3 seen
  [ -f "$lib" ] || { echo "assemble_pins: $lib is missing"; exit 1; }
  seen=$(sha256sum "$lib" | cut -d' ' -f1)
  [ "$seen" = "$want" ] || { echo "assemble_pins: $lib has SHA256 $seen, expected $want"; exit 1; }
  rm -rf ".targets/$name"
  mkdir -p ".targets/$name"
  cp -al "$src" ".targets/$name/src"
  rm ".targets/$name/src/flag_gems/utils/libentry.py"
  cp "$lib" ".targets/$name/src/flag_gems/utils/libentry.py"
  echo "assemble_pins: .targets/$name/src (libentry.py $seen)"
}
assemble flaggems-r5 .targets/pins/libentry-r5/libentry.py 4c22919c3ec3a4a0ae652326fe36496e0a5db83c7a378a57a369438c5d6054ba
assemble flaggems-helper .targets/pins/libentry-helper/libentry.py ed5d38a903d1b67514778dba6a22a6da6c8e1eccb71617ed979d9edaf48b16d8
