// NCCL for the nccl suite's raw baseline, opened with dlopen rather than
// linked: mw_bench and the `multiworld` tool (which carries the suites)
// must start, and package, on hosts without NCCL, as the core does.
#pragma once

#include <nccl.h>

#include <string>

namespace mwbench {

struct RawNccl {
  decltype(&::ncclGetVersion) getVersion = nullptr;
  decltype(&::ncclGetErrorString) getErrorString = nullptr;
  decltype(&::ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&::ncclCommInitRank) commInitRank = nullptr;
  decltype(&::ncclCommDestroy) commDestroy = nullptr;
  decltype(&::ncclAllReduce) allReduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) groupStart = nullptr;
  decltype(&::ncclGroupEnd) groupEnd = nullptr;
  std::string path;  // the file the functions came from
  int version = 0;   // NCCL_VERSION_CODE of that library
};

// Prefers the libnccl already in this process (the one the NCCL plugin
// uses, so both sides run the same NCCL), else the one found at build
// time. Throws std::runtime_error naming what failed. Never unloaded.
const RawNccl& rawNccl();

// "2.28.9" from 22809.
std::string ncclVersionText(int code);

}  // namespace mwbench
