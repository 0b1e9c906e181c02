#!/usr/bin/env bash
# The installed devmap command: `cmake --install BUILD_DIR --prefix TMP`,
# then TMP/bin/devmap prints its help under its own name, refuses bad input
# with exit 2 naming it, and trains 2 steps with the workers and run guard
# it finds in TMP/libexec/devmap (nothing beside it in TMP/bin).
#   installed_devmap_test.sh CMAKE BUILD_DIR
set -euo pipefail
cmake=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
prefix=$tmp/prefix
devmap=$prefix/bin/devmap
[[ -x "$devmap" ]] || fail "no $devmap"
for p in worker_cpu devmap_run_guard; do
  [[ -x "$prefix/libexec/devmap/$p" ]] || fail "no $prefix/libexec/devmap/$p"
done
[[ "$(ls "$prefix/bin")" == devmap ]] || fail "bin/ holds more than devmap: $(ls "$prefix/bin")"
[[ -f "$prefix/share/devmap/configs/fashion_mnist_mlp.yaml" ]] || fail "no example configs"

# Whatever the caller's shell set, the installed command finds its own.
run() { env -u DEVMAP_WORKER_DIR -u DEVMAP_LAUNCH_AS -u DEVMAP_BUILD_DIR DEVMAP_CALIBRATION_CACHE="$tmp/calibration.tsv" "$@"; }

cd "$tmp"
help=$(run "$devmap" --help)
[[ "$(head -n1 <<< "$help")" == "usage: devmap [SUBCOMMAND] CONFIG [options]" ]] || fail "devmap --help: $help"
help=$(run "$devmap" train --help)
[[ "$(head -n1 <<< "$help")" == "usage: devmap train CONFIG [options]" ]] || fail "devmap train --help: $help"
[[ "$(run "$devmap" --version)" == devmap\ * ]] || fail "devmap --version"

config=$prefix/share/devmap/configs/fashion_mnist_mlp.yaml
code=0
run "$devmap" plan "$config" --resume > /dev/null 2> "$tmp/err.txt" || code=$?
[[ $code -eq 2 ]] || fail "devmap plan --resume exited $code, not 2"
[[ "$(head -n1 "$tmp/err.txt")" == "--resume is an option of train, not of plan (see devmap plan --help)" ]] ||
  fail "devmap plan --resume said: $(cat "$tmp/err.txt")"

run "$devmap" plan "$config" > "$tmp/plan.txt" 2>&1 || { cat "$tmp/plan.txt"; fail "devmap plan"; }

if [[ ! -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "the installed devmap plans; no Fashion-MNIST (dataset-fashion-mnist) to train on: training skipped"
  exit 77
fi
run "$devmap" train "$config" --out-dir "$tmp/out" --set train.max_steps=2 --set data.train_limit=128 \
  --set data.test_limit=128 > "$tmp/train.txt" 2>&1 || { cat "$tmp/train.txt"; fail "devmap train (2 steps)"; }
[[ -s "$tmp/out/fashion_mnist_mlp.safetensors" ]] || { cat "$tmp/train.txt"; fail "no checkpoint"; }
echo "the installed devmap helps, plans and trains"
