// Lanes: how a blocking backend (Gloo, NCCL) runs a world's operations.
//
// Sends and collectives run in issue order on the main lane; the receives
// from each peer run in issue order on that peer's own lane, so a receive
// that is posted long before its message arrives (the usual way to serve)
// never holds up sends, collectives or receives from other peers. Each lane
// has one named thread; receive lanes start on first use.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/communicator.h"
#include "core/world_backend.h"

namespace mw {

class LaneBackend : public WorldBackend {
 public:
  explicit LaneBackend(std::unique_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  ~LaneBackend() override;

  void start(World& world) override;
  void submit(const OpDesc& op, const std::shared_ptr<Request>& r) override;
  bool cancel(Request& r) noexcept override { return comm_->cancel(r); }
  void abort() noexcept override;
  void stop() noexcept override;

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
    Deadline deadline{};   // of the running item: op_timeout_ms
    bool exited = false;
    // The lane's own thread only: an operation of it completed with the
    // world's failure. Later ones then fail too, even when their data is
    // in, so that nothing is delivered past a message that never came.
    bool lost = false;
  };

  Lane& laneFor(const OpDesc& op);  // under m_
  Lane& lane(int key);               // under m_; starts the lane's thread
  void laneMain(Lane& lane);
  void runItem(Lane& lane, Item& item);
  void notifyAll();  // under m_
  // Breaks the world for `e`. A running operation past op_timeout_ms
  // makes every lane fail (Gloo closes all pairs), and is then the reason;
  // else the transport failed.
  void breakOn(const TransportError& e);

  std::unique_ptr<Communicator> comm_;
  World* world_ = nullptr;  // owns this backend

  std::mutex m_;
  bool aborted_ = false;   // the world broke or is being destroyed
  bool stopping_ = false;  // lanes exit
  std::map<int, std::unique_ptr<Lane>> lanes_;  // by peer; kMainLane first
  std::condition_variable lane_exited_;
  bool stuck_ = false;  // a lane outlived stop(): it still uses comm_
};

}  // namespace mw
