#!/usr/bin/env bash
# The shared library exports the C API and nothing else.
set -euo pipefail
lib=$1
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^mw_' || true)
if [[ -n "$others" ]]; then
  echo "symbols outside the C API exported from $lib:"
  echo "$others"
  exit 1
fi
count=$(nm -D --defined-only "$lib" | grep -c ' T mw_')
echo "$lib exports $count mw_* functions and nothing else"
