#!/usr/bin/env bash
# House style, checked by ctest's `lint` entry: every tracked C++ file as
# clang-format (.clang-format) writes it, every tracked Python file clean
# under flake8 (.flake8). Usage: tools/lint.sh [SOURCE_DIR] [--fix]; --fix
# formats the C++ files in place instead. Exit 0 clean, 1 not, 77 (skip) when
# clang-format or flake8 is not installed.
set -u
fix=0
dir=$(dirname "$0")/..
for a in "$@"; do
  if [ "$a" = --fix ]; then fix=1; else dir=$a; fi
done
cd "$dir" || exit 2
for tool in clang-format flake8; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool is not installed (tools/debian-packages.txt)"; exit 77; }
done
mapfile -t cpp < <(git ls-files '*.cpp' '*.h')
mapfile -t py < <(git ls-files '*.py')
if [ $fix = 1 ]; then
  clang-format -i --style=file "${cpp[@]}"
  exit 0
fi
status=0
if ! clang-format --dry-run --Werror --style=file "${cpp[@]}" 2>/tmp/flagprop-lint.$$; then
  echo "C++ files not as clang-format writes them (tools/lint.sh --fix formats them):"
  grep -o '^[^:]*' /tmp/flagprop-lint.$$ | sort -u | sed 's/^/  /'
  status=1
fi
rm -f /tmp/flagprop-lint.$$
if ! flake8 "${py[@]}"; then
  echo "Python files not clean under flake8 (.flake8)"
  status=1
fi
[ $status = 0 ] && echo "lint: ${#cpp[@]} C++ and ${#py[@]} Python files clean"
exit $status
