#!/usr/bin/env bash
# Installs the Debian packages devmap needs to build, test and train.
# Idempotent: asks dpkg-query first, and runs apt-get update/install only
# when a package is missing. Works as root or through sudo.
#
#   scripts/setup.sh            build, test, data and benchmark-peer dependencies
#                               (libdnnl-dev: oneDNN, the CPU convolutions; its
#                               CMake package asks for ocl-icd-opencl-dev;
#                               python3-torch, python3-numpy: a test, the
#                               README's snippet and bench/pytorch_*.py check
#                               devmap against PyTorch; python3-matplotlib:
#                               bench/trace_picture.py; python3-venv: the PyPI
#                               peers' bench/.venv; all for /usr/bin/python3,
#                               which those scripts name;
#                               ccache: CMake uses it when present;
#                               graphviz: coordinator plan --dot FILE.svg;
#                               openmpi-bin, libopenmpi-dev: the MPI transport
#                               and the multi-host test bed, scripts/testbed.sh;
#                               iproute2: its namespaces and veth links;
#                               qemu-user: scripts/emulated_cpus.sh runs the
#                               bit tests as AVX2 CPUs dispatch;
#                               libonnx-dev, libprotobuf-dev, protobuf-compiler:
#                               devmap import / export (ONNX models);
#                               libonnx-testdata: ONNX's node tests, the
#                               conformance test; python3-onnx: the ONNX
#                               round-trip test reads the exported model)
#   scripts/setup.sh --test     and Slurm for the test bed's srun test (munge,
#                               slurmctld, slurmd, slurm-client); scripts/test.sh
#                               asks for it. Where systemd runs, Debian starts
#                               munge's service on install; the test bed starts
#                               its own daemons and needs none of the machine's.
set -euo pipefail

packages=(
  cmake ninja-build pkg-config g++ ccache
  libyaml-cpp-dev libzmq3-dev cppzmq-dev libboost-dev
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  python3-torch python3-numpy python3-matplotlib python3-venv
  graphviz
  openmpi-bin libopenmpi-dev iproute2
  qemu-user
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx
)
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --test) packages+=(munge slurmctld slurmd slurm-client) ;;
    *) echo "setup.sh: unknown option '$arg' (known: --test, --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup.sh: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
