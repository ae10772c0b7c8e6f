#!/usr/bin/env bash
# Configures and builds multiworld into ${MW_BUILD_DIR:-build}; extra
# arguments go to cmake (e.g. -DMW_ENABLE_TSAN=ON).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MW_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMW_BUILD_BINDINGS=ON "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
