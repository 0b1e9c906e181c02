#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU from an unpacked bundle
# (scripts/bundle_gpu.sh makes it; this script sits at its top):
#
#   tar xzf gpu_bundle.tar.gz && gpu_bundle/gpu_check.sh [RESULTS_DIR]
#
# Within a hard limit of 10 minutes in all (DEVMAP_GPU_CHECK_SECONDS, at
# most 600) it writes RESULTS_DIR (default gpu_bundle/gpu_check_results/),
# file by file as it goes, so a timeout keeps everything finished before it:
#
#   summary.txt   one line per check: "PASS  name  detail", "FAIL  name
#                 detail" or "NOT RUN  name  why", then the overall line
#                 "gpu_check: PASS" or "gpu_check: FAIL (...)"
#   report.txt    everything the check printed, in order
#   logs/NAME.log each check's own output
#   gtest/SUITE.xml  each gtest suite's results (--gtest_output=xml)
#
# and RESULTS_DIR.tar.gz beside it once the check has ended (timeout
# included): the folder to bring back. The checks:
#   probe        worker_gpu --probe (device, test kernel, cuDNN's libraries
#                and a small convolution, cuBLAS) and nvidia-smi;
#   SUITE        every gtest suite of cuda_tests in a process of its own (a
#                sticky CUDA error or a crash ends only its suite): the
#                kernels against the CPU's, CudaMemory, and the runs through
#                the coordinator (tests/cuda/gpu_run_*_test.cpp: the ResNet
#                against the CPU, pipelined against lock-step micro-batches
#                and against the whole batch, --profile, gradient_chunk=7,
#                the remaining ops and optimizers, a calibration, a
#                data-parallel pair of ranks, offload: parameters against
#                the same run without it); a suite whose tests all skip
#                is NOT RUN with the first skip's reason;
#   train-*      training images/s all-GPU, split GPU+CPU and CPU-only, and
#   predict-gpu  prediction images/s, on the test images;
#   copies       host <-> device GB/s through shared memory, pinned and not.
#
# Exit status: 0 when every check passed; 1 when one failed or could not
# run (no GPU: every GPU check says so, one line each); 2 for bad input.
#
# CUDA and cuDNN libraries: the bundle carries none. They are looked for in
# $DEVMAP_CUDA_LIB_DIRS (colon-separated), then in the Python wheels
# (site-packages/nvidia/*/lib, nvidia/cu13/lib), then CUDA_HOME and
# /usr/local/cuda; the driver's libcuda.so.1 comes from the system.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
budget=${DEVMAP_GPU_CHECK_SECONDS:-600}
if [[ ! "$budget" =~ ^[0-9]+$ ]] || ((budget < 30)); then
  echo "gpu_check.sh: DEVMAP_GPU_CHECK_SECONDS must be a whole number of seconds >= 30, not '$budget'" >&2
  exit 2
fi
((budget > 600)) && budget=600
if (($# > 1)); then
  echo "usage: gpu_check.sh [RESULTS_DIR]" >&2
  exit 2
fi
results=${1:-$here/gpu_check_results}

if [[ -z "${DEVMAP_GPU_CHECK_INNER:-}" ]]; then
  # The outer run: the inner one under the hard limit, then the overall
  # line and the tarball, whatever became of it.
  rm -rf "$results"
  mkdir -p "$results/logs" "$results/gtest"
  inner=0
  DEVMAP_GPU_CHECK_INNER=1 timeout -k 10 "$budget" "$0" "$results" || inner=$?
  summary="$results/summary.txt"
  touch "$summary"
  if ((inner == 124 || inner == 137)); then
    echo "FAIL  gpu_check  stopped at the ${budget}s limit: the checks after the last line above did not run" |
      tee -a "$summary" "$results/report.txt"
  elif ((inner != 0)); then
    echo "FAIL  gpu_check  the check script itself ended with status $inner (see report.txt)" |
      tee -a "$summary" "$results/report.txt"
  fi
  passed=$(grep -c '^PASS' "$summary" || true)
  failed=$(grep -c '^FAIL' "$summary" || true)
  not_run=$(grep -c '^NOT RUN' "$summary" || true)
  if ((failed == 0 && not_run == 0 && passed > 0)); then
    overall="gpu_check: PASS ($passed checks passed)"
    status=0
  else
    overall="gpu_check: FAIL ($failed failed, $not_run could not run, $passed passed)"
    status=1
  fi
  echo "$overall" | tee -a "$summary" "$results/report.txt"
  tar -C "$(dirname "$results")" -czf "$results.tar.gz" "$(basename "$results")"
  echo "results: $results/ and $results.tar.gz"
  exit $status
fi

# --- the inner run ---------------------------------------------------------------
start=$(date +%s)
report="$results/report.txt"
summary="$results/summary.txt"
say() { echo "$*" | tee -a "$report"; }
left() { echo $((budget - ($(date +%s) - start) - 15)); }
# verdict KIND NAME DETAIL: one line of the summary (KIND: PASS, FAIL, NOT RUN).
verdict() { printf '%-8s %s  %s\n' "$1" "$2" "$3" | tee -a "$summary" "$report"; }
# run NAME SECONDS CMD...: runs CMD with its output in logs/NAME.log (and the
# report); its exit status, 124 when it ran out of time, 200 when too little
# of the budget was left to start it.
late=200
late_why="not started: the check's ${budget}s budget was spent before it"
run() {
  local name=$1 limit=$2
  shift 2
  local l
  l=$(left)
  ((limit > l)) && limit=$l
  if ((limit <= 0)); then
    echo "(out of time before: $*)" >> "$results/logs/$name.log"
    return $late
  fi
  local rc=0
  timeout -k 3 "$limit" "$@" > "$results/logs/$name.log" 2>&1 || rc=$?
  cat "$results/logs/$name.log" >> "$report"
  return $rc
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
  done < <("$py" - << 'PY' 2> /dev/null || true
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
for d in "${CUDA_HOME:-/nonexistent}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d "$d" ]] && lib_dirs+=("$d")
done
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
if [[ -f "$here/MANIFEST.txt" ]]; then head -1 "$here/MANIFEST.txt" | tee -a "$report"; fi

# --- the probe ---------------------------------------------------------------------
say "== probe"
probe_rc=0
run probe 60 "$here/bin/worker_gpu" --probe || probe_rc=$?
no_gpu=""
if ((probe_rc == 0)); then
  verdict PASS probe "$(head -1 "$results/logs/probe.log")"
else
  no_gpu=$(grep -m1 'no usable GPU' "$results/logs/probe.log" || true)
  [[ -z "$no_gpu" ]] && no_gpu="worker_gpu --probe ended with status $probe_rc: $(head -1 "$results/logs/probe.log")"
  verdict "NOT RUN" probe "$no_gpu"
fi
if command -v nvidia-smi > /dev/null; then
  run nvidia-smi 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,pcie.link.gen.current,pcie.link.width.current \
    --format=csv || true
fi
unresolved=$(ldd "$here/bin/worker_gpu" | grep 'not found' || true)
if [[ -n "$unresolved" ]]; then
  say "unresolved libraries (set DEVMAP_CUDA_LIB_DIRS to the folders holding them):"
  say "$unresolved"
  say "library path: $LD_LIBRARY_PATH"
fi

# --- the gtest suites, one process each --------------------------------------------
# suite_verdict SUITE RC: the summary line of one suite from its XML.
suite_verdict() {
  local suite=$1 rc=$2 xml="$results/gtest/$1.xml"
  if ((rc == late)); then
    verdict "NOT RUN" "$suite" "$late_why"
    return
  fi
  if ((rc == 124)); then
    verdict FAIL "$suite" "no end within its time (logs/$suite.log has what it printed)"
    return
  fi
  if [[ ! -s "$xml" ]]; then
    verdict FAIL "$suite" "exit status $rc and no XML results (a crash? logs/$suite.log)"
    return
  fi
  local total skipped failures
  total=$(grep -c '<testcase ' "$xml" || true)
  skipped=$(grep -c 'result="skipped"' "$xml" || true)
  failures=$(grep -c '<failure ' "$xml" || true)
  if ((failures > 0 || rc != 0)); then
    verdict FAIL "$suite" "$failures of $total failed (exit status $rc; gtest/$suite.xml)"
  elif ((total > 0 && skipped == total)); then
    local why
    why=$(grep -m1 -o '<skipped message="[^"]*"' "$xml" | sed -e 's/^<skipped message="//' -e 's/"$//' \
      -e 's/&#x0A;/ /g' -e 's/&apos;/'"'"'/g' -e 's/&quot;/"/g' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g' |
      sed -e 's/^[^ ]*:[0-9]*:* *//' -e 's/^Skipped *//')
    verdict "NOT RUN" "$suite" "all $total skipped: ${why:-no reason given}"
  else
    local detail="$((total - skipped)) passed"
    ((skipped > 0)) && detail="$detail, $skipped skipped"
    verdict PASS "$suite" "$detail"
  fi
}
say "== cuda_tests, one process per suite"
suites=$("$here/bin/cuda_tests" --gtest_list_tests | grep -E '^[A-Za-z_][A-Za-z0-9_/]*\.$' | tr -d '.')
for suite in $suites; do
  rc=0
  run "$suite" 150 "$here/bin/cuda_tests" --gtest_color=no --gtest_brief=1 "--gtest_filter=$suite.*" \
    "--gtest_output=xml:$results/gtest/$suite.xml" || rc=$?
  suite_verdict "$suite" "$rc"
done

# --- throughput ----------------------------------------------------------------------
images="$here/data/t10k-images-idx3-ubyte.gz"
labels="$here/data/t10k-labels-idx1-ubyte.gz"
data_sets=(--set "data.train_images=$images" --set "data.train_labels=$labels"
  --set "data.test_images=$images" --set "data.test_labels=$labels")
# train TAG CONFIG STEPS SECONDS: images/s of one epoch of STEPS steps of 64.
train() {
  local tag=$1 config=$2 steps=$3 rc=0
  run "train-$tag" "$4" "$here/bin/coordinator" train "$here/configs/$config" "${data_sets[@]}" \
    --set data.test_limit=512 --set train.epochs=1 --set "train.max_steps=$steps" --set train.batch_size=64 \
    --set "train.checkpoint=$work/$tag.safetensors" --metrics "$results/logs/train-$tag.jsonl" --log-every 50 || rc=$?
  local line
  line=$(grep '"event":"epoch"' "$results/logs/train-$tag.jsonl" 2> /dev/null | tail -1 || true)
  if ((rc == late)); then
    verdict "NOT RUN" "train-$tag" "$late_why"
  elif ((rc == 0)) && [[ -n "$line" ]]; then
    verdict PASS "train-$tag" "$(grep -o '"images_per_s":[0-9.e+-]*' <<< "$line" | cut -d: -f2) images/s (epoch), $(grep -o '"median_images_per_s":[0-9.e+-]*' <<< "$line" | cut -d: -f2) images/s (median step), $config"
  else
    verdict FAIL "train-$tag" "exit status $rc, no epoch line (logs/train-$tag.log)"
  fi
}
say "== throughput"
if [[ -n "$no_gpu" ]]; then
  for check in train-gpu train-split predict-gpu copies; do verdict "NOT RUN" "$check" "needs a GPU: $no_gpu"; done
  train cpu fashion_mnist_cnn.yaml 30 60
  exit 0
fi
train gpu fashion_mnist_cnn_gpu.yaml 150 40
train split fashion_mnist_cnn_gpu_split.yaml 150 40
train cpu fashion_mnist_cnn.yaml 60 40
if [[ -f "$work/gpu.safetensors" ]]; then
  rc=0
  run predict-gpu 40 "$here/bin/coordinator" predict "$here/configs/fashion_mnist_cnn_gpu.yaml" "${data_sets[@]}" \
    --weights "$work/gpu.safetensors" --input "$images" --output "$work/preds.csv" --batch 1000 \
    --metrics "$results/logs/predict-gpu.jsonl" || rc=$?
  ips=$(grep -o '"images_per_s":[0-9.e+-]*' "$results/logs/predict-gpu.jsonl" 2> /dev/null | tail -1 | cut -d: -f2 || true)
  if ((rc == late)); then
    verdict "NOT RUN" predict-gpu "$late_why"
  elif ((rc == 0)) && [[ -n "$ips" ]]; then
    verdict PASS predict-gpu "$ips images/s (10000 test images, batch 1000)"
  else
    verdict FAIL predict-gpu "exit status $rc (logs/predict-gpu.log)"
  fi
else
  verdict "NOT RUN" predict-gpu "the GPU training run left no weights"
fi
rc=0
run copies 30 "$here/bin/gpu_copy_bench" --seconds 0.25 || rc=$?
if ((rc == late)); then
  verdict "NOT RUN" copies "$late_why"
elif ((rc == 0)); then
  verdict PASS copies "logs/copies.log"
else
  verdict FAIL copies "exit status $rc (logs/copies.log)"
fi
say "== done in $(($(date +%s) - start))s"
