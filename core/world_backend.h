// What a World drives: the part of a world that runs its operations.
//
// Two kinds exist. Blocking backends (Gloo, NCCL) run behind lanes, a few
// threads per world (core/lanes.h). Self-driven backends (UCX) start every
// operation on the issuing thread and finish it on the context's one
// progress engine, with no thread per world.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/deadline.h"
#include "core/op.h"
#include "core/progress_driver.h"
#include "core/world_spec.h"

namespace mw {

class BackendServices;
class Incarnation;
class Request;
class World;
struct ResizePlan;

class WorldBackend {
 public:
  virtual ~WorldBackend() = default;

  // Once, when the world is ready, before any submit().
  virtual void start(World& world) = 0;

  // On the issuing thread, in issue order (under the world's issue lock),
  // while the world is ready. The backend completes `r`, possibly before
  // this returns. Throws TransportError when the transport is already known
  // to be broken, and Error for an operation it cannot run.
  virtual void submit(const OpDesc& op, const std::shared_ptr<Request>& r) = 0;

  // On a broken world, submit() is still called for an operation this
  // says yes to: one that can finish with what already arrived (UCX: a
  // receive of a message that a member sent before it left).
  virtual bool runsWhenBroken(const OpDesc& op) {
    (void)op;
    return false;
  }

  // mw_request_cancel: true when `r`'s operation was taken back without
  // involving the other members (`r` then completes Cancelled); false when
  // only breaking the world can stop it.
  virtual bool cancel(Request& r) noexcept = 0;

  // The world broke or is being destroyed: every pending and later
  // operation completes with the world's failure (World::failure).
  // Idempotent; from any thread; called again for each later failure of
  // a broken world.
  virtual void abort() noexcept = 0;

  // After abort(), from destroy: releases sockets, threads, endpoints and
  // memory in bounded time. Nothing of the backend runs afterwards, except
  // what it documents as left behind.
  virtual void stop() noexcept = 0;

  // The engine a thread waiting for this world's requests may drive
  // itself; null for backends progressed by their own threads.
  virtual std::shared_ptr<ProgressDriver> driver() { return nullptr; }

  // A shrink or grow of this world (`plan`: who stays, the new ranks):
  // its successor, connected under `next` with what this backend keeps
  // for the members that stay (UCX: their endpoints; NCCL: the
  // communicator, through ncclCommShrink / ncclCommGrow). Issues nothing
  // on this world, which stays usable until retire(); runs while nothing
  // is pending here. Null: it keeps nothing, and the successor connects
  // afresh (BackendKind::connect). Throws as a connect does.
  virtual std::unique_ptr<WorldBackend> shrink(const ResizePlan& plan, BackendServices& services,
                                               const Incarnation& next, const WorldSpec& spec,
                                               const WorldSettings& settings, Deadline deadline) {
    (void)plan, (void)services, (void)next, (void)spec, (void)settings, (void)deadline;
    return nullptr;
  }
  virtual std::unique_ptr<WorldBackend> grow(const ResizePlan& plan, BackendServices& services,
                                             const Incarnation& next, const WorldSpec& spec,
                                             const WorldSettings& settings, Deadline deadline) {
    (void)plan, (void)services, (void)next, (void)spec, (void)settings, (void)deadline;
    return nullptr;
  }

  // While the world is being shrunk or grown: `lost` runs (on any thread,
  // never inside a call of the resize itself) when the transport finds a
  // member gone, also on a broken world, until unwatchMembers() returned.
  // Backends whose transport cannot tell a member's death from its world
  // closing (Gloo) watch nothing: the heartbeats tell.
  virtual void watchMembers(std::function<void(int peer, const std::string& why)> lost) { (void)lost; }
  virtual void unwatchMembers() noexcept {}

  // The successor formed (every member committed): what `successor` (made
  // by shrink() or grow(), or null) took over is its own from now on, and
  // the rest of this backend ends as a destroy ends it, without telling
  // the members anything. Nothing is issued here afterwards.
  virtual void retire(WorldBackend* successor) noexcept {
    (void)successor;
    abort();
    stop();
  }
};

}  // namespace mw
