#!/usr/bin/env bash
# Every test: installs what it needs, builds, and runs ctest. Each test
# starts its own redis-server. Ends with "N passed, N failed, N skipped",
# a skipped test (no GPU, say) counted apart from the passed ones.
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
skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log")
rm -f "$log"
if [[ -z "$summary" ]]; then echo "ctest: 0 passed, 1 failed, 0 skipped"; exit 1; fi
echo "ctest: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
exit "$rc"
