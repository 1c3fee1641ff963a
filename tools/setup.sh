#!/usr/bin/env bash
# Installs flagprop's Debian dependencies (when missing) and builds it in
# ./build. Safe to run again: apt is skipped when everything is installed and
# the build is incremental. Needs root (or sudo) for apt on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=$(cat tools/debian-packages.txt)
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "flagprop setup: installing$missing"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt (unattended upgrades on a fresh machine) may hold the dpkg
  # lock: wait for it, up to 10 minutes, instead of failing at once.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ ! -f build/build.ninja ]; then
  # -g1 (line tables: backtraces and reports keep file and line) instead of
  # RelWithDebInfo's -g: a translation unit compiles in about 34 s here
  # against 44 s (targets/manifest.cpp, 2 cores). A debugging build passes
  # its own flags to cmake.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
fi
cmake --build build -j"$(nproc)"
