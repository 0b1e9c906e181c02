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

metric() {
  python3 -c "import json,sys
v = None
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d.get('event') == sys.argv[2]: v = d.get(sys.argv[3])
print(v)" "$@"
}
