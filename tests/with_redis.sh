#!/usr/bin/env bash
# Runs a command with MW_REDIS_URL pointing at a private redis-server on a
# unix socket in a temp dir, stopped afterwards.
set -euo pipefail
tmp=$(mktemp -d /tmp/mw-redis-XXXXXX)
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --daemonize yes --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log"
# Redis writes its log until it has exited, so the dir goes only after that;
# nothing here may fail the command's own status.
stop_redis() {
  local pid
  pid=$(cat "$tmp/redis.pid" 2>/dev/null || true)
  if [[ -n $pid ]] && kill "$pid" 2>/dev/null; then
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  fi
  rm -rf "$tmp" || true
}
trap stop_redis EXIT
for _ in $(seq 200); do [[ -S "$tmp/redis.sock" ]] && redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
MW_REDIS_URL="unix://$tmp/redis.sock" MW_BIND_ADDRESS=127.0.0.1 "$@"
