#!/usr/bin/env bash
# Data-parallel training of the reference CNN across the namespace hosts of
# scripts/testbed.sh (TCP over veth links), runs alternating:
#   replicas2   2 replicas x 1 thread, one per host, global batch 128
#   one         1 replica x 1 thread, batch 64, on this machine
#   threads2    1 replica x 2 threads, batch 64, on this machine
# Prints each run's median images/s (the epoch's median step after its
# warm-up) and the ratio replicas2 / one; then one more replicas2 run,
# traced over 20 steps, gives the gradient sums' time per step and the
# share of it hidden behind the backward pass (bench/trace_report.py). Needs root (namespaces) and MPI in
# the build; makes its own test bed and removes it on exit. The test bed's
# hosts share this machine's cores: on a 2-core machine the two replicas'
# workers, coordinators and MPI's TCP copies all compete for the same two.
#
#   bench/data_parallel.sh [--runs N] [--steps N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=3
steps=150
bench_options 13 --runs=runs --steps=steps -- "$@"
bench_build
bench_testbed dpb
bench_machine
config="$root/configs/fashion_mnist_cnn.yaml"
common=(--set devices.cpu:0.threads=1 --set data.train_limit=$((steps * 128)) --set data.test_limit=256
  --set train.epochs=1 --set train.max_steps="$steps")

run() {  # NAME RUN [ARG...]: one run, its metrics in $shared/NAME-RUN.jsonl; replicas2 takes the ARGs too
  local name=$1 k=$2 metrics="$shared/$1-$2.jsonl" ckpt="$shared/$1-$2.safetensors"
  shift 2
  case "$name" in
    replicas2) bench_on_hosts "$config" "${common[@]}" --set data_parallel.replicas=2 --set train.batch_size=128 \
      --set train.checkpoint="$ckpt" --metrics "$metrics" "$@" ;;
    one) (cd "$shared" && "$dir/bin/coordinator" "$config" "${common[@]}" --set train.checkpoint="$ckpt" \
      --metrics "$metrics") >/dev/null 2>"$out/err" ;;
    threads2) (cd "$shared" && "$dir/bin/coordinator" "$config" "${common[@]}" --set devices.cpu:0.threads=2 \
      --set train.checkpoint="$ckpt" --metrics "$metrics") >/dev/null 2>"$out/err" ;;
  esac || { echo "data_parallel.sh: the $name run failed:" >&2; tail -5 "$out/err" >&2; exit 1; }
  metric "$metrics" epoch median_images_per_s
}

declare -A rate=()
for ((k = 1; k <= runs; k++)); do
  for name in replicas2 one threads2; do
    rate[$name]+="$(run "$name" "$k") "
  done
done
python3 - "${rate[replicas2]}" "${rate[one]}" "${rate[threads2]}" <<'EOF'
import statistics, sys
names = ["2 replicas x 1 thread (batch 128)", "1 replica x 1 thread (batch 64)", "1 replica x 2 threads (batch 64)"]
medians = []
for name, text in zip(names, sys.argv[1:]):
    values = [float(v) for v in text.split()]
    medians.append(statistics.median(values))
    print(f"{name}: {medians[-1]:.0f} images/s median of {len(values)} ({', '.join(f'{v:.0f}' for v in values)})")
print(f"2 replicas / 1 replica, 1 thread each: {medians[0] / medians[1]:.2f}x")
EOF
trace_from=$((steps / 2))
run replicas2 traced --trace "$shared/replicas2.json" --trace-steps "$trace_from:$((trace_from + 19))" >/dev/null
python3 "$root/bench/trace_report.py" "$shared/replicas2.json" | grep '^gradient sums'
