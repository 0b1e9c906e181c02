#!/usr/bin/env bash
# devmap against its peers on this machine, side by side: training the reference
# CNN and the MLP for a fixed number of steps (median step images/s after 5
# warm-up steps), and predicting the 10000 test images at batch 1000 with the
# weights devmap just trained. Runs alternate devmap / each peer run by run,
# --runs of each at every thread count; prints the median and the spread
# (min-max) of each, the ratios of the medians, the MLP's time per step and
# how much of it is spent outside the kernels, and the fraction of the
# GEMM-bound limit (FLOPs per image from the model / SGEMM GFLOP/s measured
# here with the same threads, bench/gemm_probe --rate). The FLOPs are the
# definition's; Winograd convolutions need fewer, so devmap can pass 100%.
#
#   bench/compare_pytorch.sh [--threads "1 2"] [--runs 3] [--steps 150] [--mlp-steps 400] [--newest auto|no]
#                            [--forced-paths auto|none|"avx2 baseline"]
#
# The peers: Debian's PyTorch (python3-torch, /usr/bin/python3); with
# --newest auto (the default) also the newest PyTorch (PyPI's own wheel, with
# its CUDA libraries, about 5 GiB, run on the CPU), eager and through
# torch.compile (Inductor; its compilation in warm-up steps or a first batch,
# outside the timing), the newest tensorflow-cpu
# (bench/tensorflow_bench.py: Keras layers in a tf.function step) and ONNX
# Runtime (prediction, through an ONNX export of the same weights), installed
# into bench/.venv (git-ignored; DEVMAP_BENCH_VENV: another venv) when missing;
# whichever cannot be installed or imported is skipped with a note. Timed scopes:
# training, a step from a batch gathered out of the training set in memory to
# the updated weights (median over the steps after 5 warm-up steps);
# prediction, the 10000 test images in memory to labels at batch 1000
# (devmap: `coordinator predict`'s own images/s, which starts when the images
# are loaded). The output starts with the machine: CPU model, vector units,
# OPENBLAS_CORETYPE as found and the OpenBLAS core it picks, devmap's CPU
# path, and every peer's version. --forced-paths also runs devmap's CNN
# training and prediction with DEVMAP_CPU_PATH set to each of those paths
# ("auto": avx2 where the CPU has AVX-512), and every devmap row shows its
# effective GFLOP/s per core (the model's FLOPs / time / threads) against
# the measured FP32 peak of a core on its path (gemm_probe --fma-peak).
# DEVMAP_BUILD_DIR=build/perf uses an existing build (with gemm_probe) as is.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads="1 2"
runs=3
steps=150
mlp_steps=400
newest=auto
forced_paths=auto
bench_options 34 --threads=threads --runs=runs --steps=steps --mlp-steps=mlp_steps --newest=newest --forced-paths=forced_paths -- "$@"
bench_build gemm_probe

sys_py=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
results="$out/results.tsv"
: >"$results"
note() { echo "compare_pytorch: $*" >&2; }
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$results"; }  # threads what runtime value

# The newest PyTorch, TensorFlow and ONNX Runtime, where they install.
bench_peers "$newest" onnxruntime:onnxruntime tensorflow:tensorflow-cpu torch:torch
new_torch=${peer_version[torch]} new_tf=${peer_version[tensorflow]} new_ort=${peer_version[onnxruntime]}

# The machine and the BLAS settings, as found (never changed here).
sys_torch=$($sys_py -c 'import torch; print(torch.__version__)')
{
  bench_machine
  echo "peers: PyTorch $sys_torch (Debian)${new_torch:+, PyTorch $new_torch (PyPI; eager and torch.compile)}${new_tf:+, TensorFlow $new_tf (tensorflow-cpu, PyPI)}${new_ort:+, ONNX Runtime $new_ort (PyPI)}"
  echo "timed: training, a batch in memory to the updated weights (median step, after 5 warm-up steps);"
  echo "       prediction, the 10000 test images in memory to labels at batch 1000"
}
case $forced_paths in
  auto) forced_paths=$(grep -q -w avx512f /proc/cpuinfo && echo avx2 || true) ;;
  none) forced_paths="" ;;
esac
# The measured FP32 peak of one core, per path devmap runs.
peak() { DEVMAP_CPU_PATH=$1 "$dir/bin/gemm_probe" --fma-peak; }
for p in auto $forced_paths; do echo "FP32 peak of one core, path $p: $(peak "$p") GFLOP/s (FMA probe)"; done
devmap_tag() { [[ $1 == auto ]] && echo devmap || echo "devmap $1"; }  # path -> results label

devmap_train() {  # config threads tag extra-args... -> metrics file $out/$tag.jsonl
  local config=$1 t=$2 tag=$3
  shift 3
  "$dir/bin/coordinator" train "$root/configs/$config" --metrics "$out/$tag.jsonl" \
    --set train.epochs=1 --set data.test_limit=100 --set "devices.cpu:0.threads=$t" \
    --set train.checkpoint="$out/$tag.safetensors" "$@" 2>"$out/$tag.log" || { cat "$out/$tag.log" >&2; exit 1; }
}
torch_train() {  # python model threads steps [--compile] -> images/s
  "$1" "$root/bench/pytorch_train.py" --model "$2" --threads "$3" --steps "$4" "${@:5}" |
    sed -n 's/.*median_images\/s=\([0-9.]*\).*/\1/p'
}
tf_train() {  # model threads steps -> images/s
  "$venv/bin/python" "$root/bench/tensorflow_bench.py" train --model "$1" --threads "$2" --steps "$3" |
    sed -n 's/.*median_images\/s=\([0-9.]*\).*/\1/p'
}
predict_rate() {  # python mode model threads [--compile] -> images/s
  "$1" "$root/bench/pytorch_predict.py" "$2" "$3" --threads "$4" --batch 1000 "${@:5}" | sed -n 's/.*images\/s=\([0-9.]*\).*/\1/p'
}

for t in $threads; do
  for i in $(seq "$runs"); do
    note "threads $t, run $i of $runs ($(cut -d' ' -f1-3 /proc/loadavg) load)"
    record "$t" sgemm_gflops probe "$("$dir/bin/gemm_probe" --rate "$t" 1)"
    # CNN training, on the widest path and on each forced one.
    devmap_train fashion_mnist_cnn.yaml "$t" "cnn-$t-$i" --set train.max_steps="$steps" --log-every 1000000
    record "$t" cnn devmap "$(metric "$out/cnn-$t-$i.jsonl" epoch median_images_per_s)"
    for p in $forced_paths; do
      DEVMAP_CPU_PATH=$p devmap_train fashion_mnist_cnn.yaml "$t" "cnn-$p-$t-$i" --set train.max_steps="$steps" --log-every 1000000
      record "$t" cnn "devmap $p" "$(metric "$out/cnn-$p-$t-$i.jsonl" epoch median_images_per_s)"
    done
    record "$t" cnn "torch $sys_torch" "$(torch_train $sys_py cnn "$t" "$steps")"
    [[ -n $new_torch ]] && record "$t" cnn "torch $new_torch" "$(torch_train "$venv/bin/python" cnn "$t" "$steps")"
    [[ -n $new_torch ]] && record "$t" cnn "torch.compile $new_torch" "$(torch_train "$venv/bin/python" cnn "$t" "$steps" --compile)"
    [[ -n $new_tf ]] && record "$t" cnn "tensorflow $new_tf" "$(tf_train cnn "$t" "$steps")"
    # MLP training: every step logged, for step_ms and compute_ms.
    devmap_train fashion_mnist_mlp.yaml "$t" "mlp-$t-$i" --set train.max_steps="$mlp_steps" --log-every 1
    m="$out/mlp-$t-$i.jsonl"
    record "$t" mlp devmap "$(metric "$m" epoch median_images_per_s)"
    python3 - "$m" "$t" >>"$results" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1])]
steps = [d for d in steps if d.get("event") == "step"][5:]
step = statistics.median(d["step_ms"] for d in steps)
comp = statistics.median(d["compute_ms"] for d in steps)
print(f"{sys.argv[2]}\tmlp_step_ms\tdevmap\t{step}\n{sys.argv[2]}\tmlp_compute_ms\tdevmap\t{comp}")
PY
    record "$t" mlp "torch $sys_torch" "$(torch_train $sys_py mlp "$t" "$mlp_steps")"
    [[ -n $new_torch ]] && record "$t" mlp "torch $new_torch" "$(torch_train "$venv/bin/python" mlp "$t" "$mlp_steps")"
    [[ -n $new_torch ]] && record "$t" mlp "torch.compile $new_torch" "$(torch_train "$venv/bin/python" mlp "$t" "$mlp_steps" --compile)"
    [[ -n $new_tf ]] && record "$t" mlp "tensorflow $new_tf" "$(tf_train mlp "$t" "$mlp_steps")"
    # Prediction of the test set with the weights of this run's CNN.
    w="$out/cnn-$t-$i.safetensors"
    for p in auto $forced_paths; do
      DEVMAP_CPU_PATH=$p "$dir/bin/coordinator" predict "$root/configs/fashion_mnist_cnn.yaml" --weights "$w" \
        --input "$data/t10k-images-idx3-ubyte.gz" --output "$out/preds.csv" --batch 1000 \
        --metrics "$out/predict-$p-$t-$i.jsonl" --set "devices.cpu:0.threads=$t" 2>"$out/predict.log" ||
        { cat "$out/predict.log" >&2; exit 1; }
      record "$t" predict "$(devmap_tag "$p")" "$(metric "$out/predict-$p-$t-$i.jsonl" done images_per_s)"
    done
    record "$t" predict "torch $sys_torch" "$(predict_rate $sys_py torch "$w" "$t")"
    [[ -n $new_torch ]] && record "$t" predict "torch $new_torch" "$(predict_rate "$venv/bin/python" torch "$w" "$t")"
    [[ -n $new_torch ]] && record "$t" predict "torch.compile $new_torch" "$(predict_rate "$venv/bin/python" torch "$w" "$t" --compile)"
    [[ -n $new_tf ]] && record "$t" predict "tensorflow $new_tf" "$("$venv/bin/python" "$root/bench/tensorflow_bench.py" predict "$w" --threads "$t" | sed -n 's/.*images\/s=\([0-9.]*\).*/\1/p')"
    if [[ -n $new_ort ]]; then
      $sys_py "$root/bench/pytorch_predict.py" export "$w" "$out/cnn.onnx" 2>/dev/null ||
        "$venv/bin/python" "$root/bench/pytorch_predict.py" export "$w" "$out/cnn.onnx"
      record "$t" predict "onnxruntime $new_ort" "$(predict_rate "$venv/bin/python" ort "$out/cnn.onnx" "$t")"
    fi
  done
  # One profiled MLP run: its kernels' own time per step against its steps'
  # (the profile slows the kernels, so both come from this run).
  devmap_train fashion_mnist_mlp.yaml "$t" "mlp-profile-$t" --set train.max_steps="$mlp_steps" --log-every 1 --profile
  python3 - "$out/mlp-profile-$t.jsonl" "$t" "$mlp_steps" >>"$results" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
ms = sum(d["total_ms"] for d in events if d.get("event") == "profile")
step = sum(d["step_ms"] for d in events if d.get("event") == "step")
print(f"{sys.argv[2]}\tmlp_kernel_ms\tdevmap\t{ms / int(sys.argv[3])}")
print(f"{sys.argv[2]}\tmlp_profiled_step_ms\tdevmap\t{step / int(sys.argv[3])}")
PY
done

for p in auto $forced_paths; do record 0 fma_peak "$(devmap_tag "$p")" "$(peak "$p")"; done
python3 - "$results" "$($sys_py "$root/bench/model_flops.py" cnn)" <<'PY'
import statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    t, what, rt, v = line.rstrip("\n").split("\t")
    if v not in ("", "None"):
        rows[(t, what, rt)].append(float(v))
flops = dict(kv.split("=") for kv in sys.argv[2].split())
per_image = {"cnn": float(flops["train"]), "predict": float(flops["forward"])}
med = lambda k: statistics.median(rows[k]) if rows.get(k) else None
for t in sorted({k[0] for k in rows if k[0] != "0"}, key=int):
    print(f"\n== threads {t} ==  (images/s: median [min-max] over runs; ratio = devmap median / peer median)")
    for what, label in (("cnn", "CNN training"), ("mlp", "MLP training"), ("predict", "predict 10000 @1000")):
        peers = sorted(rt for (tt, w, rt) in rows if tt == t and w == what and rt != "devmap")
        forced = [rt for rt in peers if rt.startswith("devmap ")]
        d = rows.get((t, what, "devmap"), [])
        if not d:
            continue
        line = f"{label:22s} devmap {med((t, what, 'devmap')):7.0f} [{min(d):.0f}-{max(d):.0f}]"
        for rt in peers:
            v = rows[(t, what, rt)]
            line += f" | {rt} {med((t, what, rt)):7.0f} [{min(v):.0f}-{max(v):.0f}] ratio {med((t, what, 'devmap')) / med((t, what, rt)):.2f}"
        print(line)
        if what in per_image and rows.get((t, "sgemm_gflops", "probe")):
            g = med((t, "sgemm_gflops", "probe"))
            limit = g * 1e9 / per_image[what]
            reached = med((t, what, 'devmap')) / limit
            print(f"{'':22s} GEMM-bound limit {limit:.0f} images/s ({per_image[what] / 1e6:.1f} MFLOP/image at "
                  f"{g:.1f} GFLOP/s SGEMM): devmap reaches {reached:.0%}"
                  + (" (Winograd convolutions multiply less than the definition counts)" if reached > 1 else ""))
        for rt in (["devmap"] + forced if what in per_image else []):
            fp = med(("0", "fma_peak", rt))
            if fp is None or med((t, what, rt)) is None:
                continue
            eff = med((t, what, rt)) * per_image[what] / int(t) * 1e-9
            print(f"{'':22s} {rt}: effective {eff:.1f} GFLOP/s per core (the definition's FLOPs) = {eff / fp:.0%} "
                  f"of the measured FP32 peak, {fp:.1f} GFLOP/s per core on its path")
    if rows.get((t, "mlp_step_ms", "devmap")):
        s, c = med((t, "mlp_step_ms", "devmap")), med((t, "mlp_compute_ms", "devmap"))
        k, ks = med((t, "mlp_kernel_ms", "devmap")), med((t, "mlp_profiled_step_ms", "devmap"))
        print(f"{'MLP step (devmap)':22s} {s:.3f} ms per step (median), worker compute {c:.3f} ms"
              + (f"; a --profile run: {ks:.3f} ms per step (mean), kernels {k:.3f} ms, outside kernels "
                 f"{ks - k:.3f} ms" if k is not None and ks is not None else ""))
PY
