#!/usr/bin/env bash
# One step of the Rust binding's checks, as ctest runs them (label `rust`):
#
#   cargo-step.sh bindgen   regenerate multiworld-sys/src/bindings.rs into a
#                           temp file and fail on any difference
#   cargo-step.sh build     cargo build of every target
#   cargo-step.sh test      cargo test (wrap in tests/with_redis.sh)
#
# build, test, clippy and doc take every feature (`cuda` loads the CUDA
# runtime at run time, so it builds without CUDA; its tests skip without a
# GPU).
#   cargo-step.sh example   the pipeline example (wrap in tests/with_redis.sh)
#   cargo-step.sh clippy    cargo clippy --all-targets -- -D warnings
#   cargo-step.sh fmt       cargo fmt --check
#   cargo-step.sh doc       cargo doc, warnings denied
#
# A tool that is not installed makes its step exit 77, which ctest reports
# as skipped (SKIP_RETURN_CODE), with the reason on stdout. Everything runs
# offline: the workspace has no third-party crates.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo=${MW_CARGO:-cargo}
export CARGO_NET_OFFLINE=true

skip() {
  echo "SKIP: $*"
  exit 77
}

step=${1:?usage: cargo-step.sh bindgen|build|test|example|clippy|fmt|doc}
shift
case "$step" in
  bindgen)
    command -v "${BINDGEN:-bindgen}" >/dev/null 2>&1 ||
      skip "bindgen is not installed (apt-get install bindgen libclang-dev clang)"
    command -v "${RUSTFMT:-rustfmt}" >/dev/null 2>&1 ||
      skip "rustfmt is not installed; bindgen needs it to format its output (apt-get install rustfmt)"
    tmp=$(mktemp "${TMPDIR:-/tmp}/mw-bindings-check-XXXXXX.rs")
    trap 'rm -f "$tmp"' EXIT
    multiworld-sys/generate-bindings.sh "$tmp"
    if ! diff -u multiworld-sys/src/bindings.rs "$tmp"; then
      echo "FAIL: multiworld-sys/src/bindings.rs is not what generate-bindings.sh produces from"
      echo "      capi/include/multiworld/multiworld.h; run the script and commit the result."
      exit 1
    fi
    echo "bindings.rs matches a fresh bindgen run ($("${BINDGEN:-bindgen}" --version))"
    ;;
  build)
    exec "$cargo" build --offline --workspace --all-targets --all-features "$@"
    ;;
  test)
    exec "$cargo" test --offline --workspace --all-features "$@"
    ;;
  example)
    exec "$cargo" run --offline -p multiworld --example pipeline "$@"
    ;;
  clippy)
    "$cargo" clippy --version >/dev/null 2>&1 ||
      skip "cargo clippy is not installed (apt-get install rust-clippy, or rustup component add clippy)"
    exec "$cargo" clippy --offline --workspace --all-targets --all-features "$@" -- -D warnings
    ;;
  fmt)
    "$cargo" fmt --version >/dev/null 2>&1 ||
      skip "cargo fmt is not installed (apt-get install rustfmt, or rustup component add rustfmt)"
    exec "$cargo" fmt --all -- --check "$@"
    ;;
  doc)
    export RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings"
    exec "$cargo" doc --offline --workspace --no-deps --all-features "$@"
    ;;
  *)
    echo "cargo-step.sh: unknown step '$step'" >&2
    exit 2
    ;;
esac
