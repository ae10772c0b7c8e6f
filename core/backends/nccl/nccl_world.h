// One world on NCCL, through the plugin: one non-blocking communicator and
// one CUDA stream on the device given at create. Every operation is issued
// on that stream from the issuing thread, with a CUDA event behind it, and
// the context's NcclPoller completes it. No thread of its own.
//
// Liveness rides the context's UCX engine: the members also form a UcxWorld
// that carries no data, only its client-server endpoints, the process watch
// and the goodbyes. So a member that dies, or leaves, while the world is
// idle breaks it at once; NCCL itself only notices failures of the
// operations it runs.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "core/backends/nccl/nccl_aborter.h"
#include "core/backends/nccl/nccl_plugin_abi.h"
#include "core/backends/nccl/nccl_poller.h"
#include "core/deadline.h"
#include "core/world_backend.h"

namespace mw {

class Incarnation;
class RedisPool;
class UcxWorld;
struct ResizePlan;

// What every NCCL world of a context shares: the plugin, the thread that
// finds finished operations and the thread that ends communicators. Made
// with the context's first NCCL world; lives while a world holds it.
struct NcclThreads {
  NcclThreads(const mwn_plugin& p, std::chrono::microseconds spin) : plugin(p), poller(p, spin), aborter(p) {}
  const mwn_plugin& plugin;
  NcclPoller poller;
  NcclAborter aborter;
};

// The settings of an NCCL world's UCX control world: it carries no data,
// so it takes no same-host rings.
WorldSettings ncclControlSettings(const WorldSettings& world);

class NcclWorld : public WorldBackend, private NcclOpOwner {
 public:
  // Rank 0's NCCL id travels through Redis under the incarnation's "n:"
  // keys; then every rank polls its communicator until it formed.
  // `control` is the world's connected, not yet started, UcxWorld. Throws
  // Error (Timeout, Store, Backend, InvalidArgument, WorldBroken), or
  // MovedOn when the incarnation ends while it waits
  // (core/store/kv_store.h).
  static std::unique_ptr<NcclWorld> connect(std::shared_ptr<NcclThreads> threads, std::unique_ptr<UcxWorld> control,
                                            RedisPool& pool, const Incarnation& inc, int rank, int device,
                                            Deadline deadline);
  ~NcclWorld() override;

  void start(World& world) override;
  void submit(const OpDesc& op, const std::shared_ptr<Request>& r) override;
  bool cancel(Request& r) noexcept override;
  void abort() noexcept override;
  void stop() noexcept override;
  std::shared_ptr<ProgressDriver> driver() override { return {threads_, &threads_->poller}; }

  // A shrink or grow: the control world keeps its endpoints where it can
  // (UcxWorld::resized), and the communicator shrinks with ncclCommShrink
  // (NCCL_SHRINK_ABORT when MW_SHRINK_ABORT cancelled operations) or grows
  // with ncclCommGrow where every member's NCCL has them and this one was
  // not aborted (a broken world's was, at its break); else a new one
  // forms. The members agree on which through Redis, under the new
  // incarnation's "n:" keys.
  std::unique_ptr<WorldBackend> shrink(const ResizePlan& plan, BackendServices& services, const Incarnation& next,
                                       const WorldSpec& spec, const WorldSettings& settings,
                                       Deadline deadline) override;
  std::unique_ptr<WorldBackend> grow(const ResizePlan& plan, BackendServices& services, const Incarnation& next,
                                     const WorldSpec& spec, const WorldSettings& settings, Deadline deadline) override;
  // The old communicator ends on the aborter (finalized when healthy),
  // as a destroy ends it.
  void retire(WorldBackend* successor) noexcept override;
  void watchMembers(std::function<void(int peer, const std::string& why)> lost) override;
  void unwatchMembers() noexcept override;

 private:
  NcclWorld(std::shared_ptr<NcclThreads> threads, std::unique_ptr<UcxWorld> control, mwn_comm* comm);
  std::unique_ptr<WorldBackend> resized(const ResizePlan& plan, BackendServices& services, const Incarnation& next,
                                        const WorldSpec& spec, const WorldSettings& settings, Deadline deadline);
  OpResult failure() const override;
  void operationFailed(const std::string& why, BreakCause cause, Clock::time_point evidence) noexcept override;
  // Ends the communicator on the aborter; `wait`: for up to its grace.
  void releaseComm(bool wait = true) noexcept;

  const std::shared_ptr<NcclThreads> threads_;
  const std::unique_ptr<UcxWorld> control_;
  mwn_comm* const comm_;
  World* world_ = nullptr;  // owns this backend; set by start()

  std::mutex m_;
  std::condition_variable submitted_;  // submitting_ dropped
  int submitting_ = 0;                 // submit() calls inside the plugin now
  bool aborted_ = false;
  bool draining_ = false;  // a member left; the poller lets what runs finish
  bool finalize_ = false;  // destroyed while healthy: finalize, not abort
  bool stopped_ = false;
  std::shared_ptr<NcclAborter::Teardown> teardown_;  // set by the first abort()
};

}  // namespace mw
