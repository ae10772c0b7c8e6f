#include "bench/nccl_common.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bench/raw_nccl.h"
#include "bench/suite_common.h"
#include "tools/lab/clock.h"
#include "tools/lab/nccl_host.h"

namespace mwbench::gpu {
namespace {

// Host staging for filling and checking device buffers, so 256 MiB buffers
// do not need 256 MiB host copies.
constexpr size_t kChunkFloats = size_t{4} << 20;

// A waiting process spins this long before it sleeps between looks, so a
// barrier in front of a timed run releases both sides within microseconds.
constexpr int64_t kSpinNs = 2000000;

}  // namespace

void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw common::Error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}

void ncclCheck(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw common::Error(std::string("raw ") + what + ": " + rawNccl().getErrorString(r));
}

DeviceFloats::DeviceFloats(size_t n) {
  cudaCheck(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(float)), "cudaMalloc");
}

float patternAt(size_t i) { return static_cast<float>(i % 251 + 1); }

void fillPattern(float* dev, size_t count) {
  std::vector<float> host(std::min(count, kChunkFloats));
  for (size_t at = 0; at < count; at += host.size()) {
    const size_t n = std::min(host.size(), count - at);
    for (size_t i = 0; i < n; ++i) host[i] = patternAt(at + i);
    cudaCheck(cudaMemcpy(dev + at, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
}

void verify(const float* dev, size_t count, float scale, const std::string& what) {
  std::vector<float> host(std::min(count, kChunkFloats));
  for (size_t at = 0; at < count; at += host.size()) {
    const size_t n = std::min(host.size(), count - at);
    cudaCheck(cudaMemcpy(host.data(), dev + at, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    for (size_t i = 0; i < n; ++i) {
      const float want = scale * patternAt(at + i);
      if (host[i] != want) {
        throw common::Error(what + ": element " + std::to_string(at + i) + " of " + std::to_string(count) + " is " +
                            std::to_string(host[i]) + ", expected " + std::to_string(want));
      }
    }
  }
}

void RowTable::add(const Row& r) {
  const int i = n.load();
  if (i >= kMax) return;
  rows[i] = r;
  n.store(i + 1);
}

std::vector<Row> RowTable::list() const { return std::vector<Row>(rows, rows + std::min(n.load(), kMax)); }

void printTableHeader() {
  std::printf("%-13s %10s %6s %10s %10s %7s %10s %10s\n", "op", "bytes", "iters", "ours_gbps", "raw_gbps", "ratio",
              "ours_us", "raw_us");
  std::fflush(stdout);
}

void printRow(const Row& r) {
  std::printf("%-13s %10zu %6zu %10.4g %10.4g %7.3f %10.2f %10.2f\n", r.op, r.bytes, r.iters, r.oursGbps(),
              r.rawGbps(), r.ratio(), r.ours_s * 1e6, r.raw_s * 1e6);
  std::fflush(stdout);
}

int placeProcess(int index, int devices, int one_gpu) {
  if (devices >= 2) return std::min(index, 1);
  // The parent's pid keeps the names of concurrent runs apart.
  mwlab::claimOwnNcclHost("mw-bench-" + std::to_string(getppid()) + "-rank" + std::to_string(index));
  return one_gpu;
}

std::string placementText(int processes, int devices, int one_gpu) {
  if (devices >= 2) return std::to_string(processes) + " processes, the first on device 0, the others on device 1";
  return std::to_string(processes) + " processes on device " + std::to_string(one_gpu) +
         ", each its own NCCL_HOSTID (NCCL_SOCKET_IFNAME=lo, NCCL_NET=Socket: NCCL's socket transport over "
         "loopback)";
}

void BarrierSide::wait(double timeout_s, const char* what) {
  ++passed_;
  b_.arrived.fetch_add(1);
  const int want = passed_ * parties_;
  waitFor([&] { return b_.arrived.load() >= want; }, timeout_s, &b_.failed,
          std::string("barrier before ") + what);
}

void waitFor(const std::function<bool()>& cond, double timeout_s, const std::atomic<int>* failed,
             const std::string& what) {
  const int64_t t0 = mwlab::monotonicNs();
  const int64_t end = t0 + static_cast<int64_t>(timeout_s * 1e9);
  for (;;) {
    if (cond()) return;
    if (failed && failed->load()) throw common::Error(what + ": another process of this part failed");
    const int64_t now = mwlab::monotonicNs();
    if (now >= end) throw common::Error(what + ": timed out after " + std::to_string(timeout_s) + " s");
    if (now - t0 < kSpinNs) {
      std::this_thread::yield();
    } else {
      usleep(100);
    }
  }
}

std::string joinAll(const std::vector<Child*>& children, int64_t deadline_ns, std::atomic<int>* failed,
                    int grace_ms) {
  std::string why;
  for (;;) {
    bool any_running = false;
    for (Child* c : children) {
      if (c->running()) {
        any_running = true;
      } else if (!c->join(std::chrono::milliseconds(0)) && why.empty()) {  // ended: its exit status
        why = c->describe();
        failed->store(1);
        deadline_ns = std::min(deadline_ns, mwlab::monotonicNs() + int64_t{grace_ms} * 1000000);
      }
    }
    if (!any_running) return why;
    if (mwlab::monotonicNs() >= deadline_ns) break;
    usleep(2000);
  }
  failed->store(1);
  for (Child* c : children) {
    if (c->running()) {
      c->kill9();
      if (why.empty()) why = c->name() + " did not finish in time and was killed";
    }
  }
  return why;
}

double secondsSince(int64_t t0_ns) { return static_cast<double>(mwlab::monotonicNs() - t0_ns) / 1e9; }

RawComm::RawComm(int nranks, const ncclUniqueId& id, int rank) {
  ncclCheck(rawNccl().commInitRank(&comm_, nranks, id, rank), "ncclCommInitRank");
  const cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    rawNccl().commDestroy(comm_);
    cudaCheck(e, "cudaStreamCreateWithFlags");
  }
}

RawComm::~RawComm() {
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
  rawNccl().commDestroy(comm_);
}

void RawComm::synchronize() const { cudaCheck(cudaStreamSynchronize(stream_), "raw cudaStreamSynchronize"); }

IssuedRequests::~IssuedRequests() {
  for (mw_request_t* r : pending_) mw_request_free(r);
}

void IssuedRequests::waitAll(int timeout_ms) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    mw_request_t* r = pending_[i];
    pending_[i] = nullptr;
    common::mwWait(r, timeout_ms, "ours");
  }
  pending_.clear();
}

}  // namespace mwbench::gpu
