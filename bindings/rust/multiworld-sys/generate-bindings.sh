#!/usr/bin/env bash
# Regenerates src/bindings.rs from the C API header with bindgen.
#
#   ./generate-bindings.sh            rewrites src/bindings.rs
#   ./generate-bindings.sh OUT.rs     writes OUT.rs instead (CI diffs it
#                                     against the committed file)
#
# The committed file was produced with Debian 12's bindgen 0.60.1 on
# libclang 14 (apt: bindgen libclang-dev clang rustfmt). Set BINDGEN or
# RUSTFMT to use other executables.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
header=${MULTIWORLD_HEADER:-$here/../../../capi/include/multiworld/multiworld.h}
out=${1:-$here/src/bindings.rs}
bindgen=${BINDGEN:-bindgen}
if ! command -v "$bindgen" >/dev/null 2>&1; then
  echo "generate-bindings: '$bindgen' not found (apt-get install bindgen libclang-dev)" >&2
  exit 127
fi
if [[ -z "${RUSTFMT:-}" ]]; then
  RUSTFMT=$(command -v rustfmt || true)
fi
if [[ -z "$RUSTFMT" ]]; then
  echo "generate-bindings: rustfmt not found (apt-get install rustfmt)" >&2
  exit 127
fi
export RUSTFMT
tmp=$(mktemp "${TMPDIR:-/tmp}/mw-bindings-XXXXXX.rs")
trap 'rm -f "$tmp"' EXIT
"$bindgen" "$header" \
  --output "$tmp" \
  --rust-target 1.47 \
  --allowlist-function 'mw_.*' \
  --allowlist-type 'mw_.*' \
  --allowlist-var 'MW_.*' \
  --blocklist-type '__uint64_t' \
  --default-enum-style consts \
  --no-prepend-enum-name \
  --size_t-is-usize \
  --no-doc-comments \
  --rustfmt-bindings \
  -- -I"$(dirname "$(dirname "$header")")"
# The header comment names bindgen's version; keep it, then add where the
# file came from so nobody edits it by hand.
{
  head -n1 "$tmp"
  echo "// Generated from capi/include/multiworld/multiworld.h by"
  echo "// bindings/rust/multiworld-sys/generate-bindings.sh. Do not edit."
  tail -n +2 "$tmp"
} >"$out"
