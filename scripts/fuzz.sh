#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer, ASan + UBSan) and runs each
# fuzz target for a while, one after another (or --jobs at once).
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--merge] [TARGET...]
#
#   --seconds N  run each target N seconds (default 600)
#   --jobs J     run J targets at once (default 1)
#   --merge      afterwards, minimise each target's corpus (committed seeds
#                plus what this run found) back into fuzz/corpus/TARGET/
#   TARGET       config_plan, safetensors_header, wire_message, worker_plan
#                (default: all)
#
# Each target reads fuzz/corpus/TARGET/ (seeded by fuzz_make_seeds when
# missing) and writes new inputs to build/fuzz/work/TARGET/. A finding
# (crash, sanitizer report, timeout, out-of-memory) is saved in
# build/fuzz/artifacts/TARGET/ (emptied at each start), the run goes on, and
# the script exits 1 at the end. Reproduce one with
# build/fuzz/bin/fuzz_TARGET FILE (see docs/TESTING.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all=(config_plan safetensors_header wire_message worker_plan)
seconds=600 jobs=1 merge=0 targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (known: --seconds, --jobs, --merge, --help)" >&2; exit 2 ;;
    *)
      [[ " ${all[*]} " == *" $1 "* ]] || { echo "fuzz.sh: unknown target '$1' (known: ${all[*]})" >&2; exit 2; }
      targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
command -v clang++-14 >/dev/null || { echo "fuzz.sh: needs clang++-14 and libclang-rt-14-dev (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }

dir=$("$root/scripts/build.sh" fuzz "${targets[@]/#/fuzz_}" fuzz_make_seeds)
bin="$dir/bin"

# Seeds for a target whose corpus folder is missing.
seeds=""
for t in "${targets[@]}"; do
  [[ -d "$root/fuzz/corpus/$t" ]] && continue
  if [[ -z "$seeds" ]]; then
    seeds=$(mktemp -d)
    "$bin/fuzz_make_seeds" "$root" "$seeds"
  fi
  mkdir -p "$root/fuzz/corpus"
  cp -r "$seeds/$t" "$root/fuzz/corpus/$t"
done
[[ -z "$seeds" ]] || rm -rf "$seeds"

# run TARGET: fuzzes for $seconds and prints one summary line.
run() {
  local t=$1 work="$dir/work/$1" art="$dir/artifacts/$1/" log="$dir/logs/$1.log" dict=()
  rm -rf "$art"  # findings of this run only
  mkdir -p "$work" "$art" "$dir/logs"
  [[ -f "$root/fuzz/$t.dict" ]] && dict=(-dict="$root/fuzz/$t.dict")
  local start=$SECONDS rc=0
  # Fork mode with -ignore_crashes: a finding is saved and the run goes on,
  # so one run reports every crash it meets rather than only the first.
  nice -n 10 "$bin/fuzz_$t" "$work" "$root/fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$art" >"$log" 2>&1 || rc=$?
  local execs findings
  execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
  findings=$(find "$art" -type f | wc -l)
  printf 'fuzz.sh: %-20s %s executions in %d s, corpus %s files, %s findings%s\n' "$t" "${execs:-?}" \
    $((SECONDS - start)) "$(find "$work" "$root/fuzz/corpus/$t" -type f | wc -l)" "$findings" \
    "$([[ $rc -eq 0 && $findings -eq 0 ]] || echo ": FAILED (exit $rc), see $log and $art")"
  [[ $rc -eq 0 && $findings -eq 0 ]]
}

failed=0
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $jobs ]]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done

if [[ $merge -eq 1 ]]; then
  for t in "${targets[@]}"; do
    new="$root/fuzz/corpus/$t.new"
    rm -rf "$new" && mkdir -p "$new"
    "$bin/fuzz_$t" -set_cover_merge=1 "$new" "$root/fuzz/corpus/$t" "$dir/work/$t" >"$dir/logs/$t.merge.log" 2>&1
    rm -rf "$root/fuzz/corpus/$t" && mv "$new" "$root/fuzz/corpus/$t"
    echo "fuzz.sh: $t corpus minimised to $(find "$root/fuzz/corpus/$t" -type f | wc -l) files"
  done
fi
exit $failed
