#!/usr/bin/env bash
# usage: nccl_linkage.sh LIBMULTIWORLD [PLUGIN]
# The core library must load on hosts without CUDA: it may need neither the
# CUDA runtime or driver nor NCCL. The plugin, when built, needs libnccl and
# exports only its entry point.
set -euo pipefail
core=$1
plugin=${2:-}
needed=$(readelf -d "$core" | awk '/NEEDED/ {print $NF}')
if grep -Eiq 'cuda|nccl' <<<"$needed"; then
  echo "FAIL: $core needs CUDA or NCCL:"; echo "$needed"; exit 1
fi
echo "ok: $core needs none of CUDA and NCCL ($(tr '\n' ' ' <<<"$needed"))"
if [[ -z "$plugin" ]]; then
  echo "no NCCL plugin built"; exit 0
fi
pneeded=$(readelf -d "$plugin" | awk '/NEEDED/ {print $NF}')
grep -q 'libnccl' <<<"$pneeded" || { echo "FAIL: $plugin does not link libnccl:"; echo "$pneeded"; exit 1; }
exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u)
if [[ "$exported" != "mw_nccl_plugin_v1" ]]; then
  echo "FAIL: $plugin exports more than mw_nccl_plugin_v1:"; echo "$exported" | head -20; exit 1
fi
echo "ok: $plugin links libnccl and exports only mw_nccl_plugin_v1"
