#!/usr/bin/env bash
# The bit invariants checked as other CPUs' dispatch computes them.
#
#   scripts/emulated_cpus.sh BUILD_DIR [CPU_MODEL...]
#
# OpenBLAS and oneDNN choose kernels, blockings and remainder paths by the
# CPU they find, so a test that passes on this machine says nothing of an
# AVX2 machine. Under qemu-user (Debian's qemu-user) the libraries dispatch
# as on the emulated CPU model. For each model (default: Haswell, the first
# AVX2 Intel core, and EPYC-Milan, an AVX2 Zen 3) this runs:
#   - the kernel-level invariance tests on small shapes (a gradient chunk's
#     calls give the same bits wherever its samples sit, pool sizes, a
#     oneDNN sample's independence of its group);
#   - the executor's micro-batch tests (whole batch against micro-batches
#     of whole gradient chunks, to the bit), offload's (parameters in
#     host memory against on the device, to the bit) and the split-op
#     tests (an op split into parts: the same bits run to run, the unsplit
#     op's initial weights, its losses within float32 reordering);
#   - one end-to-end training through the real processes, the coordinator
#     natively and every worker_cpu under the emulated model
#     (DEVMAP_WORKER_DIR points at a wrapper): one step of 64 as 4
#     micro-batches has the whole batch's bits.
# QEMU 7.2 emulates AVX2 but not AVX-512: it checks the AVX2 dispatch from
# any x86-64 machine, not the other way round. The stage prints the models
# it covered and skips, with its reason, where it cannot emulate (no
# qemu-x86_64, not an x86-64 machine, a model this QEMU does not know).
# Exit 0 when every covered model passes (or none can be emulated), 1 when
# a check fails.
set -euo pipefail
if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
build=$(cd "$1" && pwd)
shift
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(Haswell EPYC-Milan)

skip() {
  echo "emulated CPUs: skipped: $1" >&2
  exit 0
}
[[ "$(uname -m)" == "x86_64" ]] || skip "this machine is $(uname -m); qemu-user's x86-64 models run x86-64 binaries"
command -v qemu-x86_64 >/dev/null || skip "qemu-x86_64 is not installed (scripts/setup.sh installs qemu-user)"
known=$(qemu-x86_64 -cpu help 2>/dev/null || true)

kernel_filter='GradientChunks.*:Determinism.*:CpuPath/ConvOneDnn.ASamplesResultDoesNotDependOnItsGroup/*'
kernel_filter+=':CpuPath/ConvOneDnn.PoolSizeDoesNotChangeTheBits/*'
executor_filter='MicroBatches.*:Offload.TrainsWithTheBitsOfParametersOnTheDevice:SplitOpExecutor.*'
integration_filter='MicroBatchTraining.FourMicroBatchesGiveTheFullBatchUpdate'

wrappers=$(mktemp -d "${TMPDIR:-/tmp}/devmap-emulated.XXXXXX")
trap 'rm -rf "$wrappers"' EXIT
# An emulated worker measures an emulated FMA peak and emulated op times:
# they go to caches of their own, never the user's (~/.cache/devmap), where
# they would pass for this machine's.
export XDG_CACHE_HOME="$wrappers/cache"

covered=() failed=()
for model in "${models[@]}"; do
  if ! grep -qw -- "$model" <<<"$known"; then
    echo "emulated CPUs: $model skipped: this qemu-x86_64 does not know the model (qemu-x86_64 -cpu help)" >&2
    continue
  fi
  echo "emulated CPUs: $model" >&2
  # qemu warns of host features TCG lacks (x2apic, ...): noise here.
  run() { qemu-x86_64 -cpu "$model" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2); }
  mkdir -p "$wrappers/$model"
  printf '#!/bin/sh\nexec qemu-x86_64 -cpu %s %q "$@"\n' "$model" "$build/bin/worker_cpu" >"$wrappers/$model/worker_cpu"
  chmod +x "$wrappers/$model/worker_cpu"
  ok=1
  run "$build/bin/kernel_tests" --gtest_brief=1 --gtest_filter="$kernel_filter" || ok=0
  run "$build/bin/executor_tests" --gtest_brief=1 --gtest_filter="$executor_filter" || ok=0
  DEVMAP_WORKER_DIR="$wrappers/$model" "$build/bin/integration_tests" --gtest_brief=1 \
    --gtest_filter="$integration_filter" || ok=0
  covered+=("$model")
  [[ $ok -eq 1 ]] || failed+=("$model")
done

if [[ ${#covered[@]} -eq 0 ]]; then
  skip "none of the models (${models[*]}) could be emulated"
fi
echo "emulated CPUs: covered ${covered[*]}; failed: ${failed[*]:-none}" >&2
[[ ${#failed[@]} -eq 0 ]]
