// One incarnation of a world on this process: its identity, its state
// (ready -> broken -> destroyed), and the lanes that run issued operations.
// Backend-neutral.
//
// Lanes: sends and collectives run in issue order on the main lane; the
// receives from each peer run in issue order on that peer's own lane, so a
// receive that is posted long before its message arrives (the usual way to
// serve) never holds up sends, collectives or receives from other peers.
// Each lane has one named thread; receive lanes start on first use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "core/deadline.h"
#include "core/op.h"

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
  virtual const std::shared_ptr<CompletionQueue>& completions() const = 0;
};

enum class WorldState { Ready, Broken, Destroyed };

struct WorldIdentity {
  std::string name;
  uint64_t epoch = 0;
  int rank = 0;
  int size = 0;
  std::vector<std::string> members;  // member id per rank
};

class World : public std::enable_shared_from_this<World> {
 public:
  World(WorldIdentity id, std::unique_ptr<Communicator> comm, WorldOwner& owner,
        std::chrono::milliseconds op_timeout);
  ~World();
  void start();

  const std::string& name() const { return id_.name; }
  uint64_t epoch() const { return id_.epoch; }
  int rank() const { return id_.rank; }
  int size() const { return id_.size; }
  const std::vector<std::string>& members() const { return id_.members; }
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
  void breakWorld(int peer_rank, const std::string& detail, bool announce);

  // Bounded: aborts the backend, stops the worker, fails what is pending
  // with Cancelled and releases the backend. True when the world was still
  // ready, i.e. the other members have not heard of a break yet.
  bool destroy();

 private:
  struct Item {
    std::shared_ptr<Request> request;
    std::unique_ptr<PendingOp> op;
  };
  static constexpr int kMainLane = -1;
  struct Lane {
    int peer = kMainLane;  // the peer whose receives it runs, or kMainLane
    std::deque<Item> queue;
    std::condition_variable cv;
    std::thread thread;
    bool running = false;  // an item taken from the queue has not finished
    bool exited = false;
  };

  Lane& laneFor(const OpDesc& op);  // under m_
  Lane& lane(int key);               // under m_; starts the lane's thread
  void laneMain(Lane& lane);
  void runItem(Item& item);
  Status failureStatus() const;  // WorldBroken or Cancelled, for the state now
  void notifyAll();              // under m_

  const WorldIdentity id_;
  std::unique_ptr<Communicator> comm_;
  WorldOwner& owner_;
  const std::chrono::milliseconds op_timeout_;

  std::mutex issue_m_;  // makes post order equal queue order
  mutable std::mutex m_;
  WorldState state_ = WorldState::Ready;
  std::string broken_detail_;
  bool stopping_ = false;
  std::map<int, std::unique_ptr<Lane>> lanes_;  // by peer; kMainLane first
  std::condition_variable lane_exited_;
};

}  // namespace mw
