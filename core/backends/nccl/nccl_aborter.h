// The one thread of a context that ends the communicators of NCCL worlds:
// ncclCommAbort for a broken world, ncclCommFinalize for one destroyed
// while healthy.
//
// Both wait for the world's kernels and NCCL's proxy threads, so they run
// on neither the thread that breaks a world (the UCX engine, the CUDA
// poller, the watchdog) nor the program's: one world's teardown never
// stalls another world's operations. They run one at a time, in the order
// asked for.
//
// Ownership: the queue and the thread belong to the aborter; a Teardown is
// shared by the world that asked and the thread, and the last of the two
// to need the communicator frees it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/backends/nccl/nccl_plugin_abi.h"

namespace mw {

class NcclAborter {
 public:
  // One world's communicator on its way out.
  class Teardown;

  explicit NcclAborter(const mwn_plugin& plugin);
  // Joins the thread; an abort that is still stuck in NCCL is left to
  // finish on its own (the thread is detached with what it holds).
  ~NcclAborter();
  NcclAborter(const NcclAborter&) = delete;
  NcclAborter& operator=(const NcclAborter&) = delete;

  // Queues ncclCommAbort of `comm`; returns at once.
  std::shared_ptr<Teardown> abort(mwn_comm* comm);
  // Queues ncclCommFinalize of `comm`: what this rank sent reaches the
  // others. Past `grace`, or when it fails, the communicator is aborted.
  // Returns at once.
  std::shared_ptr<Teardown> finalize(mwn_comm* comm, std::chrono::milliseconds grace);

  // After abort() or finalize(): the aborter's thread frees the
  // communicator once it ended; this waits up to `grace` for both. False
  // when they still run then (they finish on the thread).
  bool release(const std::shared_ptr<Teardown>& t, std::chrono::milliseconds grace) noexcept;
  // As release(), without waiting at all: a shrunk or grown world's old
  // communicator, which nothing uses any more.
  void handOver(const std::shared_ptr<Teardown>& t) noexcept;

 private:
  struct State;
  // Under State::m: queues `t` again, for its free; false without memory.
  bool requeue(const std::shared_ptr<Teardown>& t) noexcept;
  std::shared_ptr<Teardown> queue(mwn_comm* comm, int finalize_ms);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace mw
