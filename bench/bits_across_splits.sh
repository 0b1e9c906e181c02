#!/usr/bin/env bash
# Trains the reference CNN the same steps as the whole batch, as lock-step
# micro-batches, pipelined (1f1b) and as data-parallel replicas on this
# machine, and compares every step's loss and the final weights to the bit.
#
#   bench/bits_across_splits.sh [--steps N] [--chunk C] [--micro M] [--replicas R]
#
# Defaults: 100 steps of 64, gradient chunks of 16, 4 micro-batches, and
# replicas of one chunk each (R = 64 / C = 4). The bit rule
# (docs/CONFIG.md, train.gradient_chunk) promises equal bits when every
# micro-batch is a multiple of C, and when each replica holds at most one
# chunk. Prints one line per run and "same bits: yes" or the first step
# that differs; exit 1 when any run differs. DEVMAP_BUILD_DIR picks the
# build (default build/release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=100 chunk=16 micro=4 replicas=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --chunk) chunk=$2; shift 2 ;;
    --micro) micro=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bits_across_splits.sh: unknown option '$1' (known: --steps, --chunk, --micro, --replicas)" >&2; exit 2 ;;
  esac
done
[[ -n "$replicas" ]] || replicas=$((64 / chunk))
build=${DEVMAP_BUILD_DIR:-$root/build/release}
[[ -x "$build/bin/coordinator" ]] || { echo "bits_across_splits.sh: build first: scripts/build.sh release" >&2; exit 2; }
config="$root/configs/fashion_mnist_cnn.yaml"
out=$(mktemp -d "${TMPDIR:-/tmp}/devmap-bits.XXXXXX")
trap 'rm -rf "$out"' EXIT
common=(--set "train.max_steps=$steps" --set "train.gradient_chunk=$chunk" --set data.test_limit=64
        --set devices.cpu:0.threads=1 --log-every 1)

run() {  # run NAME [ARGS...]: trains into $out/NAME.{jsonl,safetensors}
  local name=$1; shift
  local start=$SECONDS
  "$@" train "$config" "${common[@]}" --metrics "$out/$name.jsonl" \
    --set "train.checkpoint=$out/$name.safetensors" >/dev/null 2>"$out/$name.err" ||
    { echo "bits_across_splits.sh: $name failed:" >&2; tail -5 "$out/$name.err" >&2; exit 1; }
  echo "$name: $((SECONDS - start)) s" >&2
}
run whole "$build/bin/coordinator"
run lockstep "$build/bin/coordinator" --set "train.pipeline={schedule: none, micro_batches: $micro}"
run 1f1b "$build/bin/coordinator" --set "train.pipeline={schedule: 1f1b, micro_batches: $micro}"
mpi=(mpirun --host "$(hostname):$replicas" -np "$replicas" --bind-to none --mca btl tcp,self
     --mca odls_base_sigkill_timeout 0)
[[ $(id -u) -ne 0 ]] || mpi+=(--allow-run-as-root)
run replicas "${mpi[@]}" -x OMPI_MCA_mpi_yield_when_idle=1 "$build/bin/coordinator" \
  --set "data_parallel.replicas=$replicas"

/usr/bin/python3 - "$out" "$steps" <<'EOF'
import json, sys, hashlib
out, steps = sys.argv[1], int(sys.argv[2])
def losses(name):
    return [json.loads(l)["loss"] for l in open(f"{out}/{name}.jsonl") if '"event": "step"' in l or '"event":"step"' in l]
def weights(name):
    return hashlib.sha256(open(f"{out}/{name}.safetensors", "rb").read()).hexdigest()[:16]
ref, ok = losses("whole"), True
for name in ("whole", "lockstep", "1f1b", "replicas"):
    l = losses(name)
    same = l == ref and len(l) == steps
    first = next((i + 1 for i, (a, b) in enumerate(zip(l, ref)) if a != b), None)
    print(f"{name}: {len(l)} steps, last loss {l[-1]!r}, weights sha256 {weights(name)}"
          + ("" if same else f", differs from the whole batch at step {first}"))
    ok = ok and same and weights(name) == weights("whole")
print("same bits:", "yes" if ok else "no")
sys.exit(0 if ok else 1)
EOF
