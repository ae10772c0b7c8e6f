#!/usr/bin/env bash
# The ABI guard must fail when a function of the reference disappears: dump
# the library just built, drop mw_wait from a copy of the dump, and check
# that copy (as the "new" library) against the full dump (as the reference).
# usage: abi_guard_selftest.sh ABI_SH LIB MAJOR
set -euo pipefail
abi=$1 lib=$2 major=$3
tmp=$(mktemp -d /tmp/mw-abi-selftest-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
rc=0
"$abi" dump "$lib" "$tmp/full.abi" || rc=$?
((rc == 0)) || exit "$rc" # 77: no libabigail or no DWARF: skipped
grep -q "<elf-symbol name='mw_wait'" "$tmp/full.abi"
sed -e "/<elf-symbol name='mw_wait'/d" -e "s/ elf-symbol-id='mw_wait'//" \
  "$tmp/full.abi" >"$tmp/without_mw_wait.abi"

# A dump is compatible with itself...
"$abi" check "$tmp/full.abi" "$major" "$tmp/full.abi"
# ...and a library that lost mw_wait is not.
rc=0
out=$("$abi" check "$tmp/without_mw_wait.abi" "$major" "$tmp/full.abi" 2>&1) || rc=$?
echo "$out"
if ((rc != 1)) || ! grep -q "mw_wait" <<<"$out"; then
  echo "FAIL: the ABI guard did not report the removal of mw_wait (exit $rc)"
  exit 1
fi
echo "OK: the ABI guard rejects a library without mw_wait"
