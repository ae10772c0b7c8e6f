// An operation of a UCX world in flight: its request, its place in the
// completion order, and the transfers (sends and receives) it has posted,
// each on the channel of its peer (channels/ucx_channel.h). Subclasses:
// point-to-point (here) and collectives (ucx_collective.h). Everything
// runs on the engine's owner.
//
// A channel may end a transfer inside the very call that posts it, or
// inside a cancel, so an operation never deletes itself: every way in
// holds an Entry, and the last Entry to leave hands a finished operation
// to its world, which completes the request and deletes it.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/backends/ucx/channels/ucx_transfer.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/op.h"
#include "core/ordered_completions.h"

namespace mw {

class Request;
class UcxWorld;

class UcxOp : private UcxTransferOwner {
 public:
  UcxOp(UcxWorld& world, std::shared_ptr<Request> request, int lane, OrderedCompletions::Ticket ticket);
  virtual ~UcxOp() = default;
  UcxOp(const UcxOp&) = delete;
  UcxOp& operator=(const UcxOp&) = delete;

  // Holds the operation while a caller is inside it; see above.
  class Entry {
   public:
    explicit Entry(UcxOp& op) : op_(op) { ++op_.entries_; }
    ~Entry();

   private:
    UcxOp& op_;
  };

  // Posts its first transfers (inside an Entry).
  virtual void start() = 0;
  // The world broke or is going: post nothing more, cancel the receives.
  virtual void abort();
  // `peer` left the world: a receive from it that nothing matched yet, or
  // a send to it, fails the operation.
  void peerDeparted(int peer);
  // A receive nothing matched yet was cancelled: true when this operation
  // is such a receive (it then finishes Cancelled).
  virtual bool takeBack() { return false; }

  Request* request() const { return request_.get(); }
  std::chrono::steady_clock::time_point started() const { return started_; }
  int lane() const { return lane_; }
  OrderedCompletions::Ticket ticket() const { return ticket_; }
  bool done() const { return done_; }
  const OpResult& result() const { return result_; }
  // Transfers its channels still hold.
  unsigned inFlight() const { return in_flight_; }
  // One of them goes to or comes from `peer`.
  bool holds(int peer) const;
  // Every transfer still held goes to a process that is gone, so its
  // buffers are no longer read or written by anyone.
  bool onlyGonePeersHold() const;
  // The world is gone; UCX may still call back into this operation. What
  // it lent is withdrawn.
  void orphan();

 protected:
  // Takes back a receive nothing matched yet (it ends Cancelled, possibly
  // inside the call); one already receiving stays.
  void cancelRecv(UcxTransfer& t);
  // Posts `t` (its peer, recv, bytes filled in) on `channel`. A transfer
  // that ends at once comes back through transferDone() before this
  // returns.
  void post(UcxTransfer& t, uint64_t channel, void* buffer);
  // Once per posted transfer, when it ended (t.status, t.length).
  virtual void transferDone(UcxTransfer& t) = 0;
  // The operation's outcome; it completes once nothing is in flight.
  void finish(OpResult result);

  UcxWorld* world_;  // null once orphaned
  UcxEngine& engine_;  // outlives every operation, orphans included
  std::vector<UcxTransfer*> posted_;  // in flight, for abort and onlyGonePeersHold

 private:
  // A transfer ended (UcxTransferOwner).
  void transferEnded(UcxTransfer& t, ucs_status_t status, size_t length) override;
  void settle();  // the last Entry left

  std::shared_ptr<Request> request_;
  const std::chrono::steady_clock::time_point started_;  // its request's issue
  const int lane_;
  const OrderedCompletions::Ticket ticket_;
  unsigned entries_ = 0;
  unsigned in_flight_ = 0;
  bool done_ = false;
  OpResult result_;
};

// mw send / recv: one transfer on the point-to-point channel.
class UcxP2p : public UcxOp {
 public:
  UcxP2p(UcxWorld& world, std::shared_ptr<Request> request, OrderedCompletions::Ticket ticket, const OpDesc& op);
  void start() override;
  bool takeBack() override;

 private:
  void transferDone(UcxTransfer& t) override;
  const OpDesc op_;
  UcxTransfer transfer_;
  bool taking_back_ = false;
};

}  // namespace mw
