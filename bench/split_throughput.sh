#!/usr/bin/env bash
# The price of splitting: the reference model trained in one worker process
# with N threads against the same model split over two workers (convs on
# cpu:0, dense layers on cpu:1) with N threads each, taking turns. Runs
# alternate (one, split, one, split, ...); prints each run's median step
# images/s and the median ratio split/one.
#
#   bench/split_throughput.sh [--threads N] [--steps N] [--runs N]
set -euo pipefail
threads=2
steps=150
runs=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "split_throughput.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

run() {  # config tag run-number extra-args...
  local config=$1 tag=$2 i=$3; shift 3
  "$dir/bin/coordinator" train "$root/configs/$config" --metrics "$out/$tag-$i.jsonl" --log-every 1000000 \
    --set train.epochs=1 --set train.max_steps="$steps" --set data.test_limit=100 \
    --set train.checkpoint="$out/model.safetensors" "$@" 2>"$out/$tag-$i.log" ||
    { cat "$out/$tag-$i.log" >&2; exit 1; }
  python3 -c "import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l)
    if d['event']=='epoch': print(round(d['median_images_per_s'],1))" "$out/$tag-$i.jsonl"
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
