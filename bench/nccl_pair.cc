// The nccl suite's pair part: two ranks, each its own process, run the
// same operation sequence through a 2-rank multiworld NCCL world and
// through a raw 2-rank ncclComm made in the same processes, so that both
// see the same placement, environment and transport. Rounds alternate
// between the two; a timed run starts on both ranks after a barrier in
// shared memory and lasts until the slower rank saw its last completion.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/nccl_parts.h"
#include "bench/raw_nccl.h"
#include "bench/suite_common.h"
#include "tools/lab/clock.h"
#include "tools/lab/shared.h"
#include "tools/lab/stats.h"

namespace mwbench::gpu {
namespace {

using namespace common;

constexpr int kCreateMs = 60000;
constexpr int kWaitMs = 60000;
// The longest step between two barriers: world and communicator setup.
constexpr double kStepS = 60;
// How long a calibrated timed run lasts, and its bounds in operations.
constexpr double kRunS = 0.5;
constexpr size_t kMinIters = 4, kMaxIters = 400;

enum class Op { Allreduce, Broadcast, P2p };
constexpr Op kOps[] = {Op::Allreduce, Op::Broadcast, Op::P2p};

const char* nameOf(Op op) {
  return op == Op::Allreduce ? "allreduce" : op == Op::Broadcast ? "broadcast" : "p2p";
}

struct Board {
  ShmBarrier sync;
  ncclUniqueId id{};
  // Rank 0's word for the next op and size (go: 1 measure, 0 stop on the
  // budget) and its iterations per timed run; read by rank 1 after the
  // barrier that follows the write.
  std::atomic<int> go{0};
  std::atomic<long> iters{0};
  std::atomic<int> stopped{0};
  double t[2] = {0, 0};  // each rank's seconds for the last timed run
  RowTable rows;
};

// One side of the comparison on one rank: queues operations, then waits
// for all of them. Rank 0 is the root of broadcast and the sender of p2p.
class Side {
 public:
  virtual ~Side() = default;
  virtual const char* name() const = 0;
  virtual void issue(Op op, float* in, float* out, size_t count) = 0;
  virtual void finish() = 0;
};

class Ours final : public Side {
 public:
  Ours(mw_world_t* world, int rank) : world_(world), rank_(rank) {}
  const char* name() const override { return "ours"; }

  void issue(Op op, float* in, float* out, size_t count) override {
    mw_request_t* r = nullptr;
    if (op == Op::Allreduce) {
      mwCheck(mw_allreduce_async(world_, in, out, count, MW_FLOAT32, MW_SUM, &r), "mw_allreduce_async");
    } else if (op == Op::Broadcast) {
      mwCheck(mw_broadcast_async(world_, rank_ == 0 ? in : out, count, MW_FLOAT32, 0, &r), "mw_broadcast_async");
    } else if (rank_ == 0) {
      mwCheck(mw_send_async(world_, in, count, MW_FLOAT32, 1, &r), "mw_send_async");
    } else {
      mwCheck(mw_recv_async(world_, out, count, MW_FLOAT32, 0, &r), "mw_recv_async");
    }
    pending_.add(r);
  }

  void finish() override { pending_.waitAll(kWaitMs); }

 private:
  mw_world_t* world_;
  int rank_;
  IssuedRequests pending_;
};

class Raw final : public Side {
 public:
  Raw(const ncclUniqueId& id, int rank) : raw_(2, id, rank), rank_(rank) {}
  const char* name() const override { return "raw"; }

  void issue(Op op, float* in, float* out, size_t count) override {
    const RawNccl& nccl = rawNccl();
    ncclComm_t comm = raw_.comm();
    cudaStream_t stream = raw_.stream();
    if (op == Op::Allreduce) {
      ncclCheck(nccl.allReduce(in, out, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
    } else if (op == Op::Broadcast) {
      float* buf = rank_ == 0 ? in : out;  // in place, as ours
      ncclCheck(nccl.broadcast(buf, buf, count, ncclFloat32, 0, comm, stream), "ncclBroadcast");
    } else if (rank_ == 0) {
      ncclCheck(nccl.send(in, count, ncclFloat32, 1, comm, stream), "ncclSend");
    } else {
      ncclCheck(nccl.recv(out, count, ncclFloat32, 0, comm, stream), "ncclRecv");
    }
  }

  void finish() override { raw_.synchronize(); }

 private:
  RawComm raw_;
  int rank_;
};

// One rank's view of the part.
struct Rank {
  int rank;
  Board& b;
  BarrierSide bar;
  Side& ours;
  Side& raw;
  float* in;
  float* out;
};

// The slower rank's seconds for `iters` operations issued back to back
// (rank 0 uses it; rank 1 reads the same times).
double jointRun(Rank& r, Side& side, Op op, size_t count, size_t iters) {
  r.bar.wait(kStepS, "a timed run");
  const int64_t t0 = mwlab::monotonicNs();
  for (size_t k = 0; k < iters; ++k) side.issue(op, r.in, r.out, count);
  side.finish();
  r.b.t[r.rank] = secondsSince(t0);
  r.bar.wait(kStepS, "collecting run times");
  return std::max(r.b.t[0], r.b.t[1]);
}

// One operation from a known state, then its result where it lands: the
// sum of both ranks' patterns, or rank 0's pattern on rank 1.
void checkedRun(Rank& r, Side& side, Op op, size_t count) {
  cudaCheck(cudaMemset(r.out, 0xff, count * sizeof(float)), "cudaMemset");
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  r.bar.wait(kStepS, "a checked run");
  side.issue(op, r.in, r.out, count);
  side.finish();
  const std::string what = std::string(side.name()) + " " + nameOf(op) + " of " +
                           std::to_string(count * sizeof(float)) + " bytes on rank " + std::to_string(r.rank);
  if (op == Op::Allreduce) {
    verify(r.out, count, 2, what);
  } else if (r.rank == 1) {
    verify(r.out, count, 1, what);
  }
}

Row measure(Rank& r, Op op, size_t bytes, const PairSetup& s) {
  const size_t count = bytes / sizeof(float);
  checkedRun(r, r.ours, op, count);
  checkedRun(r, r.raw, op, count);
  if (r.rank == 0) r.b.iters = static_cast<long>(s.iters);
  if (!s.iters) {
    const double per_op = std::max(jointRun(r, r.raw, op, count, 2) / 2, 1e-7);
    if (r.rank == 0) {
      r.b.iters = static_cast<long>(std::clamp(std::ceil(kRunS / per_op), static_cast<double>(kMinIters),
                                               static_cast<double>(kMaxIters)));
    }
  }
  r.bar.wait(kStepS, "agreeing on iterations");
  Row row;
  std::snprintf(row.op, sizeof row.op, "%s", nameOf(op));
  row.bytes = bytes;
  row.iters = static_cast<size_t>(r.b.iters.load());
  std::vector<double> o, w;
  for (size_t round = 0; round < s.rounds; ++round) {
    // Odd rounds start with raw, so that a drift within a round favours neither.
    const bool raw_first = round % 2;
    const double t1 = jointRun(r, raw_first ? r.raw : r.ours, op, count, row.iters);
    const double t2 = jointRun(r, raw_first ? r.ours : r.raw, op, count, row.iters);
    (raw_first ? w : o).push_back(t1);
    (raw_first ? o : w).push_back(t2);
  }
  const double n = static_cast<double>(row.iters);
  row.ours_s = std::max(mwlab::median(o), 1e-9) / n;
  row.raw_s = std::max(mwlab::median(w), 1e-9) / n;
  return row;
}

// A context and its one world, torn down in order.
struct OurWorld {
  mw_context_t* ctx = nullptr;
  mw_world_t* world = nullptr;
  ~OurWorld() {
    mw_world_destroy(world);
    mw_context_free(ctx);
  }
};

void say(const std::string& line) {
  std::fprintf(stderr, "mw_bench nccl: 2 ranks: %s\n", line.c_str());
  std::fflush(stderr);
}

int rankBody(int rank, const PairSetup& s, Board& b) {
  const int device = placeProcess(rank, s.devices, s.one_gpu);
  const int64_t t0 = mwlab::monotonicNs();
  cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  const size_t max_count = *std::max_element(s.sizes.begin(), s.sizes.end()) / sizeof(float);
  // Declared before the world and the communicator, so that they outlive
  // whatever those still have queued when a failure unwinds this.
  DeviceFloats in(max_count), out(max_count);
  fillPattern(in.get(), max_count);
  OurWorld w;
  w.ctx = newContext(s.redis_url, "mwbench.nccl." + std::to_string(getppid()) + ".pair", kWaitMs);
  mwCheck(mw_world_create(w.ctx, "pair", rank, 2, MW_BACKEND_NCCL, device, kCreateMs, &w.world),
          "mw_world_create (NCCL, 2 ranks)");
  // After the world exists, so that this is the libnccl its plugin loaded.
  if (rank == 0) ncclCheck(rawNccl().getUniqueId(&b.id), "ncclGetUniqueId");
  BarrierSide bar(b.sync, 2);
  bar.wait(kStepS, "raw NCCL init");
  if (rank == 0) say("world created; raw ncclCommInitRank");
  Raw raw(b.id, rank);
  Ours ours(w.world, rank);
  Rank r{rank, b, bar, ours, raw, in.get(), out.get()};
  for (Op op : kOps) {
    for (size_t bytes : s.sizes) {
      if (rank == 0) b.go = secondsSince(t0) < s.budget_s ? 1 : 0;
      r.bar.wait(kStepS, "the next op and size");
      if (!b.go) {
        if (rank == 0) b.stopped = 1;
        return 0;
      }
      const Row row = measure(r, op, bytes, s);
      if (rank == 0) {
        b.rows.add(row);
        char line[200];
        std::snprintf(line, sizeof line, "%-9s %10zu bytes x %3zu: ours %8.3f gbps, raw %8.3f gbps, ratio %.3f",
                      row.op, row.bytes, row.iters, row.oursGbps(), row.rawGbps(), row.ratio());
        say(line);
      }
    }
  }
  return 0;
}

int rankMain(int rank, const PairSetup& s, Board& b) {
  try {
    return rankBody(rank, s, b);
  } catch (...) {
    b.sync.failed = 1;  // the other rank stops at its next barrier
    throw;
  }
}

}  // namespace

std::string runPair(const PairSetup& s, std::vector<Row>* rows, std::string* note) {
  mwlab::Shared<Board> board;
  const int64_t deadline = mwlab::monotonicNs() + static_cast<int64_t>(s.limit_s * 1e9);
  std::string why;
  {
    Child r0("nccl 2 ranks, rank 0", [&] { return rankMain(0, s, *board); });
    Child r1("nccl 2 ranks, rank 1", [&] { return rankMain(1, s, *board); });
    why = joinAll({&r0, &r1}, deadline, &board->sync.failed, 5000);
  }
  *rows = board->rows.list();
  if (board->stopped) {
    *note = "stopped after " + std::to_string(rows->size()) + " ops and sizes: the part's budget of " +
            std::to_string(static_cast<int>(s.budget_s)) + " s was spent";
  }
  return why;
}

std::string pairCalibration() {
  char text[96];
  std::snprintf(text, sizeof text, "iterations calibrated to ~%.2g s per run (%zu..%zu)", kRunS, kMinIters, kMaxIters);
  return text;
}

}  // namespace mwbench::gpu
