# Shared by the bench scripts (source it; it runs nothing by itself).
#
#   bench_options HELP_LAST_LINE OPTION=VARIABLE... -- "$@"
#       parses "--option value" pairs into the named variables (which hold
#       the defaults); -h/--help prints the script's header comment (lines
#       2..HELP_LAST_LINE) and exits 0; anything else exits 2.
#   bench_build [TARGET...]
#       installs what is missing (scripts/setup.sh) and builds the release
#       preset's coordinator and worker (and TARGETs); sets $dir (the build
#       folder) and $out (a temporary folder removed on exit). With
#       DEVMAP_BUILD_DIR set, uses that already-built folder instead.
#   metric FILE EVENT KEY
#       the value of KEY in the last EVENT line of a metrics.jsonl file.
#   bench_testbed PREFIX
#       (root, MPI in the build) makes a 2-host test bed of scripts/testbed.sh
#       named PREFIX<pid>, removed on exit, and sets $shared: a folder under
#       the build folder (every host sees it), removed on exit too.
#   bench_on_hosts ARG...
#       runs scripts/launch.sh --hosts node1,node2 ARG... from node1 of that
#       test bed, in $shared, with the build $dir and MPI on eth0; stdout
#       discarded, stderr in $out/err.
#   bench_machine
#       prints the machine: CPU model, its vector units, OPENBLAS_CORETYPE as
#       found (never set here) and, where bench_build built gemm_probe, the
#       OpenBLAS core it picks and devmap's CPU path.
#   bench_peers NEWEST MODULE:PACKAGE...
#       the newest peers from PyPI, in the venv $venv (DEVMAP_BENCH_VENV, or
#       bench/.venv, git-ignored): with NEWEST other than "no", creates the
#       venv and pip-installs each PACKAGE whose MODULE does not import there;
#       sets peer_version[MODULE] to the version that imports, or to "" with
#       a note on stderr where it does not (or NEWEST is "no").
# Sets $root (the repository) on sourcing.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bench_options() {
  local help_last=$1 name
  shift
  local -A vars=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    vars[${1%%=*}]=${1#*=}
    shift
  done
  shift  # --
  name=$(basename "$0")
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h|--help) sed -n "2,${help_last}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
    if [[ -z ${vars[$1]+set} ]]; then
      echo "$name: unknown option '$1' (see --help)" >&2
      exit 2
    fi
    if [[ $# -lt 2 ]]; then
      echo "$name: option '$1' needs a value" >&2
      exit 2
    fi
    printf -v "${vars[$1]}" '%s' "$2"
    shift 2
  done
}

bench_build() {
  if [[ -n ${DEVMAP_BUILD_DIR:-} ]]; then
    dir=$(cd "$DEVMAP_BUILD_DIR" && pwd)
  else
    "$root/scripts/setup.sh"
    dir=$("$root/scripts/build.sh" release coordinator worker_cpu "$@")
  fi
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
}

bench_testbed() {
  export DEVMAP_TESTBED_NAME=$1$$
  "$root/scripts/testbed.sh" check || exit
  shared="$dir/bench-$1-$$"
  mkdir -p "$shared"
  trap '"$root/scripts/testbed.sh" down; rm -rf "$out" "$shared"' EXIT
  "$root/scripts/testbed.sh" up 2
}

bench_on_hosts() {
  local mpirun_args="--mca plm_rsh_agent $root/scripts/testbed_rsh.sh -x DEVMAP_TESTBED_NAME=$DEVMAP_TESTBED_NAME"
  "$root/scripts/testbed.sh" exec node1 sh -c "cd $(printf %q "$shared") && exec env \
    DEVMAP_BUILD_DIR=$(printf %q "$dir") DEVMAP_MPI_INTERFACE=eth0 \
    DEVMAP_MPIRUN_ARGS=$(printf %q "$mpirun_args -wdir $shared") \
    $(printf %q "$root/scripts/launch.sh") --hosts node1,node2 $(printf '%q ' "$@")" >/dev/null 2>"$out/err"
}

metric() {
  python3 -c "import json,sys
v = None
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get('event') == sys.argv[2]: v = d.get(sys.argv[3])
print(v)" "$@"
}

bench_machine() {
  local field
  field() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo | head -1; }
  echo "cpu: $(field 'model name') (family $(field 'cpu family') model $(field model)), $(nproc) cores"
  echo "vector units: $(grep -m1 -o -w -E 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  if [[ -x ${dir:-}/bin/gemm_probe ]]; then
    echo "OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE-(unset)}; OpenBLAS: $("$dir/bin/gemm_probe" --blas-info)"
    echo "devmap CPU path: $("$dir/bin/gemm_probe" --cpu-path); $("$dir/bin/gemm_probe" --onednn-info)"
    echo "devmap GEMMs: $("$dir/bin/gemm_probe" --gemm-info)"
  else
    echo "OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE-(unset)}"
  fi
}

venv=${DEVMAP_BENCH_VENV:-$root/bench/.venv}
declare -gA peer_version=()
bench_peers() {
  local newest=$1 pkg module
  shift
  for pkg in "$@"; do peer_version[${pkg%%:*}]=""; done
  [[ $newest == no ]] && return 0
  if [[ ! -x $venv/bin/python ]]; then
    echo "$(basename "$0"): installing the newest $(printf '%s ' "${@#*:}")into $venv" >&2
    /usr/bin/python3 -m venv "$venv" >&2 || true
  fi
  if [[ ! -x $venv/bin/python ]]; then
    echo "$(basename "$0"): no venv (/usr/bin/python3 -m venv failed; scripts/setup.sh installs python3-venv); the newest peers are skipped" >&2
    return 0
  fi
  for pkg in "$@"; do
    module=${pkg%%:*}
    "$venv/bin/python" -c "import $module" 2>/dev/null ||
      timeout 1800 "$venv/bin/pip" install -q numpy "${pkg#*:}" >&2 || true
    peer_version[$module]=$("$venv/bin/python" -c "import $module; print($module.__version__)" 2>/dev/null) ||
      echo "$(basename "$0"): $module does not import from $venv; skipped" >&2
  done
}
