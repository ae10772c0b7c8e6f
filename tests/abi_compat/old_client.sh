#!/usr/bin/env bash
# A program built before symbol versions runs unchanged against today's
# library: old_client's references to libmultiworld are unversioned (it was
# linked against a library without versions, as every 0.1 program was), it
# needs libmultiworld.so.0, and it runs against the real library found on
# LD_LIBRARY_PATH, whose symbols all carry versions.
# usage: old_client.sh OLD_CLIENT REAL_LIB_DIR WITH_REDIS
set -euo pipefail
client=$1 libdir=$2 with_redis=$3
needed=$(readelf -d "$client" | sed -n 's/.*Shared library: \[\(libmultiworld[^]]*\)\].*/\1/p')
[[ "$needed" == "libmultiworld.so.0" ]] || { echo "FAIL: $client needs '$needed', not libmultiworld.so.0"; exit 1; }
if grep -q MULTIWORLD_ <<<"$(readelf -V "$client")"; then
  echo "FAIL: $client holds versioned references; it must be linked as before symbol versions:"
  readelf -V "$client"
  exit 1
fi
refs=$(readelf --dyn-syms --wide "$client" | awk '$7 == "UND" && $8 ~ /^mw_/ {print $8}')
echo "old_client's unversioned references: $(echo $refs)"
real=$libdir/libmultiworld.so.0
grep -q 'mw_poll@@MULTIWORLD_0' <<<"$(readelf --dyn-syms --wide "$real")" ||
  { echo "FAIL: $real does not carry symbol versions"; exit 1; }
resolved=$(LD_LIBRARY_PATH=$libdir ldd "$client" | awk '/libmultiworld.so.0/ {print $3}')
[[ "$(readlink -f "$resolved")" == "$(readlink -f "$real")" ]] ||
  { echo "FAIL: libmultiworld.so.0 resolves to '$resolved', not $real"; exit 1; }
LD_LIBRARY_PATH=$libdir "$with_redis" "$client"
