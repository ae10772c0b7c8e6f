# DEB and RPM packages with CPack, one package per install component:
#
#   component  DEB                       RPM                   contents
#   runtime    libmultiworld<major>      multiworld-libs       libmultiworld.so.<major>[.<minor>.<patch>]
#   nccl       libmultiworld<major>-nccl multiworld-nccl       the NCCL plugin (when built)
#   dev        libmultiworld-dev         multiworld-devel      header, libmultiworld.so, .pc, CMake files
#   tools      multiworld-tools          multiworld-tools      the `multiworld` CLI
#   python     python3-multiworld        python3-multiworld    the Python package (with the bindings)
#   java       (reserved, see below)
#
#   cpack -G DEB        # in the build tree
#   cpack -G RPM
#
# Shared-library dependencies are generated: dpkg-shlibdeps for DEB (the
# runtime package gets libgloo0, libhiredis0.14, libstdc++6, ...), rpmbuild's
# AUTOREQPROV for RPM (libgloo.so.0()(64bit), ...). Packages of this project
# depend on each other at the exact version. Included from the top-level
# CMakeLists.txt after every add_subdirectory(), so that every target and
# install rule is known here.

set(MW_PACKAGE_CONTACT "multiworld maintainers <multiworld@localhost>" CACHE STRING
    "Maintainer (DEB) / Packager (RPM) of the packages")
set(MW_PACKAGE_RELEASE "1" CACHE STRING "RPM release number of the packages")
# The NCCL plugin links CUDA's runtime statically and needs libnccl.so.2
# (>= 2.28) at run time; NVIDIA's repositories name it libnccl2 (DEB) and
# libnccl (RPM).
set(MW_NCCL_DEB_DEPENDS "libnccl2 (>= 2.28)"
    CACHE STRING "DEB Depends of the NCCL plugin package, besides the runtime package")
set(MW_NCCL_RPM_REQUIRES "libnccl >= 2.28"
    CACHE STRING "RPM Requires of the NCCL plugin package, besides the runtime package")
mark_as_advanced(MW_PACKAGE_RELEASE MW_NCCL_DEB_DEPENDS MW_NCCL_RPM_REQUIRES)

set(_mw_major ${PROJECT_VERSION_MAJOR})
set(_mw_version ${PROJECT_VERSION})

# ---- which components become packages ----------------------------------------
# Listed explicitly: a component only becomes a package when its targets
# exist (no empty packages), and install rules that other directories may add
# without a component of ours do not leak into the packages.
set(CPACK_COMPONENTS_ALL runtime dev)
if(TARGET multiworld_nccl)
  list(APPEND CPACK_COMPONENTS_ALL nccl)
endif()
if(TARGET multiworld_cli)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()
if(TARGET multiworld_python)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
# ---- Java (reserved, not implemented yet) ---------------------------------------
# When bindings/java installs its jar and libmultiworld_jni.so, it should do
# so with COMPONENT java (jar to ${CMAKE_INSTALL_DATADIR}/java, the JNI
# library to ${CMAKE_INSTALL_LIBDIR}/jni), and this is the place to add:
#   if(TARGET multiworld_java AND TARGET multiworld_jni)
#     list(APPEND CPACK_COMPONENTS_ALL java)
#     set(CPACK_DEBIAN_JAVA_PACKAGE_NAME libmultiworld-java)   # jar + JNI library
#     set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
#     set(CPACK_DEBIAN_JAVA_PACKAGE_DEPENDS "default-jre-headless | java17-runtime-headless")
#     set(CPACK_RPM_JAVA_PACKAGE_NAME multiworld-java)
#     set(CPACK_RPM_JAVA_PACKAGE_REQUIRES "multiworld-libs = ${_mw_version}, java-headless >= 17")
#     # and below, after include(CPack): cpack_add_component(java ... DEPENDS runtime)
#   endif()
# and the packaging tests (packaging/CMakeLists.txt) list it next to the
# C/C++ components they package.

# ---- common ---------------------------------------------------------------------
set(CPACK_PACKAGE_NAME multiworld)
set(CPACK_PACKAGE_VENDOR multiworld)
set(CPACK_PACKAGE_CONTACT "${MW_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VERSION ${_mw_version})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "multiworld gives a process any number of small, fault-isolated process groups (worlds) that are created and destroyed at run time; a failed member breaks only the worlds that contain it. Redis is the control plane, Gloo (TCP) and NCCL carry the data; the library has a stable C ABI.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Packages ship stripped binaries (the build tree keeps its debug info).
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_GROUPING IGNORE)
# `make package_source`: the sources without build trees and VCS data.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build[^/]*/" "/target/" "/\\.gl/" "/\\.whl/")
set(CPACK_GENERATOR DEB)
find_program(MW_RPMBUILD_EXECUTABLE rpmbuild)
mark_as_advanced(MW_RPMBUILD_EXECUTABLE)
if(MW_RPMBUILD_EXECUTABLE)
  list(APPEND CPACK_GENERATOR RPM)
endif()

# ---- DEB ------------------------------------------------------------------------
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The tools link libmultiworld.so.<major>, which is in the runtime package's
# staging directory, next to the tools' own (dpkg-shlibdeps runs there); the
# dependency on it comes from the component dependency below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    "../runtime${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
# DEBIAN/shlibs of the runtime package, so other packages built against it get
# "libmultiworld<major> (>= <version>)" from their dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON) # "<package> (= <version>)"
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libmultiworld${_mw_major})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS redis-server)
if(MW_PATCHED_LIBUCS)
  # Its copy of libucs (cmake/UcxLibucs.cmake) fits only the UCX it was
  # built from.
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libucx0 (= ${MW_PATCHED_LIBUCS_UCX_VERSION})")
endif()

set(CPACK_DEBIAN_NCCL_PACKAGE_NAME libmultiworld${_mw_major}-nccl)
set(CPACK_DEBIAN_NCCL_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_NCCL_PACKAGE_DEPENDS "${MW_NCCL_DEB_DEPENDS}")
# CUDA's runtime is linked in statically; libnccl often comes from NVIDIA's
# tarball rather than a package dpkg-shlibdeps could name, so the
# dependency is the one stated above.
set(CPACK_DEBIAN_NCCL_PACKAGE_SHLIBDEPS OFF)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libmultiworld-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "pkg-config | pkgconf, cmake")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME multiworld-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
# `multiworld demo` starts its own redis-server.
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS redis-server)

# Pure Python over libmultiworld.so.<major> (ctypes): no ELF file, so no
# generated dependencies; torch and numpy are optional.
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-multiworld)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.8)")
set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS "python3-numpy")
set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-torch, redis-server")
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)

# ---- RPM ------------------------------------------------------------------------
set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_RELEASE ${MW_PACKAGE_RELEASE})
set(CPACK_RPM_PACKAGE_AUTOREQPROV ON)
set(CPACK_RPM_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
# Leave the shared directories to the filesystem packages.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    ${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}
    ${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/cmake
    ${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# No /usr/lib/.build-id links: the packages carry no debug info to match.
set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")

set(CPACK_RPM_RUNTIME_PACKAGE_NAME multiworld-libs)
set(CPACK_RPM_RUNTIME_PACKAGE_SUMMARY "${PROJECT_DESCRIPTION} (shared library)")

set(CPACK_RPM_NCCL_PACKAGE_NAME multiworld-nccl)
set(CPACK_RPM_NCCL_PACKAGE_SUMMARY "NCCL plugin of multiworld")
set(CPACK_RPM_NCCL_PACKAGE_REQUIRES "multiworld-libs = ${_mw_version}, ${MW_NCCL_RPM_REQUIRES}")

set(CPACK_RPM_DEV_PACKAGE_NAME multiworld-devel)
set(CPACK_RPM_DEV_PACKAGE_SUMMARY "multiworld header, pkg-config and CMake files")
set(CPACK_RPM_DEV_PACKAGE_REQUIRES "multiworld-libs = ${_mw_version}")

set(CPACK_RPM_TOOLS_PACKAGE_NAME multiworld-tools)
set(CPACK_RPM_TOOLS_PACKAGE_SUMMARY "The multiworld command-line tool (demo, status, bench)")
set(CPACK_RPM_TOOLS_PACKAGE_REQUIRES "multiworld-libs = ${_mw_version}")

set(CPACK_RPM_PYTHON_PACKAGE_NAME python3-multiworld)
set(CPACK_RPM_PYTHON_PACKAGE_SUMMARY "multiworld for Python (PyTorch and NumPy)")
set(CPACK_RPM_PYTHON_PACKAGE_ARCHITECTURE noarch)
set(CPACK_RPM_PYTHON_PACKAGE_REQUIRES "multiworld-libs = ${_mw_version}, python3 >= 3.8")

include(CPack)

cpack_add_component(runtime
  DISPLAY_NAME "multiworld shared library"
  DESCRIPTION "libmultiworld.so.${_mw_major}: the C API, with the Gloo (CPU) backend.")
cpack_add_component(nccl
  DISPLAY_NAME "multiworld NCCL plugin"
  DESCRIPTION "The NCCL backend of multiworld, for GPU buffers (needs NCCL >= 2.28 and a CUDA driver)."
  DEPENDS runtime)
cpack_add_component(dev
  DISPLAY_NAME "multiworld development files"
  DESCRIPTION "The multiworld.h header, libmultiworld.so, multiworld.pc and the CMake package MultiWorld."
  DEPENDS runtime)
cpack_add_component(tools
  DISPLAY_NAME "multiworld command-line tool"
  DESCRIPTION "The `multiworld` tool: demo, status and bench."
  DEPENDS runtime)
cpack_add_component(python
  DISPLAY_NAME "multiworld for Python"
  DESCRIPTION "The Python package multiworld (import multiworld): worlds for torch tensors and numpy arrays, asyncio support, and multiworld.compat for pymultiworld programs."
  DEPENDS runtime)
