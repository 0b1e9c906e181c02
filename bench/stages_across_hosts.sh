#!/usr/bin/env bash
# Pipeline stages across the namespace hosts of scripts/testbed.sh (TCP
# over veth links) against the same split on one machine, runs alternating:
#   hosts      configs/fashion_mnist_cnn_split.yaml with its convolutions
#              (cpu:0) on node1 and its dense layers (cpu:1) on node2; the
#              cut edge's activations and gradients cross through MPI
#   one        the same config on this machine (shared-memory rings)
# Both train batch 64 as 4 micro-batches, 1F1B, one thread per device.
# Prints each run's median images/s (the epoch's median step after its
# warm-up) and the ratio hosts / one. Needs root (namespaces) and MPI in the
# build; makes its own test bed and removes it on exit. The test bed's hosts
# share this machine's cores: on a 2-core machine both hosts' workers,
# coordinators and MPI's TCP copies compete for the same two.
#
#   bench/stages_across_hosts.sh [--runs N] [--steps N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=3
steps=150
bench_options 15 --runs=runs --steps=steps -- "$@"
bench_build
bench_testbed stb
bench_machine
config="$root/configs/fashion_mnist_cnn_split.yaml"
# The hosted config: the devices carry their hosts.
sed -e 's/\bcpu:1\b/node2\/cpu:1/g' -e 's/\([^/[:alnum:]_]\)cpu:0\b/\1node1\/cpu:0/g' "$config" |
  { echo "hosts: [node1, node2]"; cat; } >"$shared/hosted.yaml"
grep -q 'node2/cpu:1' "$shared/hosted.yaml" || { echo "stages_across_hosts.sh: no cpu:1 in $config" >&2; exit 1; }
common=(--set data.train_limit=$((steps * 64)) --set data.test_limit=256 --set train.epochs=1
  --set train.max_steps="$steps" --set "train.pipeline={schedule: 1f1b, micro_batches: 4}")

run() {  # NAME RUN: one run, its metrics in $shared/NAME-RUN.jsonl
  local name=$1 k=$2 metrics="$shared/$1-$2.jsonl" ckpt="$shared/$1-$2.safetensors"
  case "$name" in
    hosts) bench_on_hosts "$shared/hosted.yaml" "${common[@]}" --set train.checkpoint="$ckpt" --metrics "$metrics" ;;
    one) (cd "$shared" && "$dir/bin/coordinator" "$config" "${common[@]}" --set train.checkpoint="$ckpt" \
      --metrics "$metrics") >/dev/null 2>"$out/err" ;;
  esac || { echo "stages_across_hosts.sh: the $name run failed:" >&2; tail -5 "$out/err" >&2; exit 1; }
  metric "$metrics" epoch median_images_per_s
}

declare -A rate=()
for ((k = 1; k <= runs; k++)); do
  for name in hosts one; do
    rate[$name]+="$(run "$name" "$k") "
  done
done
python3 - "${rate[hosts]}" "${rate[one]}" <<'EOF'
import statistics, sys
names = ["stages on 2 hosts (convolutions on node1, dense layers on node2)", "the same split on this machine"]
medians = []
for name, text in zip(names, sys.argv[1:]):
    values = [float(v) for v in text.split()]
    medians.append(statistics.median(values))
    print(f"{name}: {medians[-1]:.0f} images/s median of {len(values)} ({', '.join(f'{v:.0f}' for v in values)})")
print(f"hosts / one machine: {medians[0] / medians[1]:.2f}x")
EOF
