#!/usr/bin/env bash
# Every GPU check of multiworld, run from the kit that scripts/gpu_bundle.sh
# fills (this file is the kit's check.sh). Copy the kit to a GPU machine and
# run `bash .gpu/check.sh` there; it needs no network, apt or build tools:
# NCCL and the CUDA runtime come from the machine (a pip nvidia-nccl package
# under python3's site-packages, or a CUDA install), the rest from the kit.
#
# It starts its own redis-server, runs the NCCL tests (among them a shrink
# 3 -> 2 and a grow 2 -> 3 of an NCCL world: check `resize`), the
# device-memory tests of the bindings and `mw_bench nccl`, and writes a summary, logs and
# the benchmark's JSON into $OUT (default: the kit's out/). Each check has a
# time limit, and the whole run ends within MW_GPU_CHECK_SECONDS (420 s).
# MW_GPU_CHECKS names the checks to run (nccl_test resize nccl_ops_test
# bench go rust python java); all by default.
# Without a GPU every check skips, saying why. It exits 0 when nothing
# failed. The last line is `gpu-check: N passed, N failed, N skipped`.
set -uo pipefail
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$kit/out}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
budget=${MW_GPU_CHECK_SECONDS:-420}
started=$SECONDS
passed=0 failed=0 skipped=0
tmp=$(mktemp -d /tmp/mw-gpu-check-XXXXXX)
cleanup() {
  [[ -f $tmp/redis.pid ]] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

say() { echo "$*" | tee -a "$summary"; }
record() {  # record PASS|FAIL|SKIP name [reason]
  case $1 in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
  esac
  say "$1 $2${3:+: $3}"
}
secondsLeft() { echo $((budget - (SECONDS - started))); }
# The lesser of a check's own limit and what is left of the run.
limit() {
  local left
  left=$(secondsLeft)
  ((left < $1)) && echo "$left" || echo "$1"
}

# ---- the machine ----------------------------------------------------------
say "gpu-check: kit $(cat "$kit/MANIFEST" 2>/dev/null | head -1)"
say "host: $(uname -srm), $(nproc) cores, glibc $(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')"
gpu="none"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4 | paste -sd';')
fi
say "gpu: $gpu"

# ---- libraries: the kit's, then NCCL and the CUDA runtime of the machine ---
sitePackages() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - <<'EOF' 2>/dev/null
import site, sys
for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    print(p)
EOF
}
# The directory holding $1: pip's nvidia packages, CUDA installs, the system.
findLib() {
  local name=$1 dir hit
  while read -r dir; do
    [[ -d $dir/nvidia ]] || continue
    hit=$(find "$dir/nvidia" -maxdepth 4 -name "$name" 2>/dev/null | head -1)
    [[ -n $hit ]] && { dirname "$hit"; return; }
  done < <(sitePackages | sort -u)
  for dir in /usr/local/cuda*/lib* /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [[ -e $dir/$name ]] && { echo "$dir"; return; }
  done
  hit=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')
  [[ -n $hit ]] && dirname "$hit"
}
nccl_dir=$(findLib libnccl.so.2)
cudart_dir=$(findLib libcudart.so.13)
libs=$kit/lib
[[ -n $nccl_dir ]] && libs=$libs:$nccl_dir
# The machine's CUDA runtime first (PyTorch's may be newer than the
# kit's); the kit's copy in cudart/ only where the machine has none.
[[ -n $cudart_dir ]] && libs=$libs:$cudart_dir
libs=$libs:$kit/deps:$kit/cudart
# UCX finds its transport modules beside libucs; the kit's copy sits apart.
UCX_MODULE_DIR=$(find "$kit/sys" -type d -name ucx -path '*/lib/*' | head -1)
export UCX_MODULE_DIR
# The kit's libstdc++ only where the machine's is older than the build's.
needs=$(cat "$kit/fallback/NEEDS" 2>/dev/null || echo GLIBCXX_3.4.30)
if ! grep -aqF "$needs" "$(ldconfig -p 2>/dev/null | awk '$1 == "libstdc++.so.6" {print $NF; exit}')" 2>/dev/null; then
  libs=$libs:$kit/fallback
  say "libstdc++: the machine's lacks $needs, so the kit's comes last in the search path"
fi
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$kit/bin:$kit/sys/usr/bin:$PATH
export MW_NCCL_PLUGIN=$kit/lib/libmultiworld-nccl.so.0
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
say "libnccl.so.2: ${nccl_dir:-not found}; libcudart.so.13: ${cudart_dir:-only the kit copy}"
if command -v python3 >/dev/null 2>&1; then
  say "pip: $(python3 -c 'import importlib.metadata as m
for p in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "torch"):
    try: print(p, m.version(p), end="; ")
    except Exception: pass' 2>/dev/null)"
fi

# Every library the kit's programs need comes from the kit, except glibc,
# the C++ runtime, CUDA and NCCL: one found elsewhere on the machine that
# built the kit would be missing on a bare one.
kitLibraries() {
  local base='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread\.|libdl\.|librt\.|libresolv\.|libstdc\+\+|libgcc_s|libcuda|libnccl|libcudart)'
  local missing outside
  # In $OUT only on a failure: what comes back from a GPU machine may be
  # limited in files.
  ldd "$kit"/bin/* "$kit"/lib/*.so* >"$tmp/ldd.txt" 2>&1
  missing=$(awk '/not found/ {print $1}' "$tmp/ldd.txt" | sort -u | paste -sd' ')
  outside=$(awk -v kit="$kit/" '$2 == "=>" && $3 ~ /^\// && index($3, kit) != 1 {print $1}' "$tmp/ldd.txt" |
    grep -Ev "$base" | sort -u | paste -sd' ')
  [[ -z $missing$outside ]] || cp "$tmp/ldd.txt" "$out/"
  if [[ -n $missing ]]; then
    record FAIL "kit libraries" "not found: $missing"
  elif [[ -n $outside ]]; then
    record FAIL "kit libraries" "found outside the kit: $outside"
  else
    record PASS "kit libraries"
  fi
}

# ---- Redis for the bindings' tests (the C tests start their own) ---------
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --daemonize yes --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log" >/dev/null 2>&1
for _ in $(seq 100); do [[ -S $tmp/redis.sock ]] && break; sleep 0.05; done
if [[ -S $tmp/redis.sock ]]; then
  export MW_REDIS_URL=unix://$tmp/redis.sock
else
  say "redis-server did not start: $(tail -3 "$tmp/redis.log" 2>/dev/null)"
fi
export MW_BIND_ADDRESS=127.0.0.1

# ---- checks ---------------------------------------------------------------
# A GoogleTest binary: one result per test case.
# `log_name=X gtest ...` logs to X.log (a second run of one binary).
gtest() {
  local name=$1 secs=$2 log=$out/${log_name:-$1}.log rc
  shift 2
  if [[ ! -x $kit/bin/$name ]]; then
    record SKIP "$name" "not in the kit"
    return
  fi
  timeout -k 10 "$(limit "$secs")" "$kit/bin/$name" "$@" >"$log" 2>&1
  rc=$?
  local line test ms
  while read -r line; do
    [[ $line =~ ^\[\ +(OK|SKIPPED|FAILED)\ +\]\ ([^ ]+)\ \(([0-9]+)\ ms\)$ ]] || continue
    test=${BASH_REMATCH[2]} ms=${BASH_REMATCH[3]}
    case ${BASH_REMATCH[1]} in
      OK) record PASS "$test" "${ms} ms" ;;
      FAILED) record FAIL "$test" "see ${log_name:-$name}.log" ;;
      SKIPPED) record SKIP "$test" "$(grep -A2 "^\[ RUN      \] $test\$" "$log" | tail -1 | cut -c1-200)" ;;
    esac
  done <"$log"
  if ((rc == 124 || rc == 137)); then record FAIL "$name" "timed out; see ${log_name:-$name}.log"; fi
  # Lines worth reading without the log: timings and thread counts (found
  # anywhere in a line: NCCL's output on the same stream may precede them).
  grep -aoE "threads with [0-9]+ NCCL worlds?: .{0,400}|ours: [0-9]+ with 1, [0-9]+ with [0-9]+|destroy with [^:]* took [0-9.]+ ms|pending recv [^:]* after [0-9.]+ ms|(shrink 3 -> 2|grow 2 -> 3) took [0-9]+ ms" \
    "$log" | sed 's/^/  /' | tee -a "$summary"
}

# A `go test` binary: one result per test.
gotest() {
  local log=$out/go_device.log
  if [[ ! -x $kit/bin/go_mw.test ]]; then
    record SKIP "go: device tests" "$(cat "$kit/bin/go_mw.test.missing" 2>/dev/null || echo "not in the kit")"
    return
  fi
  (cd "$tmp" && timeout -k 10 "$(limit 120)" "$kit/bin/go_mw.test" -test.v -test.count=1 \
    -test.run 'Device|NCCL' >"$log" 2>&1)
  local rc=$? line
  while read -r line; do
    [[ $line =~ ^---\ (PASS|FAIL|SKIP):\ ([^ ]+) ]] || continue
    case ${BASH_REMATCH[1]} in
      PASS) record PASS "go: ${BASH_REMATCH[2]}" ;;
      FAIL) record FAIL "go: ${BASH_REMATCH[2]}" "see go_device.log" ;;
      SKIP) record SKIP "go: ${BASH_REMATCH[2]}" "$(grep -B1 -- "--- SKIP: ${BASH_REMATCH[2]}" "$log" | head -1 | sed 's/^ *//' | cut -c1-200)" ;;
    esac
  done <"$log"
  if ((rc != 0)) && ! grep -q -- "--- FAIL" "$log"; then record FAIL "go: device tests" "exit $rc; see go_device.log"; fi
}

# The Rust device tests, run with --nocapture so that a test that skipped
# is seen saying so ("SKIP name: why") between its name and its result.
rusttest() {
  local log=$out/rust_device.log
  if [[ ! -x $kit/bin/rust_device.test ]]; then
    record SKIP "rust: device tests" "$(cat "$kit/bin/rust_device.test.missing" 2>/dev/null || echo "not in the kit")"
    return
  fi
  (cd "$tmp" && timeout -k 10 "$(limit 120)" "$kit/bin/rust_device.test" --test-threads=1 --nocapture >"$log" 2>&1)
  local rc=$? line test="" why=""
  while IFS= read -r line; do
    if [[ $line =~ ^test\ ([^ ]+)\ \.\.\.\ ?(.*)$ ]]; then
      test=${BASH_REMATCH[1]##*::} why="" line=${BASH_REMATCH[2]}
    fi
    [[ -n $test ]] || continue
    [[ $line =~ SKIP\ [^:]+:\ (.*)$ ]] && why=${BASH_REMATCH[1]}
    [[ $line =~ (^|\ )(ok|FAILED|ignored)$ ]] || continue
    if [[ $test != worker_process ]]; then
      case ${BASH_REMATCH[2]} in
        ok) [[ -n $why ]] && record SKIP "rust: $test" "${why:0:200}" || record PASS "rust: $test" ;;
        FAILED) record FAIL "rust: $test" "see rust_device.log" ;;
        ignored) record SKIP "rust: $test" "ignored" ;;
      esac
    fi
    test=""
  done <"$log"
  if ((rc != 0)) && ! grep -q "FAILED" "$log"; then record FAIL "rust: device tests" "exit $rc; see rust_device.log"; fi
}

pythontest() {
  local log=$out/python_cuda.log
  if ! command -v python3 >/dev/null 2>&1; then
    record SKIP "python: CUDA tensors" "no python3 here"
    return
  fi
  (cd "$kit/python/tests" && PYTHONPATH=$kit/python MW_LIB=$kit/lib/libmultiworld.so.0 PYTHONDONTWRITEBYTECODE=1 \
    timeout -k 10 "$(limit 180)" python3 test_cuda.py >"$log" 2>&1)
  local rc=$? line
  while read -r line; do
    [[ $line =~ ^(PASSED|FAILED|SKIPPED)\ ([^ ]+)( - (.*))?$ ]] || continue
    case ${BASH_REMATCH[1]} in
      PASSED) record PASS "python: ${BASH_REMATCH[2]}" ;;
      FAILED) record FAIL "python: ${BASH_REMATCH[2]}" "$(echo "${BASH_REMATCH[4]}" | cut -c1-200)" ;;
      SKIPPED) record SKIP "python: ${BASH_REMATCH[2]}" "${BASH_REMATCH[4]}" ;;
    esac
  done <"$log"
  if ((rc != 0)) && ! grep -q "^FAILED" "$log"; then record FAIL "python: CUDA tensors" "exit $rc; see python_cuda.log"; fi
}

benchnccl() {
  local log=$out/bench_nccl.log rc
  timeout -k 10 "$(limit 240)" "$kit/bin/mw_bench" nccl --json "$out/bench_nccl.json" >"$log" 2>&1
  rc=$?
  if ((rc != 0)); then
    record FAIL "mw_bench nccl" "exit $rc; see bench_nccl.log"
  elif grep -qi "skipped" "$log" && ! grep -q "ratio" "$log"; then
    record SKIP "mw_bench nccl" "$(grep -i -m1 "skipped" "$log" | cut -c1-200)"
  else
    record PASS "mw_bench nccl"
  fi
  sed 's/^/  /' "$log" | grep -v "^  $" | tail -60 >>"$summary"
}

kitLibraries
# MW_GPU_CHECKS="nccl_test bench ..." runs only those (to rerun what failed).
want() { [[ -z ${MW_GPU_CHECKS:-} || " $MW_GPU_CHECKS " == *" $1 "* ]]; }
# NCCL's view of each communicator's setup, for reading a failure.
resize_tests='NcclGpu.ShrinkThreeToTwo:NcclGpu.GrowTwoToThree'
want nccl_test && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT gtest nccl_test 180 --gtest_filter="-$resize_tests"
want resize && log_name=nccl_resize NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT gtest nccl_test 120 \
  --gtest_filter="$resize_tests"
want nccl_ops_test && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT gtest nccl_ops_test 150
want bench && benchnccl
want go && gotest
want rust && rusttest
want python && pythontest
want java && record SKIP "java: java_device" "no JVM in the kit: a JRE does not fit its 60 MiB"

say "took $((SECONDS - started)) s"
say "gpu-check: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
