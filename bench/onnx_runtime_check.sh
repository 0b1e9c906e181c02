#!/usr/bin/env bash
# The ONNX round trip of tests/python/onnx_round_trip.py (a PyTorch model
# through torch.onnx.export, devmap import, training over cpu:0 and cpu:1,
# devmap export), with ONNX Runtime running the exported model as well:
# the newest onnxruntime from PyPI, in the venv bench/compare_pytorch.sh
# uses (bench/.venv; CI never downloads it). Its labels of the 10000 test
# images must equal devmap's and its probabilities be within --atol.
#
#   bench/onnx_runtime_check.sh [--steps 100] [--atol 1e-4] [--newest auto|no]
#
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=100 atol=1e-4 newest=auto
bench_options 9 --steps=steps --atol=atol --newest=newest -- "$@"
bench_build
bench_peers "$newest" onnxruntime:onnxruntime
if [[ -z ${peer_version[onnxruntime]} ]]; then
  echo "$(basename "$0"): no onnxruntime in $venv: nothing to compare with" >&2
  exit 1
fi
echo "onnxruntime ${peer_version[onnxruntime]} ($venv)"
/usr/bin/python3 "$root/tests/python/onnx_round_trip.py" "$dir/bin/coordinator" --steps "$steps" --atol "$atol" \
  --onnxruntime "$venv/bin/python"
