#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU from an unpacked bundle
# (scripts/bundle_gpu.sh makes it; this script sits at its top):
#
#   tar xzf gpu_bundle.tar.gz && gpu_bundle/gpu_check.sh [REPORT]
#
# Within a hard limit of 5 minutes in all (DEVMAP_GPU_CHECK_SECONDS, at most
# 300) it writes to REPORT (default gpu_bundle/gpu_check_report.txt), line
# by line as it goes, so a timeout still leaves the figures so far:
#   1. the probe's checks first (worker_gpu --probe: the device and a test
#      kernel, cuDNN's ops and convolution sub-libraries and its CUDA
#      runtime against the build's, a cuDNN and a cuBLAS handle created and
#      destroyed, cuDNN's convolution algorithm count), then the probe's
#      own tests (cuda_tests ProbeGpu.*, WorkerGpuProbe.*), the versions
#      (cudnnGetVersion, driver, runtime) and nvidia-smi;
#   2. the GPU tests (cuda_tests: every kernel against the CPU's, CudaMemory,
#      the GPU+CPU training run against the CPU-only one);
#   3. training images/s of the reference model all on the GPU, split
#      GPU (conv) + CPU (dense), and CPU only, on the test images;
#   4. prediction images/s on the GPU;
#   5. host <-> device GB/s through shared memory, pinned against pageable.
#
# CUDA and cuDNN libraries: the bundle carries none. They are looked for in
# $DEVMAP_CUDA_LIB_DIRS (colon-separated), then in the Python wheels
# (site-packages/nvidia/*/lib, nvidia/cu13/lib), then CUDA_HOME and
# /usr/local/cuda; the driver's libcuda.so.1 comes from the system.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
budget=${DEVMAP_GPU_CHECK_SECONDS:-300}
(( budget > 300 )) && budget=300
if [[ -z "${DEVMAP_GPU_CHECK_INNER:-}" ]]; then
  # The hard limit: the whole check, children included, ends at the budget.
  DEVMAP_GPU_CHECK_INNER=1 exec timeout -k 5 "$budget" "$0" "$@"
fi
report=${1:-$here/gpu_check_report.txt}
start=$(date +%s)
: > "$report"
say() { echo "$*" | tee -a "$report"; }
left() { echo $(( budget - ($(date +%s) - start) - 5 )); }
# run SECONDS CMD...: the command's output goes to the report as it comes.
run() {
  local limit=$1
  shift
  local l
  l=$(left)
  (( limit > l )) && limit=$l
  if (( limit <= 0 )); then
    say "(skipped, out of time: $*)"
    return 124
  fi
  timeout -k 3 "$limit" "$@" 2>&1 | tee -a "$report"
  return "${PIPESTATUS[0]}"
}

# --- libraries -------------------------------------------------------------
lib_dirs=()
IFS=: read -r -a extra <<< "${DEVMAP_CUDA_LIB_DIRS:-}"
for d in "${extra[@]}"; do [[ -n "$d" ]] && lib_dirs+=("$d"); done
for py in python3 python; do
  command -v "$py" > /dev/null || continue
  while read -r site; do
    for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib "$site"/nvidia/cu*/lib; do
      [[ -d "$d" ]] && lib_dirs+=("$d")
    done
  done < <("$py" - <<'PY' 2>/dev/null
import site, sys
paths = set(site.getsitepackages() + [site.getusersitepackages()] + sys.path)
try:
    import nvidia
    paths.update(p.rsplit('/nvidia', 1)[0] for p in nvidia.__path__)
except Exception:
    pass
print("\n".join(sorted(p for p in paths if p)))
PY
)
  break
done
for d in "${CUDA_HOME:-/nonexistent}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d "$d" ]] && lib_dirs+=("$d"); done
ld_path="$here/lib"
for d in "${lib_dirs[@]}"; do ld_path="$ld_path:$d"; done
ld_path="$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The bundled C++ runtime only when the machine's libstdc++ is too old.
if LD_LIBRARY_PATH="$ld_path" ldd "$here/bin/coordinator" "$here/bin/worker_gpu" "$here/bin/cuda_tests" 2>&1 |
   grep -q -E "GLIBCXX|CXXABI|GCC_[0-9]|libstdc\+\+.*not found|libgcc_s.*not found"; then
  ld_path="$here/lib/cxx:$ld_path"
fi
export LD_LIBRARY_PATH="$ld_path"
export DEVMAP_BIN_DIR="$here/bin" DEVMAP_CONFIG_DIR="$here/configs" DEVMAP_DATA_DIR="$here/data"
export DEVMAP_WORKER_DIR="$here/bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/devmap-gpu-check-XXXXXX")
trap 'rm -rf "$work"' EXIT

say "== devmap GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), budget ${budget}s"
[[ -f "$here/MANIFEST.txt" ]] && head -1 "$here/MANIFEST.txt" | tee -a "$report"

# --- 1. the probe's checks, versions and the device ----------------------------
say "== 1. probe: device, test kernel, cuDNN libraries and CUDA runtime, cuDNN and cuBLAS handles"
run 30 "$here/bin/worker_gpu" --probe
probe_rc=$?
say "-- the probe's tests"
run 30 "$here/bin/cuda_tests" --gtest_brief=1 --gtest_color=no --gtest_filter='ProbeGpu.*:WorkerGpuProbe.*'
say "probe tests exit status: $?"
if command -v nvidia-smi > /dev/null; then
  run 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,pcie.link.gen.current,pcie.link.width.current --format=csv
fi
unresolved=$(ldd "$here/bin/worker_gpu" | grep 'not found' || true)
if [[ -n "$unresolved" ]]; then
  say "unresolved libraries (set DEVMAP_CUDA_LIB_DIRS to the folders holding them):"
  say "$unresolved"
  say "library path: $LD_LIBRARY_PATH"
fi
if (( probe_rc != 0 )); then
  say "== no usable GPU (worker_gpu --probe exit $probe_rc): stopping"
  exit 1
fi

# --- 2. tests -------------------------------------------------------------------
say "== 2. GPU tests (cuda_tests)"
run 150 "$here/bin/cuda_tests" --gtest_brief=1 --gtest_color=no
say "cuda_tests exit status: $?"

# --- 3. training images/s ---------------------------------------------------------
images="$here/data/t10k-images-idx3-ubyte.gz"
labels="$here/data/t10k-labels-idx1-ubyte.gz"
data_sets=(--set "data.train_images=$images" --set "data.train_labels=$labels"
           --set "data.test_images=$images" --set "data.test_labels=$labels")
# train TAG CONFIG STEPS: median images/s of one epoch of STEPS steps of 64.
train() {
  local tag=$1 config=$2 steps=$3
  say "-- training, $tag ($config, $steps steps of 64 images)"
  run "$4" "$here/bin/coordinator" train "$here/configs/$config" "${data_sets[@]}" \
    --set data.test_limit=512 --set train.epochs=1 --set "train.max_steps=$steps" --set train.batch_size=64 \
    --set "train.checkpoint=$work/$tag.safetensors" --metrics "$work/$tag.jsonl" --log-every 50 > /dev/null
  local rc=$?
  local line
  line=$(grep '"event":"epoch"' "$work/$tag.jsonl" 2>/dev/null | tail -1)
  if [[ -n "$line" ]]; then
    say "$tag training: $(grep -o '"images_per_s":[0-9.e+-]*' <<< "$line" | cut -d: -f2) images/s (epoch), $(grep -o '"median_images_per_s":[0-9.e+-]*' <<< "$line" | cut -d: -f2) images/s (median step)"
  else
    say "$tag training: no epoch line (exit status $rc)"
  fi
}
say "== 3. training images/s"
train gpu fashion_mnist_cnn_gpu.yaml 150 40
train split fashion_mnist_cnn_gpu_split.yaml 150 40
train cpu fashion_mnist_cnn.yaml 60 40

# --- 4. prediction images/s --------------------------------------------------------
say "== 4. prediction images/s (10000 test images, batch 1000)"
if [[ -f "$work/gpu.safetensors" ]]; then
  run 40 "$here/bin/coordinator" predict "$here/configs/fashion_mnist_cnn_gpu.yaml" "${data_sets[@]}" \
    --weights "$work/gpu.safetensors" --input "$images" --output "$work/preds.csv" --batch 1000 \
    --metrics "$work/predict.jsonl" > /dev/null
  say "gpu prediction: $(grep -o '"images_per_s":[0-9.e+-]*' "$work/predict.jsonl" 2>/dev/null | tail -1 | cut -d: -f2) images/s"
else
  say "gpu prediction: skipped (the GPU training run left no weights)"
fi

# --- 5. copies ----------------------------------------------------------------------
say "== 5. host <-> device copies through shared memory"
run 30 "$here/bin/gpu_copy_bench" --seconds 0.25

say "== done in $(( $(date +%s) - start ))s; report: $report"
