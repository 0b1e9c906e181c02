# Shared by the bench scripts: installs what is missing and builds the
# release preset's coordinator and worker; sets $root, $dir (the build) and
# $out (a temporary folder removed on exit).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
dir=$("$root/scripts/build.sh" release coordinator worker_cpu)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
