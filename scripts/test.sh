#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test under
# ctest. Extra arguments go to ctest (e.g. -R Config).
#
#   scripts/test.sh [--sanitizers] [CTEST_ARGS...]
#
# The build: with CI=true the ci preset (warnings as errors); otherwise the
# release preset, the build scripts/launch.sh makes, so that one build
# serves both. DEVMAP_PRESET picks another (DEVMAP_PRESET=ci: warnings as
# errors here too).
#
# After the suite, the emulated stage (scripts/emulated_cpus.sh) runs the
# bit-invariance tests under qemu-user's Haswell and EPYC-Milan, where
# OpenBLAS and oneDNN dispatch as on those AVX2 CPUs (skipped, with the
# reason, where it cannot emulate, and when CTEST_ARGS pick tests).
#
# With --sanitizers, or CI=true, two more stages follow the suite:
#   asan  the suite again under AddressSanitizer + UBSan (preset asan),
#         leaving out the tests labelled slow (long training) and python
#   tsan  the transport tests and the thread pool's under ThreadSanitizer
#         (preset tsan), with tests/tsan.supp for libzmq's internals
# docs/TESTING.md describes the labels and stages.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitizers=0
[[ "${CI:-}" == "true" ]] && sanitizers=1
args=()
for a in "$@"; do
  if [[ "$a" == "--sanitizers" ]]; then sanitizers=1; else args+=("$a"); fi
done
jobs=$(nproc 2>/dev/null || echo 2)
"$root/scripts/setup.sh" --test

# Segments are named devmap-<owner pid>-...: one whose owner is gone leaked.
check_segments() {
  local leaked=() f pid
  for f in /dev/shm/devmap-*; do
    [[ -e "$f" ]] || continue
    pid=${f#/dev/shm/devmap-}; pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null || leaked+=("$f")
  done
  if [[ ${#leaked[@]} -gt 0 ]]; then
    echo "test.sh: shared-memory segments left behind ($1): ${leaked[*]}" >&2
    exit 1
  fi
}

# stage NAME: prints how long the previous stage took and starts timing NAME.
stage_start=$SECONDS stage_name=""
stage() {
  [[ -z "$stage_name" ]] || echo "test.sh: stage $stage_name took $((SECONDS - stage_start)) s" >&2
  stage_name=$1 stage_start=$SECONDS
}

preset=${DEVMAP_PRESET:-release}
[[ "${CI:-}" == "true" ]] && preset=${DEVMAP_PRESET:-ci}
stage "build ($preset)"
dir=$("$root/scripts/build.sh" "$preset")
stage "test ($preset)"
(cd "$dir" && ctest --output-on-failure --timeout 600 -j "$jobs" "${args[@]}")
check_segments "$preset"

stage "emulated CPUs"
if [[ ${#args[@]} -eq 0 ]]; then
  "$root/scripts/emulated_cpus.sh" "$dir"
  check_segments "emulated CPUs"
else
  echo "test.sh: emulated CPUs skipped: ctest arguments pick a subset (${args[*]})" >&2
fi

if [[ $sanitizers -eq 1 ]]; then
  stage "build (asan)"
  dir=$("$root/scripts/build.sh" asan)
  stage "test (asan)"
  # detect_leaks: LeakSanitizer runs at every exit, child processes too.
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --output-on-failure --timeout 600 -j "$jobs" -LE 'slow|python' "${args[@]}")
  check_segments "asan"

  stage "build (tsan)"
  dir=$("$root/scripts/build.sh" tsan transport_tests core_tests)
  stage "test (tsan)"
  (cd "$dir" && TSAN_OPTIONS="suppressions=$root/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1" \
    ctest --output-on-failure --timeout 180 -j "$jobs" -L transport "${args[@]}")
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" "$dir/bin/core_tests" --gtest_filter='ThreadPool.*' \
    --gtest_repeat=20 --gtest_brief=1
  check_segments "tsan"
fi
stage ""
