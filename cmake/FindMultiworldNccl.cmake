# Finds the CUDA toolkit and NCCL for the NCCL plugin, per MW_WITH_NCCL:
# AUTO builds the plugin when both are found, ON requires them, OFF skips.
# Sets MW_HAVE_NCCL and, when true, the imported target mw::nccl (libnccl
# and its header) next to CMake's CUDA::cudart / CUDA::cudart_static.
set(MW_HAVE_NCCL FALSE)
string(TOUPPER "${MW_WITH_NCCL}" _mw_nccl_mode)
if(NOT _mw_nccl_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MW_WITH_NCCL must be AUTO, ON or OFF, not '${MW_WITH_NCCL}'")
endif()
if(_mw_nccl_mode STREQUAL "OFF")
  message(STATUS "NCCL plugin: off (MW_WITH_NCCL=OFF)")
  return()
endif()

# The sanitizers' runtimes do not mix with CUDA's driver and NCCL's threads;
# those builds check the core.
if(MW_ENABLE_ASAN OR MW_ENABLE_TSAN)
  if(_mw_nccl_mode STREQUAL "ON")
    message(FATAL_ERROR "MW_WITH_NCCL=ON cannot be combined with a sanitizer build")
  endif()
  message(STATUS "NCCL plugin: off in sanitizer builds")
  return()
endif()

find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  find_path(MW_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(MW_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
endif()

if(CUDAToolkit_FOUND AND MW_NCCL_INCLUDE_DIR AND MW_NCCL_LIBRARY)
  file(STRINGS "${MW_NCCL_INCLUDE_DIR}/nccl.h" _mw_nccl_code REGEX "#define NCCL_VERSION_CODE ")
  string(REGEX MATCH "[0-9]+" MW_NCCL_VERSION_CODE "${_mw_nccl_code}")
  # ncclGather, ncclScatter and ncclAlltoAll arrived in NCCL 2.28.
  if(MW_NCCL_VERSION_CODE LESS 22800)
    set(_mw_nccl_missing "NCCL ${MW_NCCL_VERSION_CODE} at ${MW_NCCL_INCLUDE_DIR} is older than 2.28")
  else()
    set(MW_HAVE_NCCL TRUE)
    add_library(mw::nccl UNKNOWN IMPORTED)
    set_target_properties(mw::nccl PROPERTIES
      IMPORTED_LOCATION "${MW_NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${MW_NCCL_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES CUDA::toolkit)
    message(STATUS "NCCL plugin: on (CUDA ${CUDAToolkit_VERSION}, NCCL ${MW_NCCL_VERSION_CODE}, ${MW_NCCL_LIBRARY})")
    return()
  endif()
elseif(NOT CUDAToolkit_FOUND)
  set(_mw_nccl_missing "no CUDA toolkit found")
else()
  set(_mw_nccl_missing "nccl.h or libnccl not found next to CUDA ${CUDAToolkit_VERSION} (set NCCL_HOME)")
endif()

if(_mw_nccl_mode STREQUAL "ON")
  message(FATAL_ERROR "MW_WITH_NCCL=ON but ${_mw_nccl_missing}")
endif()
message(STATUS "NCCL plugin: off (${_mw_nccl_missing})")
