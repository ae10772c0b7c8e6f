#!/usr/bin/env bash
# The ABI guard of libmultiworld (see README.md here).
#
#   abi.sh dump  LIB OUT.abi       record LIB's public ABI (abidw)
#   abi.sh check LIB MAJOR [REF]   compare LIB with REF, by default
#                                  packaging/abi/libmultiworld.so.MAJOR.abi
#
# Only the C API counts: exported mw_* functions and the types declared in
# capi/include. check exits 0 when LIB is compatible with the reference
# (additions are fine), 1 on an incompatible change or a missing reference,
# 77 (skip) when libabigail is not installed or LIB has no DWARF to read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
headers=$src/capi/include
suppr=$here/multiworld.suppr

need_tools() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || {
      echo "SKIP: $t not found: apt-get install abigail-tools (scripts/packages/packaging.list)"
      exit 77
    }
  done
}

need_dwarf() {
  if ! readelf -S --wide "$1" | grep -q '\.debug_info'; then
    echo "SKIP: $1 has no debug info; the ABI guard reads DWARF (build with -g, e.g. RelWithDebInfo)"
    exit 77
  fi
}

cmd=${1:-}
case $cmd in
  dump)
    (($# == 3)) || { echo "usage: $0 dump LIB OUT.abi" >&2; exit 2; }
    lib=$2 out=$3
    need_tools abidw
    need_dwarf "$lib"
    abidw --headers-dir "$headers" --drop-private-types --exported-interfaces-only --suppressions "$suppr" \
      --no-corpus-path --no-comp-dir-path --no-show-locs --type-id-style hash \
      --out-file "$out" "$lib"
    # Source paths relative to the checkout, so the file does not depend on it.
    sed -i "s|path='$src/|path='|" "$out"
    echo "wrote $out ($(grep -c "<elf-symbol name='mw_" "$out") mw_* functions)"
    ;;
  check)
    (($# == 3 || $# == 4)) || { echo "usage: $0 check LIB MAJOR [REF]" >&2; exit 2; }
    lib=$2 major=$3 ref=${4:-$here/libmultiworld.so.$3.abi}
    if [[ "$lib" == *.abi ]]; then # an abidw dump instead of a library (tests)
      soname=$(sed -n "s/.*<abi-corpus [^>]*soname='\([^']*\)'.*/\1/p" "$lib" | head -1)
    else
      soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
    fi
    if [[ "$soname" != "libmultiworld.so.$major" ]]; then
      echo "FAIL: $lib has SONAME '$soname', expected libmultiworld.so.$major (SOVERSION = MW_VERSION_MAJOR)"
      exit 1
    fi
    if [[ ! -f "$ref" ]]; then
      echo "FAIL: no ABI reference $ref."
      echo "MW_VERSION_MAJOR is $major: after a major bump, record the new ABI with"
      echo "  cmake --build build --target multiworld_abi_reference"
      echo "and commit packaging/abi/libmultiworld.so.$major.abi (see packaging/abi/README.md)."
      exit 1
    fi
    need_tools abidiff
    [[ "$lib" == *.abi ]] || need_dwarf "$lib"
    # Added functions (and harmless changes such as appended enumerators) are
    # not reported; whatever is reported is a change to the existing API.
    # A dump was filtered when it was written (and libabigail 2.2 aborts on
    # header filters applied to one); a library is filtered here.
    filter=(--suppressions "$suppr")
    [[ "$lib" == *.abi ]] ||
      filter+=(--headers-dir2 "$headers" --drop-private-types --exported-interfaces-only)
    set +e
    report=$(abidiff "${filter[@]}" --no-added-syms "$ref" "$lib" 2>&1)
    rc=$?
    set -e
    if ((rc & 3)); then
      echo "FAIL: abidiff could not compare ($rc):"
      echo "$report"
      exit 1
    fi
    if ((rc & 12)); then
      echo "FAIL: libmultiworld's ABI changed incompatibly against $(basename "$ref"):"
      echo "$report"
      echo
      echo "Undo the change, or bump MW_VERSION_MAJOR in capi/include/multiworld/multiworld.h"
      echo "and record the new reference (packaging/abi/README.md)."
      exit 1
    fi
    echo "$lib: ABI compatible with $(basename "$ref")"
    added=$(abidiff "${filter[@]}" "$ref" "$lib" 2>&1 | sed -n "s/^  \[A\] //p" || true)
    if [[ -n "$added" ]]; then
      echo "added since the reference (allowed in a minor version):"
      echo "$added"
    fi
    ;;
  *)
    echo "usage: $0 dump LIB OUT.abi | check LIB MAJOR [REF]" >&2
    exit 2
    ;;
esac
