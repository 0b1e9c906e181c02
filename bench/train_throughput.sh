#!/usr/bin/env bash
# Training throughput of a devmap config on this machine, per thread count:
# median step time after warm-up (and the images/s it implies), wall time of
# the epoch, and the peak memory (VmHWM) of the worker and the coordinator.
#
#   bench/train_throughput.sh [--config FILE] [--threads "1 2"] [--steps N]
#
# --steps N stops each run after N steps (default: one whole epoch).
set -euo pipefail
config="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/configs/fashion_mnist_cnn.yaml"
threads="1 2"
steps=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "train_throughput.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

field() { python3 -c "import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l)
    if d.get('event')==sys.argv[2]: v=d.get(sys.argv[3])
print(v)" "$@"; }

printf '%-8s %14s %16s %12s %14s %16s %14s\n' threads median_step_ms median_images/s epoch_s epoch_images/s worker_hwm_MiB coord_hwm_MiB
for t in $threads; do
  m="$out/metrics-$t.jsonl"
  "$dir/bin/coordinator" train "$config" --metrics "$m" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set "devices.cpu:0.threads=$t" \
    --set train.checkpoint="$out/model.safetensors" 2>"$out/log-$t.txt" ||
    { cat "$out/log-$t.txt" >&2; exit 1; }
  printf '%-8s %14.2f %16.0f %12.1f %14.0f %16.1f %14.1f\n' "$t" \
    "$(field "$m" epoch median_step_ms)" "$(field "$m" epoch median_images_per_s)" \
    "$(field "$m" epoch epoch_seconds)" "$(field "$m" epoch images_per_s)" \
    "$(python3 -c "print($(field "$m" device vm_hwm_bytes)/2**20)")" \
    "$(python3 -c "print($(field "$m" done coordinator_vm_hwm_bytes)/2**20)")"
done
