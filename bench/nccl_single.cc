// The nccl suite's single part: the same operation sequence through a
// size-1 multiworld NCCL world and through a raw size-1 NCCL communicator,
// in one process on one GPU. What it measures is what multiworld adds on
// top of NCCL: request objects, a CUDA event per operation, completion
// found by mw_wait instead of cudaStreamSynchronize, and a self send/recv
// done as a device copy instead of NCCL's.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/nccl_parts.h"
#include "bench/raw_nccl.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"

namespace mwbench::gpu {
namespace {

using namespace common;
using mwlab::median;

constexpr int kTimeoutMs = 120000;
// Bytes moved per timed round and side by default, so that small sizes get
// many operations and 256 MiB a few.
constexpr double kRoundBytes = static_cast<double>(1ULL << 30);
constexpr size_t kMinIters = 5, kMaxIters = 200;

enum class Op { Allreduce, SendrecvSelf };
constexpr Op kOps[] = {Op::Allreduce, Op::SendrecvSelf};

const char* nameOf(Op op) { return op == Op::Allreduce ? "allreduce" : "sendrecv_self"; }

// One side of the comparison: queues operations, then waits for all of them.
class Side {
 public:
  virtual ~Side() = default;
  virtual const char* name() const = 0;
  virtual void issue(Op op, const float* in, float* out, size_t count) = 0;
  virtual void finish() = 0;
};

class Ours final : public Side {
 public:
  explicit Ours(mw_world_t* world) : world_(world) {}
  const char* name() const override { return "ours"; }

  void issue(Op op, const float* in, float* out, size_t count) override {
    mw_request_t* r = nullptr;
    if (op == Op::Allreduce) {
      mwCheck(mw_allreduce_async(world_, in, out, count, MW_FLOAT32, MW_SUM, &r), "mw_allreduce_async");
      pending_.add(r);
      return;
    }
    mwCheck(mw_send_async(world_, in, count, MW_FLOAT32, 0, &r), "mw_send_async");
    pending_.add(r);
    mwCheck(mw_recv_async(world_, out, count, MW_FLOAT32, 0, &r), "mw_recv_async");
    pending_.add(r);
  }

  void finish() override { pending_.waitAll(kTimeoutMs); }

 private:
  mw_world_t* world_;
  IssuedRequests pending_;
};

// What multiworld replaces: a size-1 communicator and a stream of one's own.
class Raw final : public Side {
 public:
  Raw() : raw_(1, newUniqueId(), 0) {}
  const char* name() const override { return "raw"; }

  void issue(Op op, const float* in, float* out, size_t count) override {
    const RawNccl& nccl = rawNccl();
    ncclComm_t comm = raw_.comm();
    cudaStream_t stream = raw_.stream();
    if (op == Op::Allreduce) {
      ncclCheck(nccl.allReduce(in, out, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
      return;
    }
    ncclCheck(nccl.groupStart(), "ncclGroupStart");
    ncclResult_t s = nccl.send(in, count, ncclFloat32, 0, comm, stream);
    ncclResult_t r = nccl.recv(out, count, ncclFloat32, 0, comm, stream);
    // The group is closed even when a call in it failed.
    ncclResult_t e = nccl.groupEnd();
    ncclCheck(s, "ncclSend");
    ncclCheck(r, "ncclRecv");
    ncclCheck(e, "ncclGroupEnd");
  }

  void finish() override { raw_.synchronize(); }

 private:
  static ncclUniqueId newUniqueId() {
    ncclUniqueId id;
    ncclCheck(rawNccl().getUniqueId(&id), "ncclGetUniqueId");
    return id;
  }
  RawComm raw_;
};

struct Buffers {
  float* in;
  float* out;
  float* check;
};

// Seconds from the first issue to the last completion of `iters` operations.
// The last one writes where no earlier one did, so a right result there
// shows that that very operation ran; a wrong one fails the suite.
double timedRun(Side& side, Op op, const Buffers& b, size_t count, size_t iters) {
  cudaCheck(cudaMemset(b.check, 0xff, count * sizeof(float)), "cudaMemset");
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double t0 = nowSeconds();
  for (size_t k = 0; k < iters; ++k) side.issue(op, b.in, k + 1 == iters ? b.check : b.out, count);
  side.finish();
  const double t = nowSeconds() - t0;
  verify(b.check, count, 1, std::string(side.name()) + " " + nameOf(op));
  return t;
}

// Where the time of a small operation goes: the issuing calls alone, and
// one operation at a time (issue, then wait), in microseconds per op,
// median of `rounds`.
struct SmallOpCost {
  double issue_us = 0, one_at_a_time_us = 0;
};

SmallOpCost smallOpCost(Side& side, const Buffers& b, size_t rounds) {
  constexpr size_t kOps = 200;
  std::vector<double> issue, single;
  for (size_t round = 0; round < rounds; ++round) {
    cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    double t0 = nowSeconds();
    for (size_t k = 0; k < kOps; ++k) side.issue(Op::Allreduce, b.in, b.out, 1);
    issue.push_back((nowSeconds() - t0) / kOps * 1e6);
    side.finish();
    t0 = nowSeconds();
    for (size_t k = 0; k < kOps; ++k) {
      side.issue(Op::Allreduce, b.in, b.out, 1);
      side.finish();
    }
    single.push_back((nowSeconds() - t0) / kOps * 1e6);
  }
  return {median(issue), median(single)};
}

size_t itersFor(const BenchOptions& opt, size_t bytes) {
  if (opt.iters) return opt.iters;
  const double n = kRoundBytes / static_cast<double>(bytes);
  return static_cast<size_t>(std::clamp(n, static_cast<double>(kMinIters), static_cast<double>(kMaxIters)));
}

Row measure(Side& ours, Side& raw, Op op, size_t bytes, const BenchOptions& opt, const Buffers& b) {
  Row row;
  std::snprintf(row.op, sizeof row.op, "%s", nameOf(op));
  row.bytes = bytes;
  row.iters = itersFor(opt, bytes);
  const size_t count = bytes / sizeof(float);
  timedRun(ours, op, b, count, 1);  // warm-up, checked
  timedRun(raw, op, b, count, 1);
  std::vector<double> o, r;
  for (size_t round = 0; round < opt.rounds; ++round) {
    // Odd rounds start with raw, so that a drift within a round favours neither.
    Side& first = round % 2 ? raw : ours;
    Side& second = round % 2 ? ours : raw;
    const double t1 = timedRun(first, op, b, count, row.iters);
    const double t2 = timedRun(second, op, b, count, row.iters);
    (round % 2 ? r : o).push_back(t1);
    (round % 2 ? o : r).push_back(t2);
  }
  const double n = static_cast<double>(row.iters);
  row.ours_s = std::max(median(o), 1e-9) / n;
  row.raw_s = std::max(median(r), 1e-9) / n;
  return row;
}

// A multiworld context with one size-1 NCCL world, torn down in order.
struct OurWorld {
  mw_context_t* ctx = nullptr;
  mw_world_t* world = nullptr;
  ~OurWorld() {
    mw_world_destroy(world);
    mw_context_free(ctx);
  }
};

// Creates the world; "" when it was created, else why NCCL is unusable here
// (MW_ERR_UNSUPPORTED: no GPU, no driver, no plugin). Other errors throw.
std::string createWorld(OurWorld& w, const std::string& redis_url, int device) {
  w.ctx = newContext(redis_url, "mwbench.nccl." + std::to_string(getpid()), kTimeoutMs);
  mw_status_t s = mw_world_create(w.ctx, "nccl-bench", 0, 1, MW_BACKEND_NCCL, device, kTimeoutMs, &w.world);
  if (s == MW_ERR_UNSUPPORTED) return mw_last_error();
  mwCheck(s, "mw_world_create (NCCL)");
  return "";
}

// Why NCCL is unusable when the library already said so; the detail is in
// what world creation reports, which needs Redis.
std::string unavailableBecause(const std::string& redis_url, const std::string& redis_error, int device) {
  const std::string fallback = "mw_backend_available(MW_BACKEND_NCCL) is 0";
  if (redis_url.empty()) return fallback + " (no Redis to ask for details: " + redis_error + ")";
  try {
    OurWorld w;
    std::string why = createWorld(w, redis_url, device);
    return why.empty() ? fallback : why;
  } catch (const std::exception& e) {
    return fallback + " (" + e.what() + ")";
  }
}

// Where CUDA says no before a world is even tried; "" when it has devices.
std::string cudaUnusableBecause(int* count) {
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  }
  return *count > 0 ? "" : "no CUDA device is visible to this process";
}

std::string gpuDescription(int device) {
  cudaDeviceProp prop{};
  cudaCheck(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return std::string(prop.name) + " (device " + std::to_string(device) + ", CUDA driver " +
         std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ")";
}

void copyText(char* dst, size_t size, const std::string& text) { std::snprintf(dst, size, "%s", text.c_str()); }

void measureAll(const BenchOptions& opt, const std::string& url, SingleBoard& board) {
  std::string machine = board.machine;
  cudaCheck(cudaSetDevice(opt.device), "cudaSetDevice");
  // Declared before the world so that they outlive whatever it still has
  // queued when a failure unwinds this.
  std::unique_ptr<DeviceFloats> in, out, check;
  OurWorld world;
  if (std::string why = createWorld(world, url, opt.device); !why.empty()) {
    copyText(board.why, sizeof board.why, why);
    board.outcome = SingleBoard::kSkipped;
    return;
  }
  // After the world exists, so that this finds the libnccl its plugin loaded.
  const RawNccl& nccl = rawNccl();
  machine += ", " + gpuDescription(opt.device) + ", NCCL " + ncclVersionText(nccl.version);
  copyText(board.machine, sizeof board.machine, machine);

  const size_t max_count = sizesOf(opt).back() / sizeof(float);
  in = std::make_unique<DeviceFloats>(max_count);
  out = std::make_unique<DeviceFloats>(max_count);
  check = std::make_unique<DeviceFloats>(max_count);
  fillPattern(in->get(), max_count);
  const Buffers b{in->get(), out->get(), check->get()};
  Ours ours(world.world);
  Raw raw;

  std::printf("# nccl on %s: %s\n", machine.c_str(), opt.command.c_str());
  std::printf("# ours = a size-1 multiworld NCCL world (mw_allreduce_async, or mw_send_async + mw_recv_async to "
              "itself), completion by mw_wait; raw = a size-1 ncclComm of %s on a stream of its own "
              "(ncclAllReduce, or ncclSend + ncclRecv to itself in one group), completion by "
              "cudaStreamSynchronize; float32 sum, device buffers; iters operations issued back to back, "
              "timed from the first issue to the last completion; gbps = 1e9 bit/s of buffer per op; "
              "us = time per op; median of %zu alternating rounds; %s\n",
              nccl.path.c_str(), opt.rounds,
              opt.iters ? ("iterations " + std::to_string(opt.iters)).c_str()
                        : "iterations = clamp(1 GiB / bytes, 5, 200)");
  printTableHeader();
  for (Op op : kOps) {
    for (size_t bytes : sizesOf(opt)) {
      const Row row = measure(ours, raw, op, bytes, opt, b);
      board.rows.add(row);
      printRow(row);
    }
  }
  const SmallOpCost o = smallOpCost(ours, b, opt.rounds), r = smallOpCost(raw, b, opt.rounds);
  std::printf("# size 1, allreduce of 4 B, us per op: issuing 200 back to back: ours %.2f, raw %.2f; "
              "one at a time (issue, then wait): ours %.2f, raw %.2f\n",
              o.issue_us, r.issue_us, o.one_at_a_time_us, r.one_at_a_time_us);
  board.outcome = SingleBoard::kMeasured;
}

}  // namespace

void runSingle(const BenchOptions& opt, const std::string& url, const std::string& redis_error, SingleBoard& b) {
  copyText(b.machine, sizeof b.machine, machineName());
  try {
    if (!mw_backend_available(MW_BACKEND_NCCL)) {
      copyText(b.why, sizeof b.why, unavailableBecause(url, redis_error, opt.device));
      b.outcome = SingleBoard::kSkipped;
      return;
    }
    int devices = 0;
    if (std::string why = cudaUnusableBecause(&devices); !why.empty()) {
      copyText(b.why, sizeof b.why, why);
      b.outcome = SingleBoard::kSkipped;
      return;
    }
    if (opt.device >= devices) {
      std::fprintf(stderr, "mw_bench nccl: --device %d, but %d CUDA device%s visible\n", opt.device, devices,
                   devices == 1 ? " is" : "s are");
      b.outcome = SingleBoard::kBadOptions;
      return;
    }
    if (url.empty()) throw Error(redis_error);
    b.devices = devices;
    measureAll(opt, url, b);
  } catch (const std::exception& e) {
    copyText(b.why, sizeof b.why, e.what());
    b.outcome = SingleBoard::kFailed;
  }
}

}  // namespace mwbench::gpu
