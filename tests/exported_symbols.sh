#!/usr/bin/env bash
# The shared library exports the C API and nothing else, every function
# with a symbol version (readelf shows name@@NODE), and every function the
# header declares.
# usage: exported_symbols.sh LIB HEADER
set -euo pipefail
lib=$1 header=$2
# Defined dynamic symbols: "name@@NODE", or the version nodes themselves
# (ABS objects named like the nodes).
defined=$(readelf --dyn-syms --wide "$lib" | awk 'NR > 3 && $7 != "UND" && $8 != "" {print $8}')
fail=0
others=$(grep -v '^mw_' <<<"$defined" | grep -v '^MULTIWORLD_[0-9.]*$' || true)
if [[ -n "$others" ]]; then
  echo "symbols outside the C API exported from $lib:"
  echo "$others"
  fail=1
fi
unversioned=$(grep '^mw_' <<<"$defined" | grep -v '@@MULTIWORLD_[0-9.]*$' || true)
if [[ -n "$unversioned" ]]; then
  echo "exported without a default symbol version (capi/multiworld.map):"
  echo "$unversioned"
  fail=1
fi
declared=$(grep -o 'mw_[a-z0-9_]*(' "$header" | tr -d '(' | sort -u)
exported=$(grep '^mw_' <<<"$defined" | sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [[ -n "$missing" ]]; then
  echo "declared in $header but not exported (add them to a new node of capi/multiworld.map):"
  echo "$missing"
  fail=1
fi
((fail == 0)) || exit 1
echo "$lib exports $(wc -l <<<"$exported") mw_* functions, each versioned:"
grep '^mw_' <<<"$defined" | sed 's/.*@@//' | sort | uniq -c
