#!/usr/bin/env bash
# Runs a devmap job: installs what is missing, builds if needed, then execs
# the coordinator with every argument passed on.
#   scripts/launch.sh [SUBCOMMAND] CONFIG [options]     (see --help)
#   scripts/launch.sh configs/fashion_mnist_cnn.yaml
#   scripts/launch.sh train configs/fashion_mnist_cnn.yaml --set train.epochs=1
# DEVMAP_PRESET picks the CMake preset (default: release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
dir=$("$root/scripts/build.sh" "${DEVMAP_PRESET:-release}" coordinator worker_cpu)
exec "$dir/bin/coordinator" "$@"
