# The UCX the library links: target mw::ucx, which every target that calls
# UCX links instead of PkgConfig::UCX.
#
# UCX 1.13.1's libucs dispatches stale "missed" async events, which aborts a
# member (third_party/ucx/README.md). Per MW_UCX_PATCHED_LIBUCS, libucs is
# built again from Debian's source with that folder's patches, at configure
# time, into <build>/ucx-libucs: AUTO uses it when it builds and warns when
# it does not, ON requires it, OFF keeps the system's libucs.
#
# Every target linking mw::ucx then names libucs.so.0 first among its needed
# libraries, and its RUNPATH (CMake's, for a library linked by path) finds
# the patched copy before the system's; UCX's own libraries, which need
# libucs.so.0 too, get the copy already loaded. MW_PATCHED_LIBUCS is the
# copy's path (empty when none); installed, it goes to
# <libdir>/multiworld, which libmultiworld's RUNPATH names.
set(MW_UCX_PATCHED_LIBUCS "AUTO" CACHE STRING "Build UCX 1.13.1's libucs with the fixes of third_party/ucx: AUTO, ON or OFF")
string(TOUPPER "${MW_UCX_PATCHED_LIBUCS}" _mw_libucs_mode)
if(NOT _mw_libucs_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MW_UCX_PATCHED_LIBUCS must be AUTO, ON or OFF, not '${MW_UCX_PATCHED_LIBUCS}'")
endif()

set(MW_PATCHED_LIBUCS "")
if(NOT _mw_libucs_mode STREQUAL "OFF")
  set(_mw_libucs_dir ${CMAKE_BINARY_DIR}/ucx-libucs)
  execute_process(
    COMMAND bash ${PROJECT_SOURCE_DIR}/third_party/ucx/build_libucs.sh ${_mw_libucs_dir}
    RESULT_VARIABLE _mw_libucs_result
    ERROR_VARIABLE _mw_libucs_error)
  if(_mw_libucs_result EQUAL 0)
    set(MW_PATCHED_LIBUCS ${_mw_libucs_dir}/libucs.so.0)
    # The Debian version of the UCX it was built from (the stamp's first word).
    file(READ ${_mw_libucs_dir}/stamp _mw_libucs_stamp)
    string(REGEX MATCH "^[^ ]+" MW_PATCHED_LIBUCS_UCX_VERSION "${_mw_libucs_stamp}")
    message(STATUS "UCX: libucs with the fixes of third_party/ucx (${MW_PATCHED_LIBUCS})")
  elseif(_mw_libucs_mode STREQUAL "ON")
    message(FATAL_ERROR "UCX: the patched libucs did not build (MW_UCX_PATCHED_LIBUCS=ON):\n${_mw_libucs_error}")
  elseif(_mw_libucs_result EQUAL 3)
    message(STATUS "UCX: the system's libucs (${_mw_libucs_error})")
  else()
    message(WARNING "UCX: the patched libucs did not build, so the system's is used, "
                    "and a member may abort inside UCX (third_party/ucx/README.md):\n${_mw_libucs_error}")
  endif()
endif()

add_library(mw_ucx INTERFACE)
add_library(mw::ucx ALIAS mw_ucx)
if(MW_PATCHED_LIBUCS)
  # UCX's libraries with the copy in libucs' place: naming the system's
  # libucs as well would leave CMake to order two of them.
  target_link_libraries(mw_ucx INTERFACE ${MW_PATCHED_LIBUCS})
  target_include_directories(mw_ucx INTERFACE ${UCX_INCLUDE_DIRS})
  target_compile_options(mw_ucx INTERFACE ${UCX_CFLAGS_OTHER})
  foreach(_mw_lib IN LISTS UCX_LIBRARIES)
    if(NOT _mw_lib STREQUAL "ucs")
      find_library(_mw_ucx_${_mw_lib} ${_mw_lib} HINTS ${UCX_LIBRARY_DIRS} REQUIRED)
      target_link_libraries(mw_ucx INTERFACE ${_mw_ucx_${_mw_lib}})
    endif()
  endforeach()
else()
  target_link_libraries(mw_ucx INTERFACE PkgConfig::UCX)
endif()

if(MW_PATCHED_LIBUCS AND MW_INSTALL)
  install(FILES ${MW_PATCHED_LIBUCS} DESTINATION ${CMAKE_INSTALL_LIBDIR}/multiworld COMPONENT runtime)
endif()

# An installed `target` that links mw::ucx (directly or through mw_core)
# finds the installed copy from `destination`, its install directory.
function(mw_installed_libucs_rpath target destination)
  if(MW_PATCHED_LIBUCS)
    file(RELATIVE_PATH _rel "${CMAKE_INSTALL_PREFIX}/${destination}"
         "${CMAKE_INSTALL_FULL_LIBDIR}/multiworld")
    set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH "\$ORIGIN/${_rel}")
  endif()
endfunction()
