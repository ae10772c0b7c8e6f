// One incarnation of a world on this process: its identity, its state
// (core/world_state.h: ready, broken, retired by a shrink or grow,
// destroyed), and the backend that runs its operations. Backend-neutral.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/break_cause.h"
#include "core/deadline.h"
#include "core/metrics/world_metrics.h"
#include "core/op.h"
#include "core/path_change.h"
#include "core/world_backend.h"
#include "core/world_spec.h"
#include "core/world_state.h"

namespace mw {

class CompletionQueue;
class Request;
class World;

// The context a world belongs to: told about breaks so it can queue the
// event and announce the break to the other members, and the one that
// destroys the world. Outlives every world it owns.
class WorldOwner {
 public:
  virtual ~WorldOwner() = default;
  virtual void worldBroken(const std::shared_ptr<World>& w, int peer_rank, const std::string& detail,
                           bool announce) = 0;
  virtual void destroyWorld(World* w) = 0;
  // mw_world_shrink / mw_world_grow of `w` (Context::shrinkWorld).
  virtual World* shrinkWorld(World* w, const int* exclude, int n, int flags, int timeout_ms) = 0;
  virtual World* growWorld(World* w, int new_size, int timeout_ms) = 0;
  // A data path of `w` to `peer_rank` went down or came back; the world
  // lives on either way (MW_EVENT_PATH_DOWN / MW_EVENT_PATH_UP).
  virtual void pathChanged(const std::shared_ptr<World>& w, int peer_rank, bool up, const PathChange& path,
                           const std::string& detail) = 0;
  virtual const std::shared_ptr<CompletionQueue>& completions() const = 0;
};

struct WorldIdentity {
  std::string name;
  uint64_t epoch = 0;
  int rank = 0;
  int size = 0;
  std::vector<std::string> members;  // member id per rank
  // What it was created with (its backend among it), for its successors.
  WorldSpec spec;
  WorldSettings settings;
};

class World : public std::enable_shared_from_this<World> {
 public:
  // `metrics`: the cells its operations and its break update; null with
  // metrics off.
  World(WorldIdentity id, std::unique_ptr<WorldBackend> backend, WorldOwner& owner,
        std::chrono::milliseconds op_timeout, std::shared_ptr<const metrics::WorldMetrics> metrics = nullptr);
  ~World();
  void start();

  const std::string& name() const { return id_.name; }
  uint64_t epoch() const { return id_.epoch; }
  int rank() const { return id_.rank; }
  int size() const { return id_.size; }
  const std::vector<std::string>& members() const { return id_.members; }
  const WorldSpec& spec() const { return id_.spec; }
  const WorldSettings& settings() const { return id_.settings; }
  Backend backend() const { return id_.spec.backend; }
  const metrics::WorldMetrics* metrics() const { return metrics_.get(); }
  std::chrono::milliseconds opTimeout() const { return op_timeout_; }
  WorldState state() const;
  WorldOwner& owner() const { return owner_; }

  // Validates and issues `op`; throws Error(InvalidArgument) for a bad
  // operation, Error(WorldBroken) on a broken world.
  Request* submit(const OpDesc& op, uint64_t user_data = 0);

  // mw_request_cancel of a request of this world: the backend takes it back
  // (it completes Cancelled) or, when it cannot, the world breaks.
  void cancel(Request& r);

  // Breaks the world unless it is already broken or destroyed: aborts the
  // backend, fails pending requests with WorldBroken and tells the owner.
  // `evidence`: when the fault first showed (mw_break_detection_seconds
  // counts from it to the event).
  void breakWorld(int peer_rank, const std::string& detail, bool announce, BreakCause cause,
                  Clock::time_point evidence = Clock::now());

  // Bounded: aborts and stops the backend; what is pending completes with
  // Cancelled. True when the world was still ready, i.e. the other members
  // have not heard of a break yet.
  bool destroy();

  // What pending operations fail with now: Cancelled once destroyed, else
  // WorldBroken, each with its message.
  OpResult failure() const;
  // Destroyed while still ready: this member left a healthy world, and its
  // backend tells the others so (a UCX world's goodbye). A world that broke
  // first is only dropped: a goodbye from it would reach a member that has
  // not judged the break yet as the cause of it.
  bool leftHealthy() const;

  // The rank the world broke because of (-1: unknown, or not broken).
  int blamedRank() const;
  // The break was this member's to announce (it saw the fault itself),
  // rather than heard of from another member or the store.
  bool breakAnnounced() const;

  // Operations issued and not finished yet.
  int pending() const { return pending_.load(); }
  // A request of this world finished (Request::complete).
  void opEnded() noexcept { pending_.fetch_sub(1); }

  // A shrink or grow of this world starts: nothing may be issued on it
  // until it ends. Throws Error(InvalidArgument) naming why not: a world
  // destroyed, retired or resized already, or, unless `cancel_pending`,
  // one that has operations pending (naming their count), and a grow of
  // a broken world.
  // With `cancel_pending` (MW_SHRINK_ABORT), what is pending completes
  // with Cancelled first; the world then cannot run operations again.
  void beginResize(bool cancel_pending, const char* verb);
  // The resize failed: the world is usable again, or, when its
  // operations were cancelled for it, broken, saying `why`.
  void endResize(const std::string& why);
  // The resize made its successor (epoch `successor_epoch`): the backend
  // hands it what the successor keeps (WorldBackend::retire) and the
  // handle is retired.
  void retire(uint64_t successor_epoch, const char* verb, WorldBackend* successor);
  bool resizing() const { return resizing_.load(); }
  // What runs its operations (the backend's world).
  WorldBackend& runner() const { return *backend_; }

 private:
  const WorldIdentity id_;
  const std::unique_ptr<WorldBackend> backend_;
  WorldOwner& owner_;
  const std::chrono::milliseconds op_timeout_;
  const std::shared_ptr<const metrics::WorldMetrics> metrics_;

  std::mutex issue_m_;  // makes the backend see operations in issue order
  mutable std::mutex m_;
  // Written under m_; state() reads it without m_, as every issue does.
  // Moves state_ to `next` (under m_) through worldTransition(); a move
  // the table refuses is logged and changes nothing.
  bool moveTo(WorldState next);

  std::atomic<WorldState> state_{WorldState::Ready};  // written under m_
  std::string broken_detail_;
  int broken_peer_ = -1;
  bool broken_announced_ = false;
  bool stopped_ = false;
  bool left_healthy_ = false;  // destroy() found it ready
  // A shrink or grow is under way: nothing is issued. Written under
  // issue_m_ and m_; submit() reads it under issue_m_ alone.
  std::atomic<bool> resizing_{false};
  bool cancelling_ = false;  // and it cancelled what was pending
  const char* resize_verb_ = "shrink";
  uint64_t successor_epoch_ = 0;  // once retired
  std::atomic<int> pending_{0};
};

}  // namespace mw
