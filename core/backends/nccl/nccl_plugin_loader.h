// Finds and loads the NCCL plugin, once per process, on first use: the core
// links neither CUDA nor NCCL, so a host without them runs everything else.
#pragma once

#include <string>

#include "core/backends/nccl/nccl_plugin_abi.h"

namespace mw {

struct NcclSupport {
  const mwn_plugin* plugin = nullptr;  // null when no plugin could be loaded
  int devices = 0;                     // CUDA devices this process sees
  std::string why_not;                 // empty when usable: plugin, driver and a device
  bool usable() const { return why_not.empty(); }
};

// Where it looks, first hit wins: $MW_NCCL_PLUGIN (a path, and then only
// there); next to the module that holds this code (libmultiworld.so);
// the dynamic loader's search path. The answer never changes afterwards.
const NcclSupport& ncclSupport();

}  // namespace mw
