#!/usr/bin/env bash
# A multi-host test bed on one machine: two or three "hosts" built from Linux
# namespaces, joined by virtual ethernet links, with Open MPI run across them.
#
#   scripts/testbed.sh check                 can a test bed be made here? (exit 77 and the reason if not)
#   scripts/testbed.sh up [N]                make N hosts (2 or 3; default 2); idempotent
#   scripts/testbed.sh down                  remove every host, link and mount of the test bed
#   scripts/testbed.sh status                list the hosts (exit 1 when the test bed is not up)
#   scripts/testbed.sh exec HOST CMD...      run CMD inside HOST (node1, node2, node3)
#   scripts/testbed.sh bytes HOST            print HOST's eth0 byte counters: RX_BYTES TX_BYTES
#   scripts/testbed.sh mpirun [ARGS...]      run mpirun from node1 across every host (prints the line to stderr)
#   scripts/testbed.sh slurm                 start Slurm on the hosts (exit 77 and the reason where it cannot)
#   scripts/testbed.sh srun [ARGS...]        run srun from node1 (prints the line to stderr)
#
# Host nodeI has its own network namespace (eth0 at 10.77.0.(10+I)/24 and lo),
# UTS namespace (host name nodeI) and mount namespace (a private tmpfs on
# /dev/shm and /tmp, the repository at its path even under /tmp, its own
# sysfs, and an /etc/hosts naming every host). Each
# eth0 is one end of a veth pair whose other end (hI) sits on a bridge in a
# switch namespace, so the hosts reach each other only through the veth links
# and nothing touches the machine's own network. A host's namespaces are held
# by a process (`sleep infinity`) whose pid is in the state directory.
#
# DEVMAP_TESTBED_NAME (default dmtb) names the test bed: its network
# namespaces are NAME-node1.. and NAME-sw, its state is in /run/devmap-testbed/NAME,
# so test beds with different names coexist (tests use one per run).
# mpirun enters the hosts through scripts/testbed_rsh.sh instead of ssh.
# Slurm: munged and slurmctld run in node1 and a slurmd in every host, with
# their key, sockets, config, state and logs in the state directory; a
# partition "testbed" holds every host; down stops them with the hosts.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=${DEVMAP_TESTBED_NAME:-dmtb}
state=/run/devmap-testbed/$name
subnet=10.77.0
switch_ns=$name-sw

die() { echo "testbed.sh: $*" >&2; exit 1; }
[[ "$name" =~ ^[A-Za-z0-9_]{1,12}$ ]] || die "DEVMAP_TESTBED_NAME '$name' must be 1-12 letters, digits or _"

# Prints why no test bed can be made here, or nothing.
why_not() {
  [[ $(id -u) -eq 0 ]] || { echo "needs root to make namespaces (uid $(id -u))"; return; }
  for t in ip unshare nsenter mount; do
    command -v "$t" >/dev/null || { echo "'$t' is not installed (scripts/setup.sh installs iproute2)"; return; }
  done
  local probe=devmap-probe-$$ err
  if ! err=$(ip netns add "$probe" 2>&1); then echo "cannot make a network namespace: $err"; return; fi
  if ! err=$(ip -n "$probe" link add p0 type veth peer name p1 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    echo "cannot make a veth link: $err"
    return
  fi
  if ! err=$(ip -n "$probe" link add b0 type bridge 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    echo "cannot make a bridge: $err"
    return
  fi
  ip netns del "$probe"
  if ! err=$(unshare --uts --mount --propagation private sh -c 'hostname probe && mount -t tmpfs tmpfs /dev/shm' 2>&1); then
    echo "cannot make UTS and mount namespaces: $err"
    return
  fi
}

host_pid() { cat "$state/$1.pid" 2>/dev/null; }
host_alive() {
  local pid
  pid=$(host_pid "$1") && [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}
hosts_up() {
  local h
  for f in "$state"/node*.pid; do
    [[ -e "$f" ]] || continue
    h=$(basename "$f" .pid)
    echo "$h"
  done
}

down() {
  local h pid
  for h in $(hosts_up); do
    pid=$(host_pid "$h") || true
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      # Everything still running in the host (an orted, a rank) goes with it.
      for p in $(ip netns pids "$name-$h" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$state/$h.pid"
  done
  for ns in $(ip netns list | awk '{print $1}'); do
    if [[ "$ns" == "$name-node"* || "$ns" == "$switch_ns" ]]; then ip netns del "$ns" 2>/dev/null || true; fi
  done
  rm -rf "$state"
}

up() {
  local n=$1 i h
  [[ "$n" =~ ^[23]$ ]] || die "up takes 2 or 3 hosts, not '$n'"
  local reason
  reason=$(why_not)
  [[ -z "$reason" ]] || die "cannot make a test bed: $reason"
  if [[ $(hosts_up | wc -l) -eq $n ]]; then
    local all=1
    for h in $(hosts_up); do host_alive "$h" || all=0; done
    [[ $all -eq 1 ]] && return 0
  fi
  down
  trap 'rc=$?; [[ $rc -eq 0 ]] || { echo "testbed.sh: up failed; removing what it made" >&2; down; }; exit $rc' EXIT
  mkdir -p "$state"
  {
    echo "127.0.0.1 localhost"
    for ((i = 1; i <= n; i++)); do echo "$subnet.$((10 + i)) node$i"; done
  } >"$state/hosts"
  ip netns add "$switch_ns"
  ip -n "$switch_ns" link add br0 type bridge
  ip -n "$switch_ns" link set br0 up
  for ((i = 1; i <= n; i++)); do
    h=node$i
    ip netns add "$name-$h"
    ip -n "$switch_ns" link add "h$i" type veth peer name eth0 netns "$name-$h"
    ip -n "$switch_ns" link set "h$i" master br0 up
    ip -n "$name-$h" addr add "$subnet.$((10 + i))/24" dev eth0
    ip -n "$name-$h" link set eth0 up
    ip -n "$name-$h" link set lo up
    # ip netns exec gives the host a mount namespace with its own sysfs;
    # unshare adds its host name, /dev/shm, /tmp and /etc/hosts. A
    # repository under /tmp (a CI clone) stays visible at its path: every
    # host runs the same scripts and binaries.
    ip netns exec "$name-$h" unshare --uts --mount --propagation private sh -c '
      set -e
      hostname "$1"
      mount -t tmpfs -o mode=1777,size=256m tmpfs /dev/shm
      case "$3" in /tmp/*) mkdir -p "$2/repo.$1" && mount --bind "$3" "$2/repo.$1" ;; esac
      mount -t tmpfs -o mode=1777,size=256m tmpfs /tmp
      case "$3" in /tmp/*) mkdir -p "$3" && mount --bind "$2/repo.$1" "$3" ;; esac
      mount --bind "$2/hosts" /etc/hosts
      echo $$ > "$2/$1.pid.new"
      exec sleep infinity' sh "$h" "$state" "$root" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 100); do
      [[ -s "$state/$h.pid.new" ]] && break
      sleep 0.05
    done
    [[ -s "$state/$h.pid.new" ]] || die "host $h did not start"
    mv "$state/$h.pid.new" "$state/$h.pid"
  done
  trap - EXIT
  echo "testbed.sh: $n hosts up (test bed '$name'): $(hosts_up | tr '\n' ' ')" >&2
}

# Prints why Slurm cannot run on the test bed, or nothing.
slurm_why_not() {
  for t in munged mungekey slurmctld slurmd srun sinfo; do
    command -v "$t" >/dev/null ||
      { echo "'$t' is not installed (scripts/setup.sh installs munge, slurmctld, slurmd and slurm-client)"; return; }
  done
  [[ -n "$(hosts_up)" ]] || echo "test bed '$name' is not up (run: scripts/testbed.sh up)"
}

# Whether every node of the test bed's Slurm is idle (ready for a job).
slurm_idle() {
  [[ $(SLURM_CONF="$state/slurm/conf" in_host_run node1 sinfo -h -o %T 2>/dev/null) == idle ]]
}

slurm_up() {
  local reason s=$state/slurm h i
  reason=$(slurm_why_not)
  [[ -z "$reason" ]] || { echo "testbed.sh: no Slurm here: $reason" >&2; exit 77; }
  if [[ -e "$s/conf" ]] && slurm_idle; then return 0; fi
  rm -rf "$s"
  mkdir -p "$s/state"
  chmod 700 "$s"
  mungekey -c -k "$s/munge.key"
  {
    echo "ClusterName=devmap"
    echo "SlurmctldHost=node1($subnet.11)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$s/munge.socket"
    echo "StateSaveLocation=$s/state"
    echo "SlurmdSpoolDir=/tmp/slurmd"
    echo "SlurmctldPidFile=$s/slurmctld.pid"
    echo "SlurmdPidFile=/tmp/slurmd.pid"
    echo "SlurmctldLogFile=$s/slurmctld.log"
    echo "SlurmdLogFile=$s/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/linear"
    echo "MpiDefault=pmix"
    echo "ReturnToService=2"
    echo "KillWait=2"
    for h in $(hosts_up); do
      i=${h#node}
      echo "NodeName=$h NodeAddr=$subnet.$((10 + i)) CPUs=$(nproc --all) State=UNKNOWN"
    done
    echo "PartitionName=testbed Nodes=$(hosts_up | paste -sd, -) Default=YES MaxTime=INFINITE State=UP"
  } >"$s/conf"
  in_host_run node1 munged --force --key-file="$s/munge.key" --socket="$s/munge.socket" \
    --pid-file="$s/munged.pid" --log-file="$s/munged.log" --seed-file="$s/munged.seed" ||
    die "munged did not start (see $s/munged.log)"
  in_host_run node1 slurmctld -f "$s/conf" || die "slurmctld did not start (see $s/slurmctld.log)"
  # slurmd 22.05 will not start without the cgroup v1 mounts it checks,
  # though nothing here puts a process in a cgroup (proctrack/linuxproc,
  # task/none): the host's mount namespace gets them, as this machine has.
  for h in $(hosts_up); do
    in_host_run "$h" sh -c 'set -e
      mkdir -p /tmp/slurmd
      mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup
      for c in freezer cpuset memory; do
        mkdir -p /sys/fs/cgroup/$c
        mountpoint -q /sys/fs/cgroup/$c || mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c
      done
      mkdir -p /sys/fs/cgroup/systemd
      mountpoint -q /sys/fs/cgroup/systemd || mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd' ||
      die "cannot mount the cgroups slurmd needs on $h"
    in_host_run "$h" slurmd -f "$s/conf" || die "slurmd did not start on $h (see $s/slurmd-$h.log)"
  done
  for _ in $(seq 150); do
    slurm_idle && break
    sleep 0.2
  done
  slurm_idle || die "Slurm's nodes did not come up (see $s/slurmctld.log and $s/slurmd-*.log)"
  echo "testbed.sh: Slurm up (test bed '$name'): partition testbed on $(hosts_up | paste -sd, -)" >&2
}

# Sets `enter` to the command prefix that runs a command inside HOST.
host_enter() {
  host_alive "$1" || die "host '$1' is not up (test bed '$name'; run: scripts/testbed.sh up)"
  enter=(nsenter --target "$(host_pid "$1")" --net --uts --mount --)
}
# in_host_run HOST CMD...: runs CMD inside HOST and returns its status;
# in_host HOST CMD... replaces this script with it.
in_host_run() {
  local enter
  host_enter "$1"
  shift
  "${enter[@]}" "$@"
}
in_host() {
  local enter
  host_enter "$1"
  shift
  exec "${enter[@]}" "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
  check)
    reason=$(why_not)
    [[ -z "$reason" ]] || { echo "testbed.sh: no test bed here: $reason" >&2; exit 77; }
    ;;
  up) up "${1:-2}" ;;
  down) down ;;
  status)
    [[ -n "$(hosts_up)" ]] || { echo "testbed.sh: test bed '$name' is not up" >&2; exit 1; }
    for h in $(hosts_up); do
      if host_alive "$h"; then
        addr=$(ip -n "$name-$h" -4 -o addr show dev eth0 | awk '{print $4}')
        echo "$h $addr pid $(host_pid "$h")"
      else
        echo "$h down (its holder process is gone; run: scripts/testbed.sh down)"
      fi
    done
    ;;
  exec)
    [[ $# -ge 2 ]] || die "usage: testbed.sh exec HOST CMD..."
    in_host "$@"
    ;;
  bytes)
    [[ $# -eq 1 ]] || die "usage: testbed.sh bytes HOST"
    host_alive "$1" || die "host '$1' is not up (test bed '$name')"
    echo "$(ip netns exec "$name-$1" cat /sys/class/net/eth0/statistics/rx_bytes)" \
      "$(ip netns exec "$name-$1" cat /sys/class/net/eth0/statistics/tx_bytes)"
    ;;
  mpirun)
    hosts=$(hosts_up | paste -sd, -)
    [[ -n "$hosts" ]] || die "test bed '$name' is not up (run: scripts/testbed.sh up)"
    # Only TCP between processes (no shared-memory shortcut), only on eth0,
    # and the launcher enters the hosts through testbed_rsh.sh. --bind-to
    # none: every host's first rank would be bound to core 0, and the hosts
    # share this machine's cores, so two polling ranks would take turns on
    # one core (a 4 ms scheduler tick per message).
    line=(mpirun --allow-run-as-root --host "$hosts" --bind-to none
      --mca plm_rsh_agent "$root/scripts/testbed_rsh.sh"
      --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0
      -x DEVMAP_TESTBED_NAME="$name" "$@")
    echo "testbed.sh: node1\$ ${line[*]}" >&2
    export DEVMAP_TESTBED_NAME=$name
    in_host node1 "${line[@]}"
    ;;
  slurm) slurm_up ;;
  srun)
    [[ -e "$state/slurm/conf" ]] || die "Slurm is not up on test bed '$name' (run: scripts/testbed.sh slurm)"
    # The ranks' MPI uses TCP on eth0 only, as under mpirun above.
    line=(env SLURM_CONF="$state/slurm/conf" OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=eth0
      OMPI_MCA_oob_tcp_if_include=eth0 DEVMAP_TESTBED_NAME="$name" srun "$@")
    echo "testbed.sh: node1\$ ${line[*]}" >&2
    in_host node1 "${line[@]}"
    ;;
  -h | --help | "") sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown command '$cmd' (see --help)" ;;
esac
