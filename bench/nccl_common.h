// What the nccl suite's parts share: CUDA and raw NCCL checks, device
// buffers holding a known pattern, the rows they report, and the pieces of
// the multi-process parts (where a rank process runs, a barrier in shared
// memory, bounded waits for forked processes).
#pragma once

#include <cuda_runtime.h>
#include <multiworld/multiworld.h>
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/fault_processes.h"

namespace mwbench::gpu {

void cudaCheck(cudaError_t e, const char* what);
void ncclCheck(ncclResult_t r, const char* what);

class DeviceFloats {
 public:
  explicit DeviceFloats(size_t n);
  ~DeviceFloats() { cudaFree(p_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return static_cast<float*>(p_); }

 private:
  void* p_ = nullptr;
};

// Element i of every input: small integers, exact in float32, so a sum over
// a few ranks and a copy are exact too.
float patternAt(size_t i);
void fillPattern(float* dev, size_t count);
// Throws unless dev[i] == scale * patternAt(i) for every i < count.
void verify(const float* dev, size_t count, float scale, const std::string& what);

// One measured operation and size of a comparison; plain data, so that
// it can live in shared memory and reach the suite's process.
struct Row {
  char op[24] = "";
  size_t bytes = 0, iters = 0;
  double ours_s = 0, raw_s = 0;  // per operation, median of the rounds
  double oursGbps() const { return static_cast<double>(bytes) * 8 / ours_s / 1e9; }
  double rawGbps() const { return static_cast<double>(bytes) * 8 / raw_s / 1e9; }
  double ratio() const { return raw_s / ours_s; }  // = ours_gbps / raw_gbps
};

// Rows written by one process, read by the suite's process after it ended.
struct RowTable {
  static constexpr int kMax = 64;
  std::atomic<int> n{0};
  Row rows[kMax];
  void add(const Row& r);
  std::vector<Row> list() const;
};

void printTableHeader();
void printRow(const Row& r);

// Call first in a rank process of a multi-process part, before any CUDA or
// NCCL call; returns the CUDA device of process `index`. With 2+ GPUs:
// index 0 on device 0, every other on device 1 (no communicator of these
// parts joins two processes of index >= 1). With one GPU all share
// `one_gpu`, and each process claims a host of its own
// (tools/lab/nccl_host.h).
int placeProcess(int index, int devices, int one_gpu);
// That placement in words, for the report.
std::string placementText(int processes, int devices, int one_gpu);

// A barrier of the rank processes of one part, in shared memory. `failed`
// is set by a process that gives up, so that the others stop at their next
// barrier instead of waiting out the timeout.
struct ShmBarrier {
  std::atomic<int> arrived{0};
  std::atomic<int> failed{0};
};

class BarrierSide {
 public:
  BarrierSide(ShmBarrier& b, int parties) : b_(b), parties_(parties) {}
  // Throws on a timeout or when another process failed.
  void wait(double timeout_s, const char* what);

 private:
  ShmBarrier& b_;
  int parties_;
  int passed_ = 0;
};

// Spins (then sleeps briefly) until cond() or `timeout_s`; throws naming
// `what` on the timeout, or when *failed becomes non-zero.
void waitFor(const std::function<bool()>& cond, double timeout_s, const std::atomic<int>* failed,
             const std::string& what);

// Waits for every child to end, at most until `deadline_ns` (CLOCK_MONOTONIC).
// When one fails, *failed is set and the others get `grace_ms`; whatever
// still runs then is killed. "" when all exited 0, else what went wrong.
std::string joinAll(const std::vector<Child*>& children, int64_t deadline_ns, std::atomic<int>* failed,
                    int grace_ms);

double secondsSince(int64_t t0_ns);

// What a multiworld NCCL world replaces: a raw communicator of `nranks`
// and a non-blocking stream of its own (like a world's, so that neither
// side is ordered behind the legacy default stream); freed together.
class RawComm {
 public:
  RawComm(int nranks, const ncclUniqueId& id, int rank);
  ~RawComm();
  RawComm(const RawComm&) = delete;
  RawComm& operator=(const RawComm&) = delete;
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }
  // Waits for what was issued on the stream.
  void synchronize() const;

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// The requests one world issued in a timed round, waited for in issue
// order: the world's work runs in order on its stream, so the first wait
// does the waiting and the rest find theirs done. Frees what it still holds.
class IssuedRequests {
 public:
  IssuedRequests() = default;
  IssuedRequests(const IssuedRequests&) = delete;
  IssuedRequests& operator=(const IssuedRequests&) = delete;
  ~IssuedRequests();
  void add(mw_request_t* r) { pending_.push_back(r); }
  // Throws on the first that fails or outlasts `timeout_ms`.
  void waitAll(int timeout_ms);

 private:
  std::vector<mw_request_t*> pending_;
};

}  // namespace mwbench::gpu
