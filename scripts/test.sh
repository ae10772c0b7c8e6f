#!/usr/bin/env bash
# Every test: installs what it needs, builds, and runs ctest. Each test
# starts its own redis-server. Ends with "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" || exit 1
"$root/scripts/build.sh" "$@" || exit 1
build=${MW_BUILD_DIR:-$root/build}
log=$(mktemp /tmp/mw-ctest-XXXXXX.log)
(cd "$build" && ctest --output-on-failure -j2 --timeout 600) 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
rm -f "$log"
if [[ -z "$summary" ]]; then echo "ctest: 0 passed, 1 failed"; exit 1; fi
echo "ctest: $((total - failed)) passed, $failed failed"
exit "$rc"
