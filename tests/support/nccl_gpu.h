// What the NCCL tests need to know about this host's GPUs, and how they
// place ranks on them. Built into the NCCL test binaries only.
//
// CUDA must not be initialised in a process that later forks workers that
// use it, so the prober asks a forked worker and the parent never touches
// CUDA or the NCCL backend.
#pragma once

namespace mwtest {

// What a worker found out about the NCCL backend on this host.
struct NcclProbe {
  int available = 0;     // mw_backend_available(MW_BACKEND_NCCL)
  int devices = 0;       // cudaGetDeviceCount
  int nccl_version = 0;  // ncclGetVersion
  char why[512] = "";    // why world creation fails, when unavailable
};

// Probed once per process, in a forked worker.
const NcclProbe& ncclProbe();

// The CUDA device of `rank` in a multi-process test of `size` ranks: its own
// GPU when there are enough, else device 0 for every rank.
int ncclDeviceForRank(int rank, int size);

// Call in a rank's process before any CUDA or NCCL call. When the ranks
// share a GPU, each claims a host of its own (tools/lab/nccl_host.h).
void ncclPlaceRank(int rank, int size);

}  // namespace mwtest
