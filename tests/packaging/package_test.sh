#!/usr/bin/env bash
# Packaging tests (ctest -L packaging), one STEP per ctest test:
#
#   deb_build                  cpack -G DEB of the C/C++ components, unpacked into $MW_WORK/root
#   deb_contents               package names, dependencies and files
#   deb_pkgconfig_consumer     an outside C program built with `pkg-config --cflags --libs multiworld` only
#   deb_find_package_consumer  the same with find_package(MultiWorld) only
#   deb_dlopen                 the dlopen test against the unpacked library
#   deb_python                 the system python3 imports multiworld from the unpacked python3-multiworld
#                              and runs a world (library from the loader's path, then from MW_LIB)
#   rpm                        cpack -G RPM; rpm -qpl / -qpR show the expected files and requirements
#
# The environment comes from packaging/CMakeLists.txt: MW_SOURCE_DIR,
# MW_BUILD_DIR, MW_WORK, MW_COMPONENTS (comma-separated), MW_VERSION, MW_MAJOR,
# MW_LIBDIR, MW_INCLUDEDIR, MW_BINDIR, MW_CMAKEDIR, MW_PKGCONFIGDIR, MW_PYTHONDIR, MW_CMAKE,
# MW_CPACK, CC, MW_EXAMPLE_C, MW_DLOPEN_TEST. Programs built against the
# unpacked packages run with LD_LIBRARY_PATH at its library directory; their
# own dependencies (libgloo0, libhiredis0.14) come from the system.
set -euo pipefail
step=${1:?usage: package_test.sh STEP}

prefix=usr # CPACK_PACKAGING_INSTALL_PREFIX
root=$MW_WORK/root
libdir=$root/$prefix/$MW_LIBDIR
runtime_deb=libmultiworld$MW_MAJOR
components=${MW_COMPONENTS//,/;}
have_tools=0
[[ ",$MW_COMPONENTS," == *,tools,* ]] && have_tools=1
have_nccl=0
[[ ",$MW_COMPONENTS," == *,nccl,* ]] && have_nccl=1
nccl_deb=libmultiworld$MW_MAJOR-nccl
have_python=0
[[ ",$MW_COMPONENTS," == *,python,* ]] && have_python=1
pydir=/$prefix/$MW_PYTHONDIR/multiworld

fail() { echo "FAIL: $*" >&2; exit 1; }
# has FILE-LIST PATH...: every PATH is in FILE-LIST (one path a line)
has() {
  local list=$1 p; shift
  for p in "$@"; do grep -qxF "$p" <<<"$list" || fail "missing $p in:"$'\n'"$list"; done
}
has_not() {
  local list=$1 p; shift
  for p in "$@"; do ! grep -qxF "$p" <<<"$list" || fail "unexpected $p"; done
}
deb_of() { # the .deb of a package name
  local f
  f=$(ls "$MW_WORK/deb/$1"_*.deb 2>/dev/null | head -1)
  [[ -n "$f" ]] || fail "no package $1 in $MW_WORK/deb: $(ls "$MW_WORK/deb")"
  echo "$f"
}
# run_with_redis CMD...: CMD against a private redis-server, with the unpacked library
run_with_redis() {
  LD_LIBRARY_PATH=$libdir "$MW_SOURCE_DIR/tests/with_redis.sh" "$@"
}
# expect_unpacked_lib BIN: BIN loads libmultiworld from the unpacked root
expect_unpacked_lib() {
  local line
  readelf -d "$1" | grep -q "NEEDED.*\[libmultiworld.so.$MW_MAJOR\]" ||
    fail "$1 does not need libmultiworld.so.$MW_MAJOR"
  line=$(LD_LIBRARY_PATH=$libdir ldd "$1" | grep 'libmultiworld\.so') || fail "ldd $1: no libmultiworld"
  [[ "$line" == *"=> $libdir/libmultiworld.so.$MW_MAJOR "* ]] ||
    fail "$1 loads libmultiworld from elsewhere: $line"
}

case $step in
  deb_build)
    rm -rf "$MW_WORK"
    mkdir -p "$MW_WORK/deb" "$root"
    (cd "$MW_BUILD_DIR" &&
      "$MW_CPACK" --config CPackConfig.cmake -G DEB -B "$MW_WORK/deb" \
        -D "CPACK_COMPONENTS_ALL=$components") >"$MW_WORK/cpack-deb.log" 2>&1 ||
      { cat "$MW_WORK/cpack-deb.log"; fail "cpack -G DEB"; }
    grep -E '^CPack: - package: ' "$MW_WORK/cpack-deb.log" || true
    for deb in "$MW_WORK"/deb/*.deb; do
      dpkg-deb -x "$deb" "$root"
    done
    echo "unpacked into $root:"
    (cd "$root" && find . -type f -o -type l | sort)
    ;;

  deb_contents)
    v=$MW_VERSION
    expected=("$runtime_deb" libmultiworld-dev)
    ((have_tools)) && expected+=(multiworld-tools)
    ((have_nccl)) && expected+=("$nccl_deb")
    ((have_python)) && expected+=(python3-multiworld)
    n=$(ls "$MW_WORK"/deb/*.deb | wc -l)
    ((n == ${#expected[@]})) || fail "expected ${#expected[@]} packages (${expected[*]}), got: $(ls "$MW_WORK/deb")"

    deb=$(deb_of "$runtime_deb")
    files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
    echo "$(basename "$deb"):"$'\n'"$files"
    has "$files" "/$prefix/$MW_LIBDIR/libmultiworld.so.$MW_MAJOR" "/$prefix/$MW_LIBDIR/libmultiworld.so.$v"
    has_not "$files" "/$prefix/$MW_LIBDIR/libmultiworld.so"
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "Depends: $depends"
    [[ "$depends" == *libgloo0* ]] || fail "$runtime_deb does not depend on libgloo0"
    [[ "$depends" == *libhiredis* ]] || fail "$runtime_deb does not depend on libhiredis"
    if [[ -n ${MW_PATCHED_LIBUCS_UCX_VERSION:-} ]]; then
      # The copy of libucs with the fixes of third_party/ucx, found through
      # the library's RUNPATH, and the exact UCX it fits.
      has "$files" "/$prefix/$MW_LIBDIR/multiworld/libucs.so.0"
      [[ "$depends" == *"libucx0 (= $MW_PATCHED_LIBUCS_UCX_VERSION)"* ]] ||
        fail "$runtime_deb does not depend on libucx0 (= $MW_PATCHED_LIBUCS_UCX_VERSION)"
      line=$(LD_LIBRARY_PATH=$libdir ldd "$libdir/libmultiworld.so.$MW_MAJOR" | grep 'libucs\.so') ||
        fail "ldd libmultiworld: no libucs"
      [[ "$line" == *"=> $libdir/multiworld/libucs.so.0 "* ]] || fail "the unpacked library loads libucs from elsewhere: $line"
    fi
    [[ "$(dpkg-deb -f "$deb" Version)" == "$v" ]] || fail "version of $runtime_deb"
    mkdir -p "$MW_WORK/control" && dpkg-deb -e "$deb" "$MW_WORK/control/runtime"
    grep -qx "libmultiworld $MW_MAJOR $runtime_deb (>= $v)" "$MW_WORK/control/runtime/shlibs" ||
      fail "shlibs of $runtime_deb: $(cat "$MW_WORK/control/runtime/shlibs" 2>&1)"

    deb=$(deb_of libmultiworld-dev)
    files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
    echo "$(basename "$deb"):"$'\n'"$files"
    has "$files" "/$prefix/$MW_INCLUDEDIR/multiworld/multiworld.h" \
      "/$prefix/$MW_LIBDIR/libmultiworld.so" \
      "/$prefix/$MW_PKGCONFIGDIR/multiworld.pc" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldConfig.cmake" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldConfigVersion.cmake" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldTargets.cmake"
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "Depends: $depends"
    [[ "$depends" == *"$runtime_deb (= $v)"* ]] || fail "libmultiworld-dev does not depend on $runtime_deb (= $v)"

    if ((have_tools)); then
      deb=$(deb_of multiworld-tools)
      files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
      echo "$(basename "$deb"):"$'\n'"$files"
      has "$files" "/$prefix/$MW_BINDIR/multiworld"
      depends=$(dpkg-deb -f "$deb" Depends)
      echo "Depends: $depends"
      [[ "$depends" == *"$runtime_deb (= $v)"* ]] || fail "multiworld-tools does not depend on $runtime_deb (= $v)"
      [[ "$depends" == *libhiredis* ]] || fail "multiworld-tools: no generated shared-library dependencies"
      LD_LIBRARY_PATH=$libdir "$root/$prefix/$MW_BINDIR/multiworld" --help >/dev/null ||
        fail "the unpacked multiworld --help"
    fi
    if ((have_nccl)); then
      deb=$(deb_of "$nccl_deb")
      files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
      echo "$(basename "$deb"):"$'\n'"$files"
      has "$files" "/$prefix/$MW_LIBDIR/libmultiworld-nccl.so.$MW_MAJOR" "/$prefix/$MW_LIBDIR/libmultiworld-nccl.so.$v"
      has_not "$files" "/$prefix/$MW_LIBDIR/libmultiworld-nccl.so"
      depends=$(dpkg-deb -f "$deb" Depends)
      echo "Depends: $depends"
      [[ "$depends" == *"$runtime_deb (= $v)"* ]] || fail "$nccl_deb does not depend on $runtime_deb (= $v)"
      [[ "$depends" == *libnccl2* ]] || fail "$nccl_deb does not depend on libnccl2"
      # The runtime package stays free of CUDA and NCCL.
      depends=$(dpkg-deb -f "$(deb_of "$runtime_deb")" Depends)
      ! grep -Eiq 'cuda|nccl' <<<"$depends" || fail "$runtime_deb depends on CUDA or NCCL: $depends"
    fi
    if ((have_python)); then
      deb=$(deb_of python3-multiworld)
      files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
      echo "$(basename "$deb"):"$'\n'"$files"
      has "$files" "$pydir/__init__.py" "$pydir/_capi.py" "$pydir/compat.py"
      has_not "$files" "$pydir/__pycache__/"
      [[ "$(dpkg-deb -f "$deb" Architecture)" == all ]] || fail "python3-multiworld is not Architecture: all"
      depends=$(dpkg-deb -f "$deb" Depends)
      echo "Depends: $depends"
      [[ "$depends" == *"$runtime_deb (= $v)"* ]] || fail "python3-multiworld does not depend on $runtime_deb (= $v)"
      [[ "$depends" == *python3* ]] || fail "python3-multiworld does not depend on python3"
    fi
    echo "OK: deb packages as expected"
    ;;

  deb_pkgconfig_consumer)
    # pkg-config sees only the unpacked tree (no system or build-tree .pc).
    export PKG_CONFIG_LIBDIR=$root/$prefix/$MW_PKGCONFIGDIR PKG_CONFIG_PATH=
    flags=$(pkg-config --cflags --libs multiworld)
    echo "pkg-config --cflags --libs multiworld: $flags"
    [[ "$(pkg-config --modversion multiworld)" == "$MW_VERSION" ]] || fail "pkg-config --modversion"
    out=$MW_WORK/pkgconfig-consumer
    mkdir -p "$out"
    # shellcheck disable=SC2086
    "${CC:-cc}" -std=c11 -Wall -Wextra -o "$out/hello" "$MW_EXAMPLE_C" $flags
    expect_unpacked_lib "$out/hello"
    run_with_redis "$out/hello"
    echo "OK: built and ran with pkg-config alone"
    ;;

  deb_find_package_consumer)
    out=$MW_WORK/cmake-consumer
    rm -rf "$out"
    common=(-DCMAKE_PREFIX_PATH="$root/$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
            -DMW_EXPECT_PREFIX="$root" -DMW_EXAMPLE_C="$MW_EXAMPLE_C")
    "$MW_CMAKE" -S "$MW_SOURCE_DIR/tests/packaging/consumer" -B "$out" \
      "${common[@]}" -DMW_REQUEST_VERSION="$MW_MAJOR.0"
    "$MW_CMAKE" --build "$out"
    expect_unpacked_lib "$out/hello"
    run_with_redis "$out/hello"
    # SameMajorVersion: the next major version must not be accepted.
    rc=0
    "$MW_CMAKE" -S "$MW_SOURCE_DIR/tests/packaging/consumer" -B "$out-next-major" \
      "${common[@]}" -DMW_REQUEST_VERSION="$((MW_MAJOR + 1)).0" >"$out-next-major.log" 2>&1 || rc=$?
    ((rc != 0)) || fail "find_package(MultiWorld $((MW_MAJOR + 1)).0) accepted $MW_VERSION"
    grep -q "compatible with requested version" "$out-next-major.log" || { cat "$out-next-major.log"; fail "unexpected error"; }
    echo "OK: built and ran with find_package(MultiWorld) alone; $((MW_MAJOR + 1)).0 refused"
    ;;

  deb_dlopen)
    LD_LIBRARY_PATH=$libdir "$MW_DLOPEN_TEST" | tee "$MW_WORK/dlopen.log"
    grep -q "from $libdir/libmultiworld.so.$MW_MAJOR\$" "$MW_WORK/dlopen.log" ||
      fail "the dlopen test did not load the unpacked library"
    ;;

  deb_python)
    ((have_python)) || { echo "no python component in this build"; exit 0; }
    # What a program does after installing python3-multiworld: import it with
    # the system interpreter and run a one-rank world.
    check='import multiworld as mw, numpy as np, sys
with mw.Context() as ctx, ctx.create_world("pkg", 0, 1, backend="gloo", timeout=10) as w:
    a = np.arange(4, dtype=np.float32)
    assert w.all_reduce(a).wait(10) is a and a.tolist() == [0, 1, 2, 3]
print(mw.library_path(), mw.__file__)'
    py=/usr/bin/python3
    # the loader's path (as with libmultiworld0 installed)
    out=$(PYTHONPATH=$root/$prefix/$MW_PYTHONDIR run_with_redis "$py" -c "$check")
    echo "$out"
    [[ "$out" == "libmultiworld.so.$MW_MAJOR $root$pydir/__init__.py" ]] || fail "unexpected: $out"
    grep -q "$libdir/libmultiworld.so.$MW_MAJOR" <(PYTHONPATH=$root/$prefix/$MW_PYTHONDIR LD_LIBRARY_PATH=$libdir \
      "$py" -c 'import multiworld; print(open("/proc/self/maps").read())') || fail "did not load $libdir's library"
    # MW_LIB names the library
    out=$(PYTHONPATH=$root/$prefix/$MW_PYTHONDIR MW_LIB=$libdir/libmultiworld.so.$MW_MAJOR \
      "$MW_SOURCE_DIR/tests/with_redis.sh" "$py" -c "$check")
    echo "$out"
    [[ "$out" == "$libdir/libmultiworld.so.$MW_MAJOR "* ]] || fail "MW_LIB not used: $out"
    # without either, the import says what is missing (unless one is installed)
    if ldconfig -p | grep -q "libmultiworld\.so\.$MW_MAJOR "; then
      echo "OK: python3 imports multiworld from the package"
      exit 0
    fi
    rc=0
    err=$(PYTHONPATH=$root/$prefix/$MW_PYTHONDIR "$py" -c 'import multiworld' 2>&1) || rc=$?
    ((rc != 0)) && grep -q "install libmultiworld$MW_MAJOR, or set MW_LIB" <<<"$err" || fail "import without a library: $err"
    echo "OK: python3 imports multiworld from the package"
    ;;

  rpm)
    command -v rpmbuild >/dev/null || fail "rpmbuild not found: apt-get install rpm (scripts/packages/packaging.list)"
    out=$MW_WORK/rpm
    rm -rf "$out" && mkdir -p "$out"
    (cd "$MW_BUILD_DIR" &&
      "$MW_CPACK" --config CPackConfig.cmake -G RPM -B "$out" \
        -D "CPACK_COMPONENTS_ALL=$components") >"$out/cpack-rpm.log" 2>&1 ||
      { cat "$out/cpack-rpm.log"; fail "cpack -G RPM"; }
    v=$MW_VERSION
    rpm_of() {
      local f
      f=$(ls "$out/$1-$v"-*.rpm 2>/dev/null | head -1)
      [[ -n "$f" ]] || fail "no $1 rpm in $out: $(ls "$out")"
      echo "$f"
    }
    expected=(multiworld-libs multiworld-devel)
    ((have_tools)) && expected+=(multiworld-tools)
    ((have_nccl)) && expected+=(multiworld-nccl)
    ((have_python)) && expected+=(python3-multiworld)
    n=$(ls "$out"/*.rpm | wc -l)
    ((n == ${#expected[@]})) || fail "expected ${#expected[@]} rpms (${expected[*]}), got: $(ls "$out")"

    f=$(rpm_of multiworld-libs)
    files=$(rpm -qpl "$f")
    echo "rpm -qpl $(basename "$f"):"$'\n'"$files"
    has "$files" "/$prefix/$MW_LIBDIR/libmultiworld.so.$MW_MAJOR" "/$prefix/$MW_LIBDIR/libmultiworld.so.$v"
    has_not "$files" "/$prefix/$MW_LIBDIR/libmultiworld.so"
    reqs=$(rpm -qpR "$f")
    grep -q '^libgloo\.so\.0()' <<<"$reqs" || fail "multiworld-libs does not require libgloo.so.0: $reqs"
    grep -q '^libhiredis\.so' <<<"$reqs" || fail "multiworld-libs does not require libhiredis: $reqs"
    rpm -qp --provides "$f" | grep -q "^libmultiworld\.so\.$MW_MAJOR()" || fail "multiworld-libs does not provide libmultiworld.so.$MW_MAJOR"

    f=$(rpm_of multiworld-devel)
    files=$(rpm -qpl "$f")
    echo "rpm -qpl $(basename "$f"):"$'\n'"$files"
    has "$files" "/$prefix/$MW_INCLUDEDIR/multiworld/multiworld.h" \
      "/$prefix/$MW_LIBDIR/libmultiworld.so" \
      "/$prefix/$MW_PKGCONFIGDIR/multiworld.pc" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldConfig.cmake" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldConfigVersion.cmake" \
      "/$prefix/$MW_CMAKEDIR/MultiWorldTargets.cmake"
    rpm -qpR "$f" | grep -q "^multiworld-libs = $v" || fail "multiworld-devel does not require multiworld-libs = $v"

    if ((have_tools)); then
      f=$(rpm_of multiworld-tools)
      files=$(rpm -qpl "$f")
      echo "rpm -qpl $(basename "$f"):"$'\n'"$files"
      has "$files" "/$prefix/$MW_BINDIR/multiworld"
      rpm -qpR "$f" | grep -q "^libmultiworld\.so\.$MW_MAJOR()" ||
        fail "multiworld-tools does not require libmultiworld.so.$MW_MAJOR"
    fi
    if ((have_nccl)); then
      f=$(rpm_of multiworld-nccl)
      files=$(rpm -qpl "$f")
      echo "rpm -qpl $(basename "$f"):"$'\n'"$files"
      has "$files" "/$prefix/$MW_LIBDIR/libmultiworld-nccl.so.$MW_MAJOR"
      reqs=$(rpm -qpR "$f")
      grep -q "^multiworld-libs = $v" <<<"$reqs" || fail "multiworld-nccl does not require multiworld-libs = $v: $reqs"
      grep -q '^libnccl' <<<"$reqs" || fail "multiworld-nccl does not require libnccl: $reqs"
    fi
    if ((have_python)); then
      f=$(ls "$out"/python3-multiworld-"$v"-*.noarch.rpm 2>/dev/null | head -1)
      [[ -n "$f" ]] || fail "no noarch python3-multiworld rpm in $out: $(ls "$out")"
      files=$(rpm -qpl "$f")
      echo "rpm -qpl $(basename "$f"):"$'\n'"$files"
      has "$files" "$pydir/__init__.py" "$pydir/_capi.py"
      rpm -qpR "$f" | grep -q "^multiworld-libs = $v" || fail "python3-multiworld does not require multiworld-libs = $v"
    fi
    echo "OK: rpm packages as expected"
    ;;

  *)
    fail "unknown step $step"
    ;;
esac
