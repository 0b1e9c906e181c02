#!/usr/bin/env bash
# What --trace costs: the pipelined split (fashion_mnist_cnn_split.yaml,
# --threads per device, 4 micro-batches a step, 1f1b) trained for --steps
# steps with the trace off and on (every step), runs alternating; prints
# each kind's median of the epoch's median images/s and the trace's cost in
# percent, the trace file's size and its slices.
#
#   bench/trace_cost.sh [--threads N] [--steps N] [--runs N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads=1
steps=150
runs=3
bench_options 9 --threads=threads --steps=steps --runs=runs -- "$@"
bench_build

train() {  # tag run-number extra-args...
  local tag=$1 i=$2; shift 2
  "$dir/bin/coordinator" train "$root/configs/fashion_mnist_cnn_split.yaml" --metrics "$out/$tag-$i.jsonl" \
    --log-every 1000000 --set train.epochs=1 --set train.max_steps="$steps" --set data.test_limit=100 \
    --set train.checkpoint="$out/model.safetensors" --set "devices.cpu:0.threads=$threads" \
    --set "devices.cpu:1.threads=$threads" --set train.pipeline.micro_batches=4 --set train.pipeline.schedule=1f1b \
    "$@" >/dev/null 2>"$out/$tag-$i.log" || { cat "$out/$tag-$i.log" >&2; exit 1; }
  metric "$out/$tag-$i.jsonl" epoch median_images_per_s
}

off="" on=""
for i in $(seq "$runs"); do
  off+=" $(train off "$i")"
  on+=" $(train on "$i" --trace "$out/trace.json")"
done
python3 - "$off" "$on" "$out/trace.json" <<'PY'
import json, os, statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
mo, mn = statistics.median(off), statistics.median(on)
print(f"trace off: median {mo:.1f} images/s  ({' '.join(f'{x:.1f}' for x in off)})")
print(f"trace on:  median {mn:.1f} images/s  ({' '.join(f'{x:.1f}' for x in on)})")
print(f"cost of --trace: {(1 - mn / mo) * 100:.1f}% of images/s")
events = json.load(open(sys.argv[3]))["traceEvents"]
print(f"trace file: {os.path.getsize(sys.argv[3]) / 1e6:.1f} MB, {sum(e['ph'] == 'X' for e in events)} slices")
PY
