#!/usr/bin/env bash
# The price of splitting: the reference model trained in one worker process
# with N threads against the same model split over two workers (convs on
# cpu:0, dense layers on cpu:1) with N threads each, taking turns. Runs
# alternate (one, split, one, split, ...); prints each run's median step
# images/s and the median ratio split/one.
#
#   bench/split_throughput.sh [--threads N] [--steps N] [--runs N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads=2
steps=150
runs=3
bench_options 8 --threads=threads --steps=steps --runs=runs -- "$@"
bench_build

run() {  # config tag run-number extra-args...
  local config=$1 tag=$2 i=$3; shift 3
  "$dir/bin/coordinator" train "$root/configs/$config" --metrics "$out/$tag-$i.jsonl" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set data.test_limit=100 \
    --set train.checkpoint="$out/model.safetensors" "$@" 2>"$out/$tag-$i.log" ||
    { cat "$out/$tag-$i.log" >&2; exit 1; }
  metric "$out/$tag-$i.jsonl" epoch median_images_per_s
}

one=(); split=()
for i in $(seq "$runs"); do
  one+=("$(run fashion_mnist_cnn.yaml one "$i" --set "devices.cpu:0.threads=$threads")")
  split+=("$(run fashion_mnist_cnn_split.yaml split "$i" --set "devices.cpu:0.threads=$threads" \
             --set "devices.cpu:1.threads=$threads")")
done
python3 - "$threads" "${one[*]}" "${split[*]}" <<'PY'
import statistics, sys
t, one, split = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"threads per worker: {t}")
print(f"one worker   images/s: {one}  median {statistics.median(one):.0f}")
print(f"two workers  images/s: {split}  median {statistics.median(split):.0f}")
print(f"ratio split/one (medians): {statistics.median(split) / statistics.median(one):.3f}")
PY
