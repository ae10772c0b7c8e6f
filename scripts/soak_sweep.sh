#!/usr/bin/env bash
# Fresh-seed soak sweep: 4-minute runs of `mw_bench soak`, one seed at a
# time, the configurations interleaved so that a slow hour hits them all
# alike. Run it on a quiet machine (nothing beside it: the soak's bounds
# are timing bounds). Each run leaves NAME-SEED.{log,json} in OUT and a
# line in OUT/summary.txt; a rerun skips the runs that finished.
#
#   bash scripts/soak_sweep.sh [OUT] [COUNT] [FIRST]
#
# COUNT seeds per configuration (default 20), from the FIRST-th on
# (default 1): a sweep cut short goes on in a new OUT.
#
# Seeds: 90101.. ucx two rails, 90201.. ucx one rail, 90301.. gloo; run as
# root from the repository root after scripts/build.sh.
set -u
out=${1:-/tmp/soak-sweep}
count=${2:-20}
first=${3:-1}
bench=$(pwd)/build/bench/mw_bench
[[ -x $bench ]] || { echo "soak_sweep: no $bench (run scripts/build.sh)" >&2; exit 2; }
mkdir -p "$out"
run() {  # NAME SEED ARGS...
  local name=$1 seed=$2
  shift 2
  local f=$out/$name-$seed
  [[ -f $f.json ]] && return
  (cd build && "$bench" soak "$@" --seed "$seed" --minutes 4 --json "$f.json" >"$f.log" 2>&1)
  echo "$(date +%T) $name $seed rc=$? $(grep -E '^soak:' "$f.log")" >>"$out/summary.txt"
}
for i in $(seq "$first" "$count"); do
  run ucx2 $((90100 + i)) --backend ucx --rails 2
  run ucx1 $((90200 + i)) --backend ucx --rails 1
  run gloo $((90300 + i)) --backend gloo
done
echo "$(date +%T) sweep done" >>"$out/summary.txt"
python3 "$(dirname "$0")/soak_table.py" "$out"
grep -v 'sweep done' "$out/summary.txt" | grep -vc 'crashes 0, lost 0, duplicated 0, reordered 0, corrupt 0, false_breaks 0, missed_breaks 0, violations 0' |
  sed 's/^/runs with a violation: /'
