#!/usr/bin/env bash
# Offload against no offload under the same limit: the reference CNN of
# configs/fashion_mnist_cnn_offload.yaml (cpu:0, 2 threads, memory_limit
# 58 MiB) trained for --steps steps with devices.cpu:0.offload=parameters
# (the whole batch of 64) and =none (2 micro-batches of 32), runs
# alternating; prints each variant's median over runs of the median step_ms
# of steps 11.. and, from a --trace of the offloaded run's steps 11..30, the
# fetches' milliseconds a step, how many of them the compute of the op
# before hid (exposed: the part of a fetch after that op ended, and a
# pass's first fetch whole) and the write-backs' milliseconds.
#
#   bench/offload_step_time.sh [--steps N] [--runs N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
steps=100
runs=5
bench_options 12 --steps=steps --runs=runs -- "$@"
bench_build
bench_machine

train() {  # offload run-number extra-args...
  local offload=$1 i=$2; shift 2
  "$dir/bin/coordinator" train "$root/configs/fashion_mnist_cnn_offload.yaml" --out-dir "$out/$offload-$i" \
    --log-every 1 --set train.max_steps="$steps" --set data.test_limit=256 --set "devices.cpu:0.offload=$offload" \
    "$@" >/dev/null 2>"$out/$offload-$i.log" || { cat "$out/$offload-$i.log" >&2; exit 1; }
}

for i in $(seq "$runs"); do
  train parameters "$i"
  train none "$i"
done
train parameters trace --trace "$out/trace.json" --trace-steps 11:30
python3 - "$out" "$runs" <<'PY'
import collections, json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def step_ms(d):
    lines = [json.loads(l) for l in open(f"{out}/{d}/metrics.jsonl")]
    return statistics.median(x["step_ms"] for x in lines if x.get("event") == "step" and x["step"] > 10)
for offload in ("parameters", "none"):
    ms = [step_ms(f"{offload}-{i}") for i in range(1, runs + 1)]
    print(f"offload={offload}: median {statistics.median(ms):.1f} ms a step ({' '.join(f'{m:.1f}' for m in ms)})")
events = json.load(open(f"{out}/trace.json"))["traceEvents"]
steps = collections.defaultdict(list)
for e in events:
    if e.get("ph") == "X" and e["pid"] == 1 and e["args"].get("phase") == "train":
        steps[e["args"]["step"]].append(e)
fetch = exposed = back = 0.0
hidden = pairs = 0
for ev in steps.values():
    ev.sort(key=lambda e: e["ts"])
    compute = [e for e in ev if e["tid"] == 1 and e["cat"] in ("forward", "backward")]
    back += sum(e["dur"] for e in ev if e["cat"] == "write_back")
    prev = None
    for f in (e for e in ev if e["cat"] == "fetch"):
        op = f["name"][len("fetch "):-len(" parameters")]
        own = next(c for c in compute if c["ts"] >= f["ts"] + f["dur"] - 0.01 and c["name"].startswith(op + " "))
        fetch += f["dur"]
        if prev is not None and prev["cat"] == own["cat"]:
            pairs += 1
            hidden += f["ts"] < prev["ts"] + prev["dur"]
            exposed += max(0.0, f["ts"] + f["dur"] - prev["ts"] - prev["dur"])
        else:
            exposed += f["dur"]
        prev = own
n = len(steps)
print(f"trace of {n} steps: fetches {fetch / n / 1000:.2f} ms a step, exposed {exposed / n / 1000:.2f} ms; "
      f"{hidden} of {pairs} fetches began during the op before; write-backs {back / n / 1000:.2f} ms a step")
PY
