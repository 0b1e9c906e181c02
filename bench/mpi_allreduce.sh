#!/usr/bin/env bash
# A bare MPI_Allreduce of the reference model's gradients (3,274,634
# floats, 13.1 MB) across 2 (or 3) namespace hosts of scripts/testbed.sh
# over TCP (veth links, btl tcp,self), against devmap's rank-order
# allreduce (MpiSession::allreduce_sum_ordered) of the whole buffer and of
# the buckets a data-parallel job cuts it into (data_parallel.bucket_size,
# 4 MiB by default), alternating. Prints the
# median and best seconds per call and the bus bandwidth as NCCL's tests
# define it (busbw = bytes / time * 2 (n-1) / n). Needs root (namespaces)
# and MPI in the build; makes its own test bed and removes it on exit.
#
#   bench/mpi_allreduce.sh [--hosts 2|3] [--floats N] [--rounds N] [--bucket-size BYTES]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hosts=2
floats=3274634
rounds=20
bucket_size=4194304
bench_options 12 --hosts=hosts --floats=floats --rounds=rounds --bucket-size=bucket_size -- "$@"
bench_build mpi_allreduce
[[ -x "$dir/bin/mpi_allreduce" ]] || { echo "mpi_allreduce.sh: $dir has no bin/mpi_allreduce (built without MPI?)" >&2; exit 1; }
export DEVMAP_TESTBED_NAME=bench$$
"$root/scripts/testbed.sh" check || exit
trap '"$root/scripts/testbed.sh" down; rm -rf "$out"' EXIT
"$root/scripts/testbed.sh" up "$hosts"
"$root/scripts/testbed.sh" mpirun -np "$hosts" --map-by node "$dir/bin/mpi_allreduce" --floats "$floats" --rounds "$rounds" --bucket-size "$bucket_size"
