#!/usr/bin/env bash
# Installs what building and testing multiworld needs, from Debian 12's apt.
set -euo pipefail
packages=(build-essential cmake pkg-config libgloo-dev libhiredis-dev redis-server
          libgtest-dev iproute2 procps)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
