#!/usr/bin/env bash
# The planner against every placement it could have made: the reference
# model (configs/fashion_mnist_cnn_auto.yaml) over cpu:0 and cpu:1,
# --threads each. Candidates: each contiguous split (the first k ops on
# cpu:0, the rest on cpu:1), the whole model on cpu:0 and on cpu:1, each
# with the micro-batches and schedule the planner picks for that placement
# (its `plan --emit-map`), and `auto` itself. A fresh calibration cache is
# measured first. Runs alternate (every candidate once a round), median of
# --runs; prints per candidate the planner's predicted step, the measured
# median step and their ratio, images/s, each device's allocator peak over
# the runs against its memory_limit, and auto against the best candidate. --limits "A B" gives cpu:0 and cpu:1 memory limits (e.g.
# "32MiB 48MiB"): candidates that do not fit are listed as such.
#
#   bench/placement_sweep.sh [--threads N] [--steps N] [--runs N] [--limits "A B"]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads=1
steps=150
runs=3
limits=""
bench_options 15 --threads=threads --steps=steps --runs=runs --limits=limits -- "$@"
bench_build
export DEVMAP_CALIBRATION_CACHE="$out/calibration.tsv"
config="$root/configs/fashion_mnist_cnn_auto.yaml"
common=(--set "devices.cpu:0.threads=$threads" --set "devices.cpu:1.threads=$threads")
if [[ -n $limits ]]; then
  read -r l0 l1 <<<"$limits"
  common+=(--set "devices.cpu:0.memory_limit=$l0" --set "devices.cpu:1.memory_limit=$l1")
fi
"$dir/bin/coordinator" calibrate "$config" "${common[@]}" >&2

ops=(conv1 relu1 pool1 conv2 relu2 pool2 flat fc1 relu3 logits)
# A candidate: its name and the devices of ops (the sinks follow logits:
# the planner places them, the placement is otherwise fixed).
plan_candidate() {  # name device-per-op...
  local name=$1; shift
  local args=(--set device_map.default=auto --set "device_map.place.image=cpu:0" --set "device_map.place.label=cpu:0")
  local i=0
  for d in "$@"; do args+=(--set "device_map.place.${ops[$i]}=$d"); i=$((i + 1)); done
  if "$dir/bin/coordinator" plan "$config" "${common[@]}" "${args[@]}" --json --emit-map "$out/$name.yaml" \
    >"$out/$name.plan.json" 2>"$out/$name.plan.log"; then
    echo "$name"
  else
    echo "  $name: $(head -c 300 "$out/$name.plan.log")" >&2
  fi
}
candidates=()
for k in $(seq 0 ${#ops[@]}); do
  devs=()
  for i in "${!ops[@]}"; do devs+=("$([[ $i -lt $k ]] && echo cpu:0 || echo cpu:1)"); done
  name="split$k"
  [[ $k -eq 0 ]] && name=all_cpu1
  [[ $k -eq ${#ops[@]} ]] && name=all_cpu0
  c=$(plan_candidate "$name" "${devs[@]}")
  [[ -n $c ]] && candidates+=("$c")
done
"$dir/bin/coordinator" plan "$config" "${common[@]}" --json --emit-map "$out/auto.yaml" >"$out/auto.plan.json" \
  2>"$out/auto.plan.log" || { cat "$out/auto.plan.log" >&2; exit 1; }
candidates+=(auto)

train() {  # name run-number
  "$dir/bin/coordinator" train "$out/$1.yaml" --metrics "$out/$1-$2.jsonl" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set data.test_limit=100 \
    --set train.checkpoint="$out/model.safetensors" >/dev/null 2>"$out/$1-$2.log" ||
    { cat "$out/$1-$2.log" >&2; exit 1; }
}
for i in $(seq "$runs"); do
  for c in "${candidates[@]}"; do train "$c" "$i"; done
done
python3 - "$out" "$runs" "$threads" "$limits" "$(lscpu | sed -n 's/^Model name: *//p')" "${candidates[@]}" <<'PY'
import json, statistics, sys
out, runs, threads, limits, cpu, *names = sys.argv[1:]
def last(path, event):
    v = None
    for line in open(path):
        d = json.loads(line)
        if d.get("event") == event: v = d
    return v
rows = []
for n in names:
    plan = json.loads(open(f"{out}/{n}.plan.json").read())["auto_placement"]
    ips = [last(f"{out}/{n}-{i}.jsonl", "epoch")["median_images_per_s"] for i in range(1, int(runs) + 1)]
    ms = [last(f"{out}/{n}-{i}.jsonl", "epoch")["median_step_ms"] for i in range(1, int(runs) + 1)]
    # The allocator's peak on each device over the runs, against its limit.
    peaks = {}
    for i in range(1, int(runs) + 1):
        for line in open(f"{out}/{n}-{i}.jsonl"):
            d = json.loads(line)
            if d.get("event") == "device":
                p, lim = peaks.get(d["device"], (0, d["limit_bytes"]))
                peaks[d["device"]] = (max(p, d["peak_bytes"]), lim)
    rows.append((n, plan, statistics.median(ips), statistics.median(ms), ips, peaks))
print(f"CPU: {cpu}; {threads} thread(s) per device; limits: {limits or 'none'}; median of {runs}, runs alternating")
print(f"{'candidate':10s} {'placement':40s} {'choice':18s} {'pred ms':>8s} {'meas ms':>8s} {'meas/pred':>9s} {'img/s':>7s}")
mib = lambda b: f"{b / 2**20:.1f}"
over = []
for n, p, ips, ms, all_ips, peaks in rows:
    where = ", ".join(f"{d['device']} {d['ops'][0]}..{d['ops'][-1]}" for d in p["devices"])
    choice = f"{p['micro_batches']}x{p['micro_batch']} {p['schedule']}"
    pred = p["predicted_step_ms"]
    peak = " ".join(f"{dev} {mib(pk)}" + (f"/{mib(lim)}" if lim else "") for dev, (pk, lim) in sorted(peaks.items()))
    over += [f"{n} {dev}" for dev, (pk, lim) in peaks.items() if lim and pk > lim]
    print(f"{n:10s} {where:40s} {choice:18s} {pred:8.1f} {ms:8.1f} {ms / pred:9.2f} {ips:7.0f}  ({' '.join(f'{x:.0f}' for x in all_ips)})  peak MiB: {peak}")
print("allocator peaks: " + ("over the limit on " + ", ".join(over) if over else "every device under its limit"))
best = max((r for r in rows if r[0] != "auto"), key=lambda r: r[2])
auto = next(r for r in rows if r[0] == "auto")
print(f"auto / best candidate ({best[0]}): {auto[2] / best[2]:.3f}")
PY
