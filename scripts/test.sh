#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors and
# runs every test under ctest. Extra arguments go to ctest (e.g. -R Config).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
dir=$("$root/scripts/build.sh" ci)
cd "$dir"
ctest --output-on-failure --timeout 600 -j "$(nproc 2>/dev/null || echo 2)" "$@"
# Segments are named devmap-<owner pid>-...: one whose owner is gone leaked.
leaked=()
for f in /dev/shm/devmap-*; do
  [[ -e "$f" ]] || continue
  pid=${f#/dev/shm/devmap-}; pid=${pid%%-*}
  kill -0 "$pid" 2>/dev/null || leaked+=("$f")
done
if [[ ${#leaked[@]} -gt 0 ]]; then
  echo "test.sh: shared-memory segments left behind: ${leaked[*]}" >&2
  exit 1
fi
