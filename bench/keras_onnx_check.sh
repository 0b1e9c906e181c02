#!/usr/bin/env bash
# A Keras model converted by tf2onnx, imported by devmap: bench/keras_onnx_check.py
# trains a small channels_last Keras CNN for Fashion-MNIST (--steps steps of
# --batch images), converts it with tf2onnx (default options, NHWC; and
# --inputs-as-nchw), runs `devmap import` and `devmap predict` on the 10000 test
# images, and compares with Keras's own predictions: labels equal (N/10000, all
# must be) and the largest probability difference. tensorflow-cpu, tf2onnx and
# onnx are the newest from PyPI, in the venv of bench/compare_pytorch.sh
# (bench/.venv, git-ignored; DEVMAP_BENCH_VENV: another); CI never installs
# them (tests/onnx/data/keras/ holds small tf2onnx fixtures for CI instead).
# Work files go to a temporary folder, removed on exit.
#
#   bench/keras_onnx_check.sh [--steps 300] [--batch 64] [--newest auto|no]
#
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=300 batch=64 newest=auto
bench_options 13 --steps=steps --batch=batch --newest=newest -- "$@"
bench_build
bench_peers "$newest" tensorflow:tensorflow-cpu tf2onnx:tf2onnx onnx:onnx
for module in tensorflow tf2onnx onnx; do
  if [[ -z ${peer_version[$module]} ]]; then
    echo "$(basename "$0"): no $module in $venv: nothing to convert with" >&2
    exit 1
  fi
done
bench_machine
"$venv/bin/python" "$root/bench/keras_onnx_check.py" "$dir/bin/coordinator" "$out" --steps "$steps" --batch "$batch"
