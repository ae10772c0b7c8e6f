#!/usr/bin/env bash
# Builds the installed UCX's libucs again, from Debian's own source package,
# with Debian's configure flags and the patches of this folder (README.md),
# into OUT_DIR/libucs.so.0. Does nothing when OUT_DIR holds a build of the
# same patches for the same package version.
#
# Usage: build_libucs.sh OUT_DIR
# Exit status: 0 built (or already there); 3 the installed UCX is not the
# version the patches are for; other: the build failed (stderr says why).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build_libucs.sh OUT_DIR}
want=1.13.1

installed=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
if [[ $installed != "$want"-* ]]; then
  echo "build_libucs: the installed libucx0 is '${installed:-none}'; the patches are for UCX $want" >&2
  exit 3
fi
stamp="$installed $(cat "$here"/*.patch "$0" | sha256sum | cut -c1-16)"
if [[ -f $out/libucs.so.0 && "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Debian's source package, through a list of our own: the machine's apt
# configuration stays as it is, and no deb-src line is needed there.
mirror=${MW_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
cat >"$work/src.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
apt=(apt-get -qq -o "Dir::Etc::SourceList=$work/src.sources" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
echo "build_libucs: fetching Debian's source of ucx $installed" >&2
"${apt[@]}" update
(cd "$work" && "${apt[@]}" source --download-only "ucx=$installed")
# apt checked the files against the signed index; dpkg-source, which has no
# Debian keyring here, would only warn that it cannot check them again.
dpkg-source -x "$work"/ucx_*.dsc "$work/ucx" >"$work/source.log" 2>&1 || { cat "$work/source.log" >&2; exit 1; }
for p in "$here"/*.patch; do
  patch -s -d "$work/ucx" -p1 <"$p"
done

echo "build_libucs: building libucs (a minute or two)" >&2
cd "$work/ucx"
./autogen.sh >"$work/autogen.log" 2>&1 || { cat "$work/autogen.log" >&2; exit 1; }
# debian/rules' flags, as dh_auto_configure passes them; those that only
# choose transports (verbs, rdmacm, Java) do not change libucs.
eval "$(dpkg-buildflags --export=sh)"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
./configure --prefix=/usr --libdir="/usr/lib/$multiarch" --enable-mt --disable-logging \
  --enable-devel-headers --enable-cma --without-verbs --without-rdmacm --without-java \
  --without-go --disable-static >"$work/configure.log" 2>&1 || { tail -40 "$work/configure.log" >&2; exit 1; }
make -s -C src/ucm -j"$(nproc)" >"$work/make.log" 2>&1 &&
  make -s -C src/ucs -j"$(nproc)" libucs.la >>"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }

mkdir -p "$out"
cp -L src/ucs/.libs/libucs.so.0 "$out/libucs.so.0.new"
mv -f "$out/libucs.so.0.new" "$out/libucs.so.0"
echo "$stamp" >"$out/stamp"
echo "build_libucs: $out/libucs.so.0" >&2
