// One incarnation of a world on this process: its identity, its state
// (ready -> broken -> destroyed), and the backend that runs its operations.
// Backend-neutral.
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
  // A data path of `w` to `peer_rank` went down or came back; the world
  // lives on either way (MW_EVENT_PATH_DOWN / MW_EVENT_PATH_UP).
  virtual void pathChanged(const std::shared_ptr<World>& w, int peer_rank, bool up, const PathChange& path,
                           const std::string& detail) = 0;
  virtual const std::shared_ptr<CompletionQueue>& completions() const = 0;
};

enum class WorldState { Ready, Broken, Destroyed };

struct WorldIdentity {
  std::string name;
  uint64_t epoch = 0;
  int rank = 0;
  int size = 0;
  std::vector<std::string> members;  // member id per rank
  Backend backend = Backend::Ucx;
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
  Backend backend() const { return id_.backend; }
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

  // The rank the world broke because of (-1: unknown, or not broken).
  int blamedRank() const;

 private:
  const WorldIdentity id_;
  const std::unique_ptr<WorldBackend> backend_;
  WorldOwner& owner_;
  const std::chrono::milliseconds op_timeout_;
  const std::shared_ptr<const metrics::WorldMetrics> metrics_;

  std::mutex issue_m_;  // makes the backend see operations in issue order
  mutable std::mutex m_;
  // Written under m_; state() reads it without m_, as every issue does.
  std::atomic<WorldState> state_{WorldState::Ready};
  std::string broken_detail_;
  int broken_peer_ = -1;
  bool stopped_ = false;
};

}  // namespace mw
