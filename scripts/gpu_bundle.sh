#!/usr/bin/env bash
# Fills the GPU kit: everything a bare GPU machine (x86-64, root, a CUDA 13
# driver, python3 with PyTorch and pip's NCCL; no apt, no network) lacks to
# run multiworld's GPU checks. Then copy the kit there and run
# `bash .gpu/check.sh` (scripts/gpu/check.sh).
#
#   scripts/gpu_bundle.sh [KIT]     KIT defaults to .gpu (git-ignored)
#   BUILD_DIR=dir                   the CMake build tree (default: build),
#                                   configured with NCCL (MW_HAVE_NCCL)
#
# The kit holds, in at most 60 MiB:
#   bin/       nccl_test, nccl_ops_test, mw_bench, the Go and Rust
#              device-memory test binaries (stripped)
#   lib/       libmultiworld, its NCCL plugin and its copy of libucs
#   cudart/    libcudart.so.13, used only where the machine has none
#   sys/       the runtime packages (redis-server, libhiredis, libucx0 and
#              whatever else ldd names beyond glibc), unpacked from their
#              .debs with dpkg -x; bin/redis-server runs theirs
#   deps/      copies of the packages' libraries that our programs load
#   fallback/  libstdc++ and libgcc_s, used only where the machine's are older
#   python/    the Python package and its CUDA test
#   check.sh   the checks; MANIFEST says what built the kit
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kit=$(realpath -m "${1:-$root/.gpu}")
build=$(realpath -m "${BUILD_DIR:-$root/build}")
limit_mib=60

die() {
  echo "gpu_bundle: $*" >&2
  exit 1
}
[[ -f $build/CMakeCache.txt ]] || die "no build tree at $build (run scripts/build.sh first, or set BUILD_DIR)"
echo "gpu_bundle: building in $build"
cmake --build "$build" -j"$(nproc)" --target multiworld nccl_test nccl_ops_test mw_bench >/dev/null
[[ -f $build/capi/libmultiworld-nccl.so.0 ]] ||
  die "$build has no NCCL plugin: configure it where CUDA and NCCL can be built against"

rm -rf "$kit"
mkdir -p "$kit"/{bin,lib,sys,fallback,python/tests}

# ---- our binaries and libraries ------------------------------------------
strip_into() {  # strip_into FILE DIR [NAME]
  local dest=$2/${3:-$(basename "$1")}
  cp -L "$1" "$dest"
  strip --strip-unneeded "$dest" 2>/dev/null || true
}
for t in nccl_test nccl_ops_test; do strip_into "$build/tests/$t" "$kit/bin"; done
strip_into "$build/bench/mw_bench" "$kit/bin"
capi=$build/capi
for lib in libmultiworld.so.0 libmultiworld-nccl.so.0; do strip_into "$capi/$lib" "$kit/lib"; done
# The copy of libucs with third_party/ucx's fix: lib/ comes first on the
# kit's LD_LIBRARY_PATH, before libucx0's own.
[[ -f $build/ucx-libucs/libucs.so.0 ]] && strip_into "$build/ucx-libucs/libucs.so.0" "$kit/lib"
cudart=$(ldd "$build/tests/nccl_test" | awk '$1 == "libcudart.so.13" {print $3}')
[[ -n $cudart ]] || die "nccl_test does not link libcudart.so.13"
mkdir -p "$kit/cudart"
cp -L "$cudart" "$kit/cudart/"

# ---- the bindings' device-memory tests ------------------------------------
pkgconfig=$build/pkgconfig-build-tree
if command -v go >/dev/null 2>&1; then
  echo "gpu_bundle: building the Go device tests"
  gobuild=$build/bindings/go
  (cd "$root/bindings/go" &&
    env PKG_CONFIG_PATH="$pkgconfig" GOCACHE="$gobuild/gocache" GOPATH="$gobuild/gopath" \
      GOMODCACHE="$gobuild/gopath/pkg/mod" HOME="$gobuild/home" GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off \
      GOTOOLCHAIN=local CGO_ENABLED=1 \
      go test -c -ldflags='-s -w' -o "$kit/bin/go_mw.test" ./mw)
else
  echo "go was not installed where the kit was built" >"$kit/bin/go_mw.test.missing"
fi
if command -v cargo >/dev/null 2>&1; then
  echo "gpu_bundle: building the Rust device tests (--features cuda)"
  exe=$(cd "$root/bindings/rust" &&
    PKG_CONFIG_PATH="$pkgconfig" CARGO_TARGET_DIR="$build/rust-target" CARGO_NET_OFFLINE=true \
      cargo test --offline -p multiworld --features cuda --test device --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
  [[ -x $exe ]] || die "cargo built no device test binary"
  strip_into "$exe" "$kit/bin" rust_device.test
else
  echo "cargo was not installed where the kit was built" >"$kit/bin/rust_device.test.missing"
fi
cp -r "$root/bindings/python/multiworld" "$kit/python/"
find "$kit/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$root/bindings/python/tests/test_cuda.py" "$kit/python/tests/"

# ---- runtime packages ----------------------------------------------------
# Everything ldd resolves outside glibc, the C++ runtime, CUDA, NCCL and our
# own libraries, plus redis-server and UCX's transport modules.
base='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread\.|libdl\.|librt\.|libresolv\.|libstdc\+\+|libgcc_s|libcuda|libnccl|libcudart|libmultiworld)'
owner() {  # the package that installed a file (merged /usr: try both names)
  local f=$1 p
  for p in "$f" "$(realpath "$f")" "/usr${f#/usr}" "${f#/usr}"; do
    dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1 && return
  done
}
declare -A packages=([redis-server]=1 [redis-tools]=1 [libucx0]=1)
while read -r name path; do
  [[ $name =~ $base || $path == "$kit"/* ]] && continue  # ours, already in lib/
  pkg=$(owner "$path")
  [[ -n $pkg ]] && packages[$pkg]=1
done < <(LD_LIBRARY_PATH=$kit/lib ldd "$kit"/bin/* "$kit"/lib/*.so* "$(command -v redis-check-rdb || echo /usr/bin/redis-check-rdb)" \
  2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
echo "gpu_bundle: runtime packages: ${!packages[*]}"
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
if (cd "$debs" && apt-get download "${!packages[@]}" >/dev/null 2>&1); then
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$kit/sys"; done
else
  # No package sources reachable: the same files, from the installed packages.
  echo "gpu_bundle: apt-get download failed; copying the installed packages' files"
  for pkg in "${!packages[@]}"; do
    dpkg -L "$pkg" | while read -r f; do
      [[ -f $f && ! $f =~ ^/usr/share/ ]] && install -D -m "$(stat -c %a "$f")" "$f" "$kit/sys$f"
      [[ -L $f ]] && mkdir -p "$kit/sys$(dirname "$f")" && cp -P "$f" "$kit/sys$f"
    done
  done
fi
rm -rf "$kit"/sys/usr/share "$kit"/sys/etc/init.d "$kit"/sys/lib/systemd "$kit"/sys/usr/lib/systemd

# deps/: copies of just the libraries our programs need from those packages,
# so that what the checks load beside PyTorch is no more than that (the
# packages also hold OpenSSL, zstd, systemd, ... for redis-server).
sysdirs=$(find "$kit/sys" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
mkdir -p "$kit/deps"
{ LD_LIBRARY_PATH=$kit/lib:$sysdirs ldd "$kit"/bin/* "$kit"/lib/*.so* 2>/dev/null || true; } |
  awk -v sys="$kit/sys/" '$2 == "=>" && index($3, sys) == 1 {print $3}' | sort -u |
  while read -r lib; do cp -L "$lib" "$kit/deps/"; done
# redis-server runs with its packages' libraries, and only it.
real_redis=$(cd "$kit/sys" && find . -path '*/bin/redis-server' | head -1 | cut -c2-)
[[ -n $real_redis ]] || die "the redis-server package holds no redis-server"
rel_sysdirs=$(find "$kit/sys" -name '*.so*' -printf '%h\n' | sort -u | sed "s|^$kit/||" | paste -sd' ')
cat >"$kit/bin/redis-server" <<EOF
#!/bin/sh
# redis-server from the kit's packages, with their libraries only.
kit=\$(cd "\$(dirname "\$0")/.." && pwd)
path=
for d in $rel_sysdirs; do path=\$path\$kit/\$d:; done
LD_LIBRARY_PATH=\$path exec "\$kit/sys$real_redis" "\$@"
EOF
chmod +x "$kit/bin/redis-server"

# The C++ runtime the build used, and the newest symbol version it needs.
for lib in libstdc++.so.6 libgcc_s.so.1; do
  cp -L "$(ldconfig -p | awk -v n="$lib" '$1 == n && /x86-64/ {print $NF; exit}')" "$kit/fallback/"
done
# (objdump also meets bin/redis-server, a script, and says so.)
symbols=$(objdump -T "$kit"/bin/* "$kit"/lib/*.so* 2>/dev/null || true)
grep -o 'GLIBCXX_3\.[0-9.]*' <<<"$symbols" | sort -uV | tail -1 >"$kit/fallback/NEEDS"

cp "$root/scripts/gpu/check.sh" "$kit/check.sh"
chmod +x "$kit/check.sh"
{
  echo "$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), built $(date -u +%FT%TZ) on $(uname -n)"
  echo "glibc needed: $(grep -o 'GLIBC_2\.[0-9]*' <<<"$symbols" | sort -uV | tail -1)"
  echo "packages: ${!packages[*]}"
} >"$kit/MANIFEST"

size=$(du -sm "$kit" | cut -f1)
((size <= limit_mib)) || die "the kit is ${size} MiB, over ${limit_mib} MiB: $(du -sm "$kit"/* | sort -rn | head -3 | paste -sd' ')"
echo "gpu_bundle: $kit holds ${size} MiB; run 'bash $(realpath --relative-to="$PWD" "$kit")/check.sh' on a GPU machine"
