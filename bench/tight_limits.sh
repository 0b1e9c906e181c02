#!/usr/bin/env bash
# The reference CNN under 16 MiB a device against the same model without
# limits, runs alternating, --steps steps each:
#   unlimited  configs/fashion_mnist_cnn_split_op.yaml: fc1 split 50/50 over
#              cpu:0 and cpu:1, no memory_limit;
#   hand       configs/fashion_mnist_cnn_16mib.yaml: the levers by hand;
#   auto       configs/fashion_mnist_cnn_auto.yaml with both limits at 16
#              MiB, `auto` choosing its levers from op times `coordinator
#              calibrate` measured first (into a cache of the script's own;
#              `train` would calibrate so by itself).
# Prints each variant's median over runs of the median step_ms of steps
# 6.., the range, the ratio to the unlimited split, the micro-batches the
# run chose and each device's allocator peak against its limit.
#
#   bench/tight_limits.sh [--steps N] [--runs N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
steps=60
runs=3
bench_options 16 --steps=steps --runs=runs -- "$@"
bench_build
bench_machine

limits=(--set devices.cpu:0.memory_limit=16MiB --set devices.cpu:1.memory_limit=16MiB)
train() {  # tag run-number config extra-args...
  local tag=$1 i=$2 config=$3; shift 3
  "$dir/bin/coordinator" train "$root/configs/$config" --out-dir "$out/$tag-$i" --log-every 1 \
    --set train.max_steps="$steps" --set data.test_limit=256 "$@" >/dev/null 2>"$out/$tag-$i.log" ||
    { cat "$out/$tag-$i.log" >&2; exit 1; }
}

echo "calibrating configs/fashion_mnist_cnn_auto.yaml at 16 MiB a device..." >&2
"$dir/bin/coordinator" calibrate "$root/configs/fashion_mnist_cnn_auto.yaml" --calibration "$out/calibration.tsv" \
  "${limits[@]}" >/dev/null 2>"$out/calibrate.log" || { cat "$out/calibrate.log" >&2; exit 1; }
for i in $(seq "$runs"); do
  train unlimited "$i" fashion_mnist_cnn_split_op.yaml
  train hand "$i" fashion_mnist_cnn_16mib.yaml
  train auto "$i" fashion_mnist_cnn_auto.yaml "${limits[@]}" --calibration "$out/calibration.tsv"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def lines(d):
    return [json.loads(l) for l in open(f"{out}/{d}/metrics.jsonl")]
def step_ms(d):
    return statistics.median(x["step_ms"] for x in lines(d) if x.get("event") == "step" and x["step"] > 5)
base = None
for tag, what in (("unlimited", "split_op.yaml, no limits"), ("hand", "16mib.yaml, levers by hand"),
                  ("auto", "auto.yaml at 16 MiB")):
    ms = [step_ms(f"{tag}-{i}") for i in range(1, runs + 1)]
    med = statistics.median(ms)
    base = base or med
    first = lines(f"{tag}-1")
    plan = next(x for x in first if x.get("event") == "memory_plan")
    print(f"{tag:9} ({what}): median {med:.1f} ms a step [{min(ms):.1f}-{max(ms):.1f}], "
          f"{med / base:.2f}x the unlimited split; {plan['micro_batches']} micro-batches of at most "
          f"{plan['micro_batch']}")
    for line in open(f"{out}/{tag}-1.log"):
        if line.startswith("devmap: auto: "):
            print(f"          lever: {line[len('devmap: auto: '):].split(' (')[0].strip()}")
    for d in (x for x in first if x.get("event") == "device"):
        limit = f"{d['limit_bytes'] / 2**20:.2f} MiB" if d["limit_bytes"] else "no limit"
        print(f"          {d['device']}: allocator peak {d['peak_bytes'] / 2**20:.2f} MiB, memory_limit {limit}")
PY
