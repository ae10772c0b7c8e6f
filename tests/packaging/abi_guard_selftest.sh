#!/usr/bin/env bash
# The ABI guard must fail on each kind of incompatible change. From a dump
# of the library just built (the reference), it makes "new" dumps that
#   - lost mw_wait,
#   - moved mw_wait to another version node (programs linked against
#     mw_wait@MULTIWORLD_0 would no longer find it),
#   - moved a field of mw_completion_t (a struct of the 0.x API),
# and checks that the guard rejects each, naming what changed, while the
# unchanged dump passes.
# usage: abi_guard_selftest.sh ABI_SH LIB MAJOR
set -euo pipefail
abi=$1 lib=$2 major=$3
tmp=$(mktemp -d /tmp/mw-abi-selftest-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
rc=0
"$abi" dump "$lib" "$tmp/full.abi" || rc=$?
((rc == 0)) || exit "$rc" # 77: no libabigail or no DWARF: skipped
grep -q "<elf-symbol name='mw_wait' version='MULTIWORLD_0'" "$tmp/full.abi"
grep -q "<class-decl name='mw_completion_t'" "$tmp/full.abi"

sed -e "/<elf-symbol name='mw_wait'/d" -e "s/ elf-symbol-id='mw_wait'//" \
  "$tmp/full.abi" >"$tmp/without_mw_wait.abi"
sed -e "s/<elf-symbol name='mw_wait' version='MULTIWORLD_0'/<elf-symbol name='mw_wait' version='MULTIWORLD_9'/" \
  "$tmp/full.abi" >"$tmp/moved_mw_wait.abi"
# mw_completion_t's `status` (at bit 192) moves to bit 224.
awk "/<class-decl name='mw_completion_t'/ { inside = 1 }
     inside && /layout-offset-in-bits='192'/ { sub(/layout-offset-in-bits='192'/, \"layout-offset-in-bits='224'\") }
     /<\\/class-decl>/ { inside = 0 }
     { print }" "$tmp/full.abi" >"$tmp/moved_field.abi"
! cmp -s "$tmp/full.abi" "$tmp/moved_field.abi"

# A dump is compatible with itself...
"$abi" check "$tmp/full.abi" "$major" "$tmp/full.abi"
# ...and each changed one is not.
expect_rejected() { # NAME DUMP TEXT
  local out rc=0
  out=$("$abi" check "$2" "$major" "$tmp/full.abi" 2>&1) || rc=$?
  echo "$out"
  if ((rc != 1)) || ! grep -q "$3" <<<"$out"; then
    echo "FAIL: the ABI guard did not reject $1 (exit $rc, or no mention of '$3')"
    exit 1
  fi
  echo "OK: the ABI guard rejects $1"
}
expect_rejected "a library without mw_wait" "$tmp/without_mw_wait.abi" "mw_wait"
expect_rejected "mw_wait moved to another version node" "$tmp/moved_mw_wait.abi" "mw_wait"
expect_rejected "a moved field of mw_completion_t" "$tmp/moved_field.abi" "'mw_status_t status' offset changed"
