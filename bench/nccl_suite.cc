// The nccl suite: the same operation sequence through a size-1 multiworld
// NCCL world and through a raw size-1 NCCL communicator, in one process on
// one GPU (all a one-GPU host can run with NCCL 2.28). What it measures is
// what multiworld adds on top of NCCL: request objects, a CUDA event per
// operation, completion found by mw_wait instead of cudaStreamSynchronize,
// and a self send/recv done as a device copy instead of NCCL's.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/raw_nccl.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::median;

constexpr int kTimeoutMs = 120000;
// Bytes moved per timed round and side by default, so that small sizes get
// many operations and 256 MiB a few.
constexpr double kRoundBytes = static_cast<double>(1ULL << 30);
constexpr size_t kMinIters = 5, kMaxIters = 200;
// Host staging for filling and checking device buffers, so 256 MiB buffers
// do not need 256 MiB host copies.
constexpr size_t kChunkFloats = size_t{4} << 20;

enum class Op { Allreduce, SendrecvSelf };
constexpr Op kOps[] = {Op::Allreduce, Op::SendrecvSelf};

const char* nameOf(Op op) { return op == Op::Allreduce ? "allreduce" : "sendrecv_self"; }

void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}

void ncclCheck(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("raw ") + what + ": " + rawNccl().getErrorString(r));
}

class DeviceFloats {
 public:
  explicit DeviceFloats(size_t n) {
    cudaCheck(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(float)), "cudaMalloc");
  }
  ~DeviceFloats() { cudaFree(p_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return static_cast<float*>(p_); }

 private:
  void* p_ = nullptr;
};

// Element i of every input: small integers, exact in float32, so both a sum
// over one rank and a copy give the input back unchanged.
float patternAt(size_t i) { return static_cast<float>(i % 251 + 1); }

void fillPattern(float* dev, size_t count) {
  std::vector<float> host(std::min(count, kChunkFloats));
  for (size_t at = 0; at < count; at += host.size()) {
    const size_t n = std::min(host.size(), count - at);
    for (size_t i = 0; i < n; ++i) host[i] = patternAt(at + i);
    cudaCheck(cudaMemcpy(dev + at, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
}

void verify(const float* dev, size_t count, const std::string& what) {
  std::vector<float> host(std::min(count, kChunkFloats));
  for (size_t at = 0; at < count; at += host.size()) {
    const size_t n = std::min(host.size(), count - at);
    cudaCheck(cudaMemcpy(host.data(), dev + at, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    for (size_t i = 0; i < n; ++i) {
      if (host[i] != patternAt(at + i)) {
        throw Error(what + ": element " + std::to_string(at + i) + " of " + std::to_string(count) + " is " +
                    std::to_string(host[i]) + ", expected " + std::to_string(patternAt(at + i)));
      }
    }
  }
}

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
  ~Ours() override {
    for (mw_request_t* r : pending_) mw_request_free(r);
  }
  const char* name() const override { return "ours"; }

  void issue(Op op, const float* in, float* out, size_t count) override {
    mw_request_t* r = nullptr;
    if (op == Op::Allreduce) {
      mwCheck(mw_allreduce_async(world_, in, out, count, MW_FLOAT32, MW_SUM, &r), "mw_allreduce_async");
      pending_.push_back(r);
      return;
    }
    mwCheck(mw_send_async(world_, in, count, MW_FLOAT32, 0, &r), "mw_send_async");
    pending_.push_back(r);
    mwCheck(mw_recv_async(world_, out, count, MW_FLOAT32, 0, &r), "mw_recv_async");
    pending_.push_back(r);
  }

  void finish() override {
    // In issue order: one world's work runs in order on its stream, so the
    // first wait does the waiting and the rest find their request done.
    for (size_t i = 0; i < pending_.size(); ++i) {
      mw_request_t* r = pending_[i];
      pending_[i] = nullptr;
      mwWait(r, kTimeoutMs, "ours");
    }
    pending_.clear();
  }

 private:
  mw_world_t* world_;
  std::vector<mw_request_t*> pending_;
};

// What multiworld replaces: a communicator and a stream of one's own.
class Raw final : public Side {
 public:
  Raw() {
    const RawNccl& nccl = rawNccl();
    ncclUniqueId id;
    ncclCheck(nccl.getUniqueId(&id), "ncclGetUniqueId");
    ncclCheck(nccl.commInitRank(&comm_, 1, id, 0), "ncclCommInitRank");
    // Non-blocking like the stream of a multiworld world, so that neither
    // side is ordered behind the legacy default stream.
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~Raw() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    rawNccl().commDestroy(comm_);
  }
  const char* name() const override { return "raw"; }

  void issue(Op op, const float* in, float* out, size_t count) override {
    const RawNccl& nccl = rawNccl();
    if (op == Op::Allreduce) {
      ncclCheck(nccl.allReduce(in, out, count, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
      return;
    }
    ncclCheck(nccl.groupStart(), "ncclGroupStart");
    ncclResult_t s = nccl.send(in, count, ncclFloat32, 0, comm_, stream_);
    ncclResult_t r = nccl.recv(out, count, ncclFloat32, 0, comm_, stream_);
    // The group is closed even when a call in it failed.
    ncclResult_t e = nccl.groupEnd();
    ncclCheck(s, "ncclSend");
    ncclCheck(r, "ncclRecv");
    ncclCheck(e, "ncclGroupEnd");
  }

  void finish() override { cudaCheck(cudaStreamSynchronize(stream_), "raw cudaStreamSynchronize"); }

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
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
  verify(b.check, count, std::string(side.name()) + " " + nameOf(op));
  return t;
}

size_t itersFor(const BenchOptions& opt, size_t bytes) {
  if (opt.iters) return opt.iters;
  const double n = kRoundBytes / static_cast<double>(bytes);
  return static_cast<size_t>(std::clamp(n, static_cast<double>(kMinIters), static_cast<double>(kMaxIters)));
}

struct Row {
  Op op = Op::Allreduce;
  size_t bytes = 0, iters = 0;
  double ours_s = 0, raw_s = 0;  // per operation, median of the rounds
  double oursGbps() const { return static_cast<double>(bytes) * 8 / ours_s / 1e9; }
  double rawGbps() const { return static_cast<double>(bytes) * 8 / raw_s / 1e9; }
  double ratio() const { return raw_s / ours_s; }  // = ours_gbps / raw_gbps
};

Row measure(Side& ours, Side& raw, Op op, size_t bytes, const BenchOptions& opt, const Buffers& b) {
  Row row;
  row.op = op;
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

int skipped(const BenchOptions& opt, const std::string& machine, const std::string& why) {
  std::printf("# nccl: skipped: %s\n", why.c_str());
  std::fflush(stdout);
  if (!opt.json_path.empty() &&
      !writeJson(opt.json_path, "nccl", opt.command, machine, {}, {{"skipped", jsonString(why)}})) {
    return 1;
  }
  return 0;
}

void printRow(const Row& r) {
  std::printf("%-13s %10zu %6zu %10.4g %10.4g %7.3f %10.2f %10.2f\n", nameOf(r.op), r.bytes, r.iters, r.oursGbps(),
              r.rawGbps(), r.ratio(), r.ours_s * 1e6, r.raw_s * 1e6);
  std::fflush(stdout);
}

}  // namespace

int runNcclSuite(const BenchOptions& opt) {
  if (opt.min_bytes == 0 || opt.min_bytes % sizeof(float) != 0 || opt.min_bytes > opt.max_bytes ||
      opt.rounds == 0 || opt.device < 0) {
    std::fprintf(stderr,
                 "mw_bench nccl: need 0 < --min-bytes <= --max-bytes, --min-bytes a multiple of 4 (float32), "
                 "--rounds >= 1 and --device >= 0\n");
    return 2;
  }
  std::string machine = machineName();
  std::vector<Row> rows;
  try {
    mwlab::TempDir dir("mw-bench-");
    // Redis first: its server is forked before anything in this process
    // has touched CUDA.
    std::unique_ptr<SuiteRedis> redis;
    std::string redis_error;
    try {
      redis = std::make_unique<SuiteRedis>(opt.redis_url, dir.path());
    } catch (const std::exception& e) {
      redis_error = e.what();
    }
    const std::string url = redis ? redis->url() : "";
    if (!mw_backend_available(MW_BACKEND_NCCL)) {
      return skipped(opt, machine, unavailableBecause(url, redis_error, opt.device));
    }
    int devices = 0;
    if (std::string why = cudaUnusableBecause(&devices); !why.empty()) return skipped(opt, machine, why);
    if (opt.device >= devices) {
      std::fprintf(stderr, "mw_bench nccl: --device %d, but %d CUDA device%s visible\n", opt.device, devices,
                   devices == 1 ? " is" : "s are");
      return 2;
    }
    if (!redis) throw Error(redis_error);

    cudaCheck(cudaSetDevice(opt.device), "cudaSetDevice");
    // Declared before the world so that they outlive whatever it still has
    // queued when a failure unwinds this.
    std::unique_ptr<DeviceFloats> in, out, check;
    OurWorld world;
    if (std::string why = createWorld(world, url, opt.device); !why.empty()) return skipped(opt, machine, why);
    // After the world exists, so that this finds the libnccl its plugin loaded.
    const RawNccl& nccl = rawNccl();
    machine += ", " + gpuDescription(opt.device) + ", NCCL " + ncclVersionText(nccl.version);

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
    std::printf("%-13s %10s %6s %10s %10s %7s %10s %10s\n", "op", "bytes", "iters", "ours_gbps", "raw_gbps", "ratio",
                "ours_us", "raw_us");
    std::fflush(stdout);
    for (Op op : kOps) {
      for (size_t bytes : sizesOf(opt)) {
        rows.push_back(measure(ours, raw, op, bytes, opt, b));
        printRow(rows.back());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench nccl: %s\nmw_bench nccl: FAILED\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"op", jsonString(nameOf(r.op))},
                    {"bytes", jnum(static_cast<double>(r.bytes))},
                    {"iters", jnum(static_cast<double>(r.iters))},
                    {"ours_gbps", jnum(r.oursGbps())},
                    {"raw_gbps", jnum(r.rawGbps())},
                    {"ratio", jnum(r.ratio())},
                    {"ours_us", jnum(r.ours_s * 1e6)},
                    {"raw_us", jnum(r.raw_s * 1e6)}});
    }
    if (!writeJson(opt.json_path, "nccl", opt.command, machine, jr)) return 1;
  }
  return 0;
}

}  // namespace mwbench
