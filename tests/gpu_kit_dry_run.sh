#!/usr/bin/env bash
# The GPU kit, as a machine without a GPU sees it: scripts/gpu_bundle.sh
# fills a kit from the build tree $1, and its check.sh must run every check
# (each skipping, saying why, where there is no GPU) with none failing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: gpu_kit_dry_run.sh BUILD_DIR}
tmp=$(mktemp -d /tmp/mw-gpu-kit-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
BUILD_DIR=$build "$here/scripts/gpu_bundle.sh" "$tmp/kit"
OUT=$tmp/out bash "$tmp/kit/check.sh"
last=$(tail -1 "$tmp/out/summary.txt")
[[ $last =~ ^gpu-check:\ [0-9]+\ passed,\ 0\ failed,\ [0-9]+\ skipped$ ]] || {
  echo "FAIL: the summary ends with '$last'"
  exit 1
}
