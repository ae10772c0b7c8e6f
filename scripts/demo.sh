#!/usr/bin/env bash
# The main job: installs what it needs, builds, starts its own redis-server
# on a unix socket in a temp dir, and runs the demo against it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh"
build=${MW_BUILD_DIR:-$root/build}
tmp=$(mktemp -d /tmp/mw-demo-XXXXXX)
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --daemonize yes --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log"
trap 'kill "$(cat "$tmp/redis.pid")" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
MW_REDIS_URL="unix://$tmp/redis.sock" MW_BIND_ADDRESS=127.0.0.1 "$build/examples/hello_world"
