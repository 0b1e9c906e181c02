#!/usr/bin/env bash
# Open MPI's remote-shell agent for the test bed of scripts/testbed.sh: mpirun
# calls it as it would ssh (`testbed_rsh.sh HOST COMMAND...`), and it runs
# COMMAND through /bin/sh inside HOST's namespaces instead of over a network
# login. DEVMAP_TESTBED_NAME names the test bed, as for testbed.sh.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "testbed_rsh.sh: usage: testbed_rsh.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
exec "$(dirname "${BASH_SOURCE[0]}")/testbed.sh" exec "$host" /bin/sh -c "$*"
