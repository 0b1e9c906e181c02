#!/usr/bin/env bash
# Training throughput of a devmap config on this machine, per thread count:
# median step time after warm-up (and the images/s it implies), wall time of
# the epoch, and the peak memory (VmHWM) of the worker and the coordinator.
#
#   bench/train_throughput.sh [--config FILE] [--threads "1 2"] [--steps N]
#
# --steps N stops each run after N steps (default: one whole epoch).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
config="$root/configs/fashion_mnist_cnn.yaml"
threads="1 2"
steps=0
bench_options 8 --config=config --threads=threads --steps=steps -- "$@"
bench_build

printf '%-8s %14s %16s %12s %14s %16s %14s\n' threads median_step_ms median_images/s epoch_s epoch_images/s worker_hwm_MiB coord_hwm_MiB
for t in $threads; do
  m="$out/metrics-$t.jsonl"
  "$dir/bin/coordinator" train "$config" --metrics "$m" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set "devices.cpu:0.threads=$t" \
    --set train.checkpoint="$out/model.safetensors" 2>"$out/log-$t.txt" ||
    { cat "$out/log-$t.txt" >&2; exit 1; }
  printf '%-8s %14.2f %16.0f %12.1f %14.0f %16.1f %14.1f\n' "$t" \
    "$(metric "$m" epoch median_step_ms)" "$(metric "$m" epoch median_images_per_s)" \
    "$(metric "$m" epoch epoch_seconds)" "$(metric "$m" epoch images_per_s)" \
    "$(python3 -c "print($(metric "$m" device vm_hwm_bytes)/2**20)")" \
    "$(python3 -c "print($(metric "$m" done coordinator_vm_hwm_bytes)/2**20)")"
done
