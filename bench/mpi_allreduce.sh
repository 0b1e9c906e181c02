#!/usr/bin/env bash
# A bare MPI_Allreduce of the reference model's gradients (3,274,634
# floats, 13.1 MB) across 2 (or 3) namespace hosts of scripts/testbed.sh
# over TCP (veth links, btl tcp,self), against devmap's rank-order
# allreduce (MpiSession::allreduce_sum_ordered), alternating. Prints the
# median and best seconds per call and the bus bandwidth as NCCL's tests
# define it (busbw = bytes / time * 2 (n-1) / n). Needs root (namespaces)
# and MPI in the build; makes its own test bed and removes it on exit.
#
#   bench/mpi_allreduce.sh [--hosts 2|3] [--floats N] [--rounds N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hosts=2
floats=3274634
rounds=20
bench_options 10 --hosts=hosts --floats=floats --rounds=rounds -- "$@"
bench_build mpi_allreduce
[[ -x "$dir/bin/mpi_allreduce" ]] || { echo "mpi_allreduce.sh: $dir has no bin/mpi_allreduce (built without MPI?)" >&2; exit 1; }
export DEVMAP_TESTBED_NAME=bench$$
"$root/scripts/testbed.sh" check || exit
trap '"$root/scripts/testbed.sh" down; rm -rf "$out"' EXIT
"$root/scripts/testbed.sh" up "$hosts"
"$root/scripts/testbed.sh" mpirun -np "$hosts" --map-by node "$dir/bin/mpi_allreduce" --floats "$floats" --rounds "$rounds"
