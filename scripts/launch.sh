#!/usr/bin/env bash
# Runs a devmap job: installs what is missing, builds if needed, then execs
# the coordinator with every argument passed on.
#   scripts/launch.sh [SUBCOMMAND] CONFIG [options]     (see --help)
#   scripts/launch.sh configs/fashion_mnist_cnn.yaml
#   scripts/launch.sh train configs/fashion_mnist_cnn.yaml --set train.epochs=1
#
# A job across hosts runs one coordinator rank per host under MPI (per
# replica with data_parallel.replicas, several to a host as HOST:N says):
#   scripts/launch.sh --hosts node1,node2 CONFIG [options]
#       installs and builds here, prints the mpirun line to stderr and runs it
#   scripts/launch.sh --hosts node1:2,node2:2 CONFIG    (4 replicas, 2 a host)
#   mpirun -np 2 --host node1,node2 scripts/launch.sh CONFIG [options]
#   srun --mpi=pmix --ntasks-per-node=1 scripts/launch.sh CONFIG [options]
# Under mpirun or srun nothing is installed or built: every host runs the
# build already at the same path (build it first on each host).
#
# DEVMAP_PRESET picks the CMake preset (default: release); DEVMAP_BUILD_DIR
# names a built folder to run instead (then nothing is installed or built).
# With --hosts: DEVMAP_MPI_INTERFACE is the one network interface MPI may use
# (e.g. eth0; default: MPI's choice), DEVMAP_MPIRUN_ARGS adds mpirun options.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "launch.sh: $*" >&2; exit 2; }

hosts="" hosts_given=0
case "${1:-}" in
  --hosts) [[ $# -ge 2 ]] || die "--hosts needs a list of hosts, e.g. --hosts node1,node2"; hosts=$2; hosts_given=1; shift 2 ;;
  --hosts=*) hosts=${1#--hosts=}; hosts_given=1; shift ;;
esac

# Ranks a host may run, and a job in all: more is a typo, not a cluster.
max_per_host=64 max_ranks=1024
under_launcher=${OMPI_COMM_WORLD_SIZE:-}${PMIX_RANK:-}${PMI_RANK:-}${SLURM_PROCID:-}
if [[ $hosts_given -eq 1 ]]; then
  [[ -n "$hosts" ]] || die "--hosts names no host: give host names separated by commas, e.g. --hosts node1,node2"
  [[ -z "$under_launcher" ]] || die "--hosts starts mpirun itself; under mpirun or srun, leave it out"
  host_re='[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?'
  [[ "$hosts" =~ ^$host_re(,$host_re)*$ ]] ||
    die "--hosts '$hosts': give host names separated by commas, each with :N for N ranks there, e.g. --hosts node1,node2 or node1:2,node2:2"
  declare -A seen=()
  total=0
  for host in ${hosts//,/ }; do
    name=${host%%:*} n=1
    [[ "$host" == *:* ]] && n=${host##*:}
    # Compared as text first: bash arithmetic would wrap a 20-digit count.
    if [[ ${#n} -gt 4 || 10#$n -lt 1 || 10#$n -gt $max_per_host ]]; then
      die "--hosts '$hosts': $name:$n asks for $n ranks on one host; give 1 to $max_per_host"
    fi
    key=${name,,}
    [[ -z "${seen[$key]:-}" ]] || die "--hosts '$hosts': ${seen[$key]} and $name are the same host (host names ignore case); name it once, with :N for N ranks"
    seen[$key]=$name
    total=$((total + 10#$n))
  done
  [[ $total -le $max_ranks ]] || die "--hosts '$hosts' asks for $total ranks; at most $max_ranks"
fi
if [[ -n "${DEVMAP_BUILD_DIR:-}" || -n "$under_launcher" ]]; then
  dir=${DEVMAP_BUILD_DIR:-$root/build/${DEVMAP_PRESET:-release}}
  [[ -x "$dir/bin/coordinator" ]] || die "$dir/bin/coordinator is not built on $(hostname)$([[ -n "$under_launcher" ]] \
    && echo " (under mpirun or srun nothing is built: run scripts/build.sh ${DEVMAP_PRESET:-release} on every host first)")"
else
  "$root/scripts/setup.sh"
  # The build's output shows, but not the two lines every up-to-date build
  # prints. build TARGET... prints the build folder.
  quiet_build() { grep -v -E '^(\[[0-9]+/[0-9]+\] Re-checking globbed directories\.\.\.|ninja: no work to do\.)$' || true; }
  build() { { "$root/scripts/build.sh" "${DEVMAP_PRESET:-release}" "$@" 2>&1 1>&3 3>&- | quiet_build >&2; } 3>&1; }
  # Only what this run needs, so the first run starts sooner: the
  # coordinator and worker_cpu, then worker_gpu (nvcc: a third of a full
  # build) when the config declares a GPU device and CMake found CUDA and
  # cuDNN; bin/worker_gpu.absent says why a build has none, and the
  # coordinator says it again when the config asks for a GPU.
  dir=$(build coordinator worker_cpu)
  if [[ ! -e "$dir/bin/worker_gpu.absent" ]]; then
    # A config that does not load lists nothing: the run below says why.
    programs=$("$dir/bin/coordinator" "$@" --worker-programs 2>/dev/null || true)
    if grep -qx worker_gpu <<<"$programs"; then build worker_gpu >/dev/null; fi
  fi
fi

# How the user ran this script: the coordinator starts its resume line with
# it. A rank started by --hosts keeps the line --hosts gave it.
if [[ -n "$hosts" ]]; then
  export DEVMAP_LAUNCH_AS="$0 --hosts $hosts"
elif [[ -n "$under_launcher" ]]; then
  export DEVMAP_LAUNCH_AS=${DEVMAP_LAUNCH_AS:-"<the same mpirun or srun line> $0"}
else
  export DEVMAP_LAUNCH_AS="$0"
fi
if [[ -z "$hosts" ]]; then
  # A rank waiting in MPI polls; on a host whose cores its workers keep busy,
  # it yields the core between polls (unless the user set it otherwise):
  # 2 replicas on 2 shared cores train 1.45x one replica's images/s with it,
  # 1.36x without (bench/README.md).
  [[ -z "$under_launcher" ]] || export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
  exec "$dir/bin/coordinator" "$@"
fi

# --hosts: one rank per host (N for HOST:N), each running this script with
# the same build; --map-by node deals the ranks out over the hosts in turn.
command -v mpirun >/dev/null || die "mpirun is not installed (scripts/setup.sh installs openmpi-bin)"
count=$total
# --bind-to none: a rank is a coordinator that starts its host's workers, and
# a worker pins its own threads (devices.*.affinity); bound to one core, as
# mpirun binds 2 ranks by default, every worker of the host would share it.
line=(mpirun --host "$hosts" -np "$count" --map-by node --bind-to none)
# When a rank fails, Open MPI's daemons send the others SIGCONT, SIGTERM and
# SIGKILL, by default a second apart, one host after another: 2 s per host.
# A coordinator killed mid-step loses nothing a checkpoint holds (its
# workers remove the run's files), so the job stops at once instead.
line+=(--mca odls_base_sigkill_timeout 0)
[[ $(id -u) -ne 0 ]] || line+=(--allow-run-as-root)
# Ranks talk over TCP only (no shared-memory transport between them).
line+=(--mca btl "tcp,self")
if [[ -n "${DEVMAP_MPI_INTERFACE:-}" ]]; then
  line+=(--mca btl_tcp_if_include "$DEVMAP_MPI_INTERFACE" --mca oob_tcp_if_include "$DEVMAP_MPI_INTERFACE")
fi
# shellcheck disable=SC2206  # DEVMAP_MPIRUN_ARGS is a list of words
[[ -z "${DEVMAP_MPIRUN_ARGS:-}" ]] || line+=($DEVMAP_MPIRUN_ARGS)
line+=(-x DEVMAP_BUILD_DIR="$dir" -x DEVMAP_LAUNCH_AS "$root/scripts/launch.sh" "$@")
echo "launch.sh: ${line[*]}" >&2
exec "${line[@]}"
