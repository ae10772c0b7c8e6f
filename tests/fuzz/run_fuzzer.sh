#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS over its committed seed corpus.
# New inputs go to WORK (in the build tree), never into the source tree; a
# crashing input is saved there too and the run fails, printing it.
# usage: run_fuzzer.sh BINARY SEED_DIR WORK_DIR SECONDS
set -uo pipefail
bin=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work/corpus"
log="$work/last-run.log"
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" >"$log" 2>&1
rc=$?
if [[ $rc -ne 0 ]]; then
  tail -n 60 "$log"
  echo "$(basename "$bin"): failed (exit $rc); inputs that crash it are in $work"
  exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log"
echo "$(basename "$bin"): no failure in ${seconds} s"
