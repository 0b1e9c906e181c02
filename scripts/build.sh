#!/usr/bin/env bash
# Configures (once) and builds one CMake preset; prints the build directory.
#   scripts/build.sh [PRESET] [TARGET...]     PRESET defaults to release
# Build output goes to stderr so callers can capture the directory.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
shift || true
dir="$root/build/$preset"
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake --preset "$preset" -S "$root" >&2
fi
jobs=$(nproc 2>/dev/null || echo 2)
if [[ $# -gt 0 ]]; then
  cmake --build "$dir" -j "$jobs" --target "$@" >&2
else
  cmake --build "$dir" -j "$jobs" >&2
fi
echo "$dir"
