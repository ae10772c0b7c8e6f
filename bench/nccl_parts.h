// The three parts of the nccl suite, which bench/nccl_suite.cc runs in
// this order, each in processes of their own: the suite's process never
// initialises CUDA, so it can fork the rank processes of every part.
//
//   single: a size-1 world against a raw size-1 ncclComm in one process.
//   pair:   2 ranks of one world against a raw 2-rank ncclComm, each rank
//           its own process (on one GPU where there is only one).
//   kill:   a kill -9 of a peer that shares one world with a process and
//           not another: how soon the shared world breaks, and whether
//           traffic on the other world slows down.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/nccl_common.h"

namespace mwbench::gpu {

// What the single part's process reports back (in shared memory).
struct SingleBoard {
  enum : int { kCrashed = 0, kMeasured, kSkipped, kBadOptions, kFailed };
  std::atomic<int> outcome{kCrashed};
  std::atomic<int> devices{0};  // CUDA devices, set once NCCL is known to be usable
  RowTable rows;
  char machine[768] = "";  // machineName() plus the GPU and the NCCL library
  char why[1024] = "";     // kSkipped: why NCCL is unusable; kFailed: the error
};

// Runs in a forked process: prints the single part's header and table
// (unchanged from when it was the whole suite) and fills `b`.
void runSingle(const BenchOptions& opt, const std::string& redis_url, const std::string& redis_error,
               SingleBoard& b);

struct PairSetup {
  std::string redis_url;
  int devices = 1, one_gpu = 0;  // placeProcess's
  std::vector<size_t> sizes;     // bytes, multiples of 4
  size_t rounds = 5;             // alternating rounds per op and size, median taken
  size_t iters = 0;              // fixed operations per timed run; 0 = calibrated
  double budget_s = 70;          // no op and size starts after this
  double limit_s = 100;          // then the rank processes are killed
};

// Forks the two ranks and waits for them; every row they finished lands in
// *rows. "" when both succeeded, else what failed. *note says when the
// budget cut the list of op and sizes short.
std::string runPair(const PairSetup& s, std::vector<Row>* rows, std::string* note);
// How runPair picks the iterations of a timed run when none are given.
std::string pairCalibration();

struct KillSetup {
  std::string redis_url;
  int devices = 1, one_gpu = 0;
  double limit_s = 50;
};

struct KillReport {
  size_t bytes = 0, ops_per_window = 0;
  std::vector<double> window_gbps;  // warm-up, baseline..., after the kill...
  double baseline_gbps = 0, after_gbps = 0, first_after_gbps = 0;
  double detect_ms = -1;  // kill to the pending recv's completion; < 0: not seen
  std::string recv_status;
  double destroy_ms = -1;  // mw_world_destroy of the broken world
  double keptRatio() const { return after_gbps / baseline_gbps; }
  double firstRatio() const { return first_after_gbps / baseline_gbps; }
};

// Forks A, B and C, kills B at the right moment and collects A's numbers.
// "" when all went as expected, else what failed (*r holds what was seen).
std::string runKill(const KillSetup& s, KillReport* r);
constexpr int kKillBaselineWindows = 3, kKillAfterWindows = 3;

}  // namespace mwbench::gpu
