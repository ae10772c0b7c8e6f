#!/usr/bin/env bash
# The main job: installs what it needs, builds, and runs `multiworld demo`
# with the given options. Without MW_REDIS_URL the demo starts its own
# redis-server on a unix socket in a temp dir and stops it at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
build=${MW_BUILD_DIR:-$root/build}
exec "$build/tools/multiworld/multiworld" demo "$@"
