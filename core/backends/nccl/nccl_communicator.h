// One world on NCCL, through the plugin: one non-blocking communicator and
// one CUDA stream on the device given at create; every operation is queued
// on that stream with a CUDA event behind it.
//
// Beside it runs the world's Gloo mesh, carrying no data: the main lane
// idles in it, so a member that dies while the world is idle breaks it at
// once (a TCP reset), exactly as on Gloo; NCCL only notices failures of the
// operations it runs.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/backends/nccl/nccl_plugin_abi.h"
#include "core/communicator.h"
#include "core/store/redis_pool.h"

namespace mw {

class NcclCommunicator : public Communicator {
 public:
  // Rank 0's NCCL id travels through Redis under `id_prefix`; then every
  // rank polls its communicator until it formed. Throws Error (Timeout,
  // Store, Backend, InvalidArgument).
  static std::unique_ptr<NcclCommunicator> connect(const mwn_plugin& plugin, std::unique_ptr<Communicator> liveness,
                                                   RedisPool& pool, const std::string& id_prefix, int rank,
                                                   int size, int device, Deadline deadline);
  ~NcclCommunicator() override;

  std::unique_ptr<PendingOp> post(const OpDesc& op) override;
  void idleWait() override;
  void wake() noexcept override;
  void abort() noexcept override;
  void close() noexcept override;

  // Until `op` finished: OK, InvalidArgument (sizes that NCCL refused), or
  // TransportError for a failed or aborted communicator or a passed deadline.
  OpResult wait(mwn_op* op, Deadline deadline);

 private:
  NcclCommunicator(const mwn_plugin& plugin, std::unique_ptr<Communicator> liveness, mwn_comm* comm);

  struct Teardown;

  const mwn_plugin& plugin_;
  const std::unique_ptr<Communicator> liveness_;
  mwn_comm* comm_;

  std::mutex m_;
  std::condition_variable aborted_cv_;
  bool aborted_ = false;
  bool closed_ = false;
  // ncclCommAbort runs on a thread of its own: it waits for the world's
  // kernels and NCCL's proxy threads, and abort() may be called by the
  // context's watchdog, which serves every world.
  std::shared_ptr<Teardown> teardown_;
  std::thread aborter_;
};

}  // namespace mw
