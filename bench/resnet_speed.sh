#!/usr/bin/env bash
# The ResNet of configs/fashion_mnist_resnet.yaml, devmap against its peers,
# side by side: training images/s (median step after 5 warm-up steps, over
# --steps steps at batch 128) and prediction images/s (the 10000 test
# images at batch --predict-batch, with the weights devmap just trained), at
# each thread count. Runs alternate devmap / each peer run by run, --runs of
# each; prints the median and spread (min-max) of each, the ratios devmap /
# peer of the medians, and how many of the 10000 labels each peer's
# prediction shares with devmap's (the same model and weights ran).
#
#   bench/resnet_speed.sh [--threads "1 2"] [--runs 3] [--steps 50] [--predict-batch 1000] [--newest auto|no]
#
# The peers: Debian's PyTorch 1.13 (python3-torch, /usr/bin/python3); with
# --newest auto (the default) also the newest PyTorch (PyPI's own wheel, with
# its CUDA libraries, run on the CPU) and the newest tensorflow-cpu, from the
# venv bench/compare_pytorch.sh uses (bench/common.sh's bench_peers: bench/.venv
# or DEVMAP_BENCH_VENV, installed when missing). PyTorch trains with
# bench/pytorch_resnet.py (the same model, momentum SGD with weight decay,
# warm-up and cosine rates) and predicts with bench/pytorch_predict.py --model
# resnet; TensorFlow with bench/tensorflow_bench.py --model resnet (Keras).
# Every training run has a 5-step warm-up then a cosine over the rest of its
# --steps (the config's 200-step warm-up needs a longer run; the rate's cost
# per step is the same). Timed scopes, the same for all: training, a batch
# gathered from the training set in memory to the updated weights;
# prediction, the test images in memory to labels (devmap: `coordinator
# predict`'s own images/s). The output starts with the CPU model, its vector
# units, OPENBLAS_CORETYPE as found, the OpenBLAS core it picks, devmap's CPU
# path and every peer's version. DEVMAP_BUILD_DIR=build/perf uses an
# existing build (with gemm_probe) as is.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads="1 2"
runs=3
steps=50
predict_batch=1000
newest=auto
bench_options 29 --threads=threads --runs=runs --steps=steps --predict-batch=predict_batch --newest=newest -- "$@"
bench_build gemm_probe

sys_py=/usr/bin/python3
config="$root/configs/fashion_mnist_resnet.yaml"
test_images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
warmup=5
results="$out/results.tsv"
: >"$results"
note() { echo "resnet_speed: $*" >&2; }
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }  # threads what runtime value

bench_peers "$newest" tensorflow:tensorflow-cpu torch:torch
new_torch=${peer_version[torch]} new_tf=${peer_version[tensorflow]}
sys_torch=$($sys_py -c 'import torch; print(torch.__version__)')
{
  bench_machine
  echo "peers: PyTorch $sys_torch (Debian)${new_torch:+, PyTorch $new_torch (PyPI; eager and torch.compile)}${new_tf:+, TensorFlow $new_tf (tensorflow-cpu, PyPI)}"
  echo "timed: training, a batch of 128 in memory to the updated weights (median step of $steps, after 5 warm-up steps);"
  echo "       prediction, the 10000 test images in memory to labels at batch $predict_batch"
}

images_per_s() { sed -n 's/.*images\/s=\([0-9.]*\).*/\1/p'; }  # a peer's result line -> images/s
torch_train() {  # python threads [--compile] -> images/s
  "$1" "$root/bench/pytorch_resnet.py" --threads "$2" --steps "$steps" --warmup "$warmup" --test-limit 100 "${@:3}" |
    images_per_s
}
torch_predict() {  # python threads tag [--compile] -> images/s; labels in $out/labels-TAG.txt
  "$1" "$root/bench/pytorch_predict.py" torch "$w" --model resnet --threads "$2" --batch "$predict_batch" \
    --labels "$out/labels-$3.txt" "${@:4}" | images_per_s
}
# How many labels of $out/labels-TAG.txt equal devmap's (the CSV's second column).
same_labels() {
  python3 - "$out/preds.csv" "$out/labels-$1.txt" <<'PY'
import sys
ours = [l.split(",")[1].strip() for l in open(sys.argv[1]).readlines()[1:] if l.strip()]
theirs = [l.strip() for l in open(sys.argv[2]) if l.strip()]
print(sum(a == b for a, b in zip(ours, theirs)) if len(ours) == len(theirs) else -1)
PY
}

for t in $threads; do
  for i in $(seq "$runs"); do
    note "threads $t, run $i of $runs ($(cut -d' ' -f1-3 /proc/loadavg) load)"
    # Training: devmap, then each peer.
    w="$out/resnet-$t-$i.safetensors"
    "$dir/bin/coordinator" train "$config" --metrics "$out/train-$t-$i.jsonl" --log-every 1000000 \
      --set train.max_steps="$steps" --set train.optimizer.schedule.warmup_steps="$warmup" \
      --set data.test_limit=100 --set "devices.cpu:0.threads=$t" --set train.checkpoint="$w" \
      >"$out/train.log" 2>&1 || { cat "$out/train.log" >&2; exit 1; }
    record "$t" train devmap "$(metric "$out/train-$t-$i.jsonl" epoch median_images_per_s)"
    record "$t" train "PyTorch $sys_torch" "$(torch_train $sys_py "$t")"
    [[ -n $new_torch ]] && record "$t" train "PyTorch $new_torch" "$(torch_train "$venv/bin/python" "$t")"
    [[ -n $new_torch ]] && record "$t" train "torch.compile $new_torch" "$(torch_train "$venv/bin/python" "$t" --compile)"
    [[ -n $new_tf ]] && record "$t" train "TensorFlow $new_tf" "$("$venv/bin/python" "$root/bench/tensorflow_bench.py" \
      train --model resnet --threads "$t" --steps "$steps" --warmup "$warmup" | images_per_s)"
    # Prediction with the weights devmap just trained.
    "$dir/bin/coordinator" predict "$config" --weights "$w" --input "$test_images" --output "$out/preds.csv" \
      --batch "$predict_batch" --metrics "$out/predict-$t-$i.jsonl" --set "devices.cpu:0.threads=$t" \
      >"$out/predict.log" 2>&1 || { cat "$out/predict.log" >&2; exit 1; }
    record "$t" predict devmap "$(metric "$out/predict-$t-$i.jsonl" done images_per_s)"
    record "$t" predict "PyTorch $sys_torch" "$(torch_predict $sys_py "$t" sys)"
    record "$t" same_labels "PyTorch $sys_torch" "$(same_labels sys)"
    if [[ -n $new_torch ]]; then
      record "$t" predict "PyTorch $new_torch" "$(torch_predict "$venv/bin/python" "$t" new)"
      record "$t" same_labels "PyTorch $new_torch" "$(same_labels new)"
      record "$t" predict "torch.compile $new_torch" "$(torch_predict "$venv/bin/python" "$t" compiled --compile)"
      record "$t" same_labels "torch.compile $new_torch" "$(same_labels compiled)"
    fi
    if [[ -n $new_tf ]]; then
      record "$t" predict "TensorFlow $new_tf" "$("$venv/bin/python" "$root/bench/tensorflow_bench.py" predict "$w" \
        --model resnet --threads "$t" --batch "$predict_batch" --labels "$out/labels-tf.txt" | images_per_s)"
      record "$t" same_labels "TensorFlow $new_tf" "$(same_labels tf)"
    fi
  done
done

python3 - "$results" "$predict_batch" <<'PY'
import statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    t, what, rt, v = line.rstrip("\n").split("\t")
    if v not in ("", "None"):
        rows[(t, what, rt)].append(float(v))
med = lambda k: statistics.median(rows[k])
for t in sorted({k[0] for k in rows}, key=int):
    print(f"\n== threads {t} ==  (images/s: median [min-max] over runs; ratio = devmap median / peer median)")
    for what, label in (("train", "ResNet training"), ("predict", f"predict 10000 @{sys.argv[2]}")):
        d = rows.get((t, what, "devmap"))
        if not d:
            continue
        line = f"{label:22s} devmap {med((t, what, 'devmap')):6.0f} [{min(d):.0f}-{max(d):.0f}]"
        for rt in sorted(rt for (tt, w, rt) in rows if tt == t and w == what and rt != "devmap"):
            v = rows[(t, what, rt)]
            line += f" | {rt} {med((t, what, rt)):6.0f} [{min(v):.0f}-{max(v):.0f}] ratio {med((t, what, 'devmap')) / med((t, what, rt)):.2f}"
        print(line)
    same = sorted((rt, min(v)) for (tt, w, rt), v in rows.items() if tt == t and w == "same_labels")
    if same:
        print(f"{'labels as devmap':22s} " + " | ".join(f"{rt} {n:.0f} of 10000 (fewest over runs)" for rt, n in same))
PY
