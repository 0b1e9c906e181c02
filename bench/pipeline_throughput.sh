#!/usr/bin/env bash
# Pipelining a split model: the reference model over two workers (convs on
# cpu:0, dense layers on cpu:1, --threads each), training and prediction.
# Runs alternate, one of each kind per round; prints each kind's median
# images/s and the ratios the pipeline issue asks for:
#   lockstep1   train.pipeline.micro_batches 1 (each step one batch, turns)
#   lockstep4   4 micro-batches a step, schedule none (the same work, turns)
#   1f1b4       4 micro-batches a step, schedule 1f1b (overlapped)
#   gpipe4      4 micro-batches a step, schedule gpipe
#   one         the whole model in one worker with 2 x --threads threads
# and predict of the 10000 test images at --predict-batch, lock-step against
# rounds of 4 batches (1f1b).
#
#   bench/pipeline_throughput.sh [--threads N] [--steps N] [--runs N] [--predict-batch N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads=1
steps=150
runs=3
predict_batch=1000
bench_options 14 --threads=threads --steps=steps --runs=runs --predict-batch=predict_batch -- "$@"
bench_build

train() {  # tag run-number config extra-args...
  local tag=$1 i=$2 config=$3; shift 3
  "$dir/bin/coordinator" train "$root/configs/$config" --metrics "$out/$tag-$i.jsonl" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set data.test_limit=100 \
    --set train.checkpoint="$out/model.safetensors" "$@" >/dev/null 2>"$out/$tag-$i.log" ||
    { cat "$out/$tag-$i.log" >&2; exit 1; }
  metric "$out/$tag-$i.jsonl" epoch median_images_per_s
}
split=(--set "devices.cpu:0.threads=$threads" --set "devices.cpu:1.threads=$threads")
predict() {  # tag run-number extra-args...
  local tag=$1 i=$2; shift 2
  "$dir/bin/coordinator" predict "$root/configs/fashion_mnist_cnn_split.yaml" --weights "$out/model.safetensors" \
    --input /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --output "$out/$tag.csv" \
    --batch "$predict_batch" --metrics "$out/$tag-$i.jsonl" "${split[@]}" "$@" >/dev/null 2>"$out/$tag-$i.log" ||
    { cat "$out/$tag-$i.log" >&2; exit 1; }
  metric "$out/$tag-$i.jsonl" done images_per_s
}

declare -A got
kinds=(lockstep1 lockstep4 1f1b4 gpipe4 one predict_lockstep predict_1f1b)
for i in $(seq "$runs"); do
  got[lockstep1]+=" $(train lockstep1 "$i" fashion_mnist_cnn_split.yaml "${split[@]}")"
  got[lockstep4]+=" $(train lockstep4 "$i" fashion_mnist_cnn_split.yaml "${split[@]}" \
    --set train.pipeline.micro_batches=4 --set train.pipeline.schedule=none)"
  got[1f1b4]+=" $(train 1f1b4 "$i" fashion_mnist_cnn_split.yaml "${split[@]}" \
    --set train.pipeline.micro_batches=4 --set train.pipeline.schedule=1f1b)"
  got[gpipe4]+=" $(train gpipe4 "$i" fashion_mnist_cnn_split.yaml "${split[@]}" \
    --set train.pipeline.micro_batches=4 --set train.pipeline.schedule=gpipe)"
  got[one]+=" $(train one "$i" fashion_mnist_cnn.yaml --set "devices.cpu:0.threads=$((2 * threads))")"
  got[predict_lockstep]+=" $(predict predict_lockstep "$i")"
  got[predict_1f1b]+=" $(predict predict_1f1b "$i" --set train.pipeline.micro_batches=4)"
done
args=()
for k in "${kinds[@]}"; do args+=("$k=${got[$k]}"); done
python3 - "$threads" "$(lscpu | sed -n 's/^Model name: *//p')" "${args[@]}" <<'PY'
import statistics, sys
threads, cpu, *pairs = sys.argv[1:]
runs = {k: [float(x) for x in v.split()] for k, v in (p.split("=", 1) for p in pairs)}
med = {k: statistics.median(v) for k, v in runs.items()}
print(f"CPU: {cpu}; threads per split worker: {threads}")
for k, v in runs.items():
    print(f"{k:17s} images/s: {' '.join(f'{x:.0f}' for x in v)}  median {med[k]:.0f}")
print(f"1f1b4 / lockstep4 (same work, overlapped): {med['1f1b4'] / med['lockstep4']:.2f}")
print(f"gpipe4 / lockstep4: {med['gpipe4'] / med['lockstep4']:.2f}")
print(f"1f1b4 / lockstep1 (the default step as one batch): {med['1f1b4'] / med['lockstep1']:.2f}")
print(f"1f1b4 / one worker with {2 * int(threads)} threads: {med['1f1b4'] / med['one']:.2f}")
print(f"predict rounds of 4 (1f1b) / lock-step: {med['predict_1f1b'] / med['predict_lockstep']:.2f}")
PY
