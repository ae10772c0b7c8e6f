// What the NCCL tests need to know about this host's GPUs, and how they
// place ranks on them. Built into the NCCL test binaries only.
//
// CUDA must not be initialised in a process that later forks workers that
// use it, so the prober asks a forked worker and the parent never touches
// CUDA or the NCCL backend.
#pragma once

#if MW_TEST_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>
#endif

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

#if MW_TEST_HAVE_CUDA
// `n` elements of device memory, freed with the object; filled and read
// through host vectors. get() is null when cudaMalloc failed.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceArray() {
    if (p_) cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  bool ok() const { return p_ != nullptr; }
  bool put(const std::vector<T>& v) const {
    // From pageable memory cudaMemcpy may return before the data lands, and
    // a world's stream does not wait for the default stream: wait here.
    return p_ && v.size() <= n_ && cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess &&
           cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess;
  }
  // The first `n` elements; empty when the copy failed.
  std::vector<T> take(size_t n) const {
    std::vector<T> v(n);
    if (!p_ || cudaMemcpy(v.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) v.clear();
    return v;
  }
  std::vector<T> take() const { return take(n_); }

 private:
  void* p_ = nullptr;
  size_t n_;
};
#endif  // MW_TEST_HAVE_CUDA

}  // namespace mwtest
