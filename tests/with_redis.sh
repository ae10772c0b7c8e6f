#!/usr/bin/env bash
# Runs a command with MW_REDIS_URL pointing at a private redis-server on a
# unix socket in a temp dir, stopped afterwards.
set -euo pipefail
tmp=$(mktemp -d /tmp/mw-redis-XXXXXX)
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --daemonize yes --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log"
trap 'kill "$(cat "$tmp/redis.pid" 2>/dev/null)" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 200); do [[ -S "$tmp/redis.sock" ]] && redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
MW_REDIS_URL="unix://$tmp/redis.sock" MW_BIND_ADDRESS=127.0.0.1 "$@"
