#!/usr/bin/env bash
# The main job: installs what it needs, builds, starts its own redis-server
# on a unix socket in a temp dir, and runs the demo against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
build=${MW_BUILD_DIR:-$root/build}
exec "$root/tests/with_redis.sh" "$build/examples/hello_world"
