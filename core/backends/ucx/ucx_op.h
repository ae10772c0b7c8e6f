// An operation of a UCX world in flight: its request, its place in the
// completion order, and the UCX transfers (tag sends and receives) it has
// posted. Subclasses: point-to-point (here) and collectives
// (ucx_collective.h). Everything runs on the engine's owner.
//
// UCX may call a transfer back inside the very call that posts it, or
// inside ucp_request_cancel, so an operation never deletes itself: every
// way in holds an Entry, and the last Entry to leave hands a finished
// operation to its world, which completes the request and deletes it.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <memory>
#include <vector>

#include "core/metrics/world_metrics.h"
#include "core/op.h"
#include "core/ordered_completions.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_same_host.h"
#include "core/backends/ucx/ucx_send_pacing.h"
#include "core/same_host/ring_pair.h"

namespace mw {

class Request;
class UcxWorld;
class UcxOp;

// One tag send or receive.
struct UcxTransfer {
  UcxOp* op = nullptr;
  void* request = nullptr;  // UCX's, while in flight
  uint64_t path_recv = 0;   // a receive waiting in the world's UcxFailover
  uint64_t ring_recv = 0;   // a receive waiting in a same-host ring pair
  int peer = -1;
  bool recv = false;
  bool in_flight = false;
  bool waiting = false;  // a send UCX queued: the engine polls for it
  std::shared_ptr<SendPacing> marker;  // a send that is its peer's marker (ucx_send_pacing.h)
  void* buffer = nullptr;  // the caller's: where the data comes from or goes
  std::shared_ptr<UcxLoan> loan;  // a send lent to its receiver (ucx_same_host.h)
  std::shared_ptr<UcxDescriptorRoom> room;  // a ring receive smaller than a descriptor
  size_t bytes = 0;   // posted size
  size_t length = 0;  // a receive: the sender's size
  ucs_status_t status = UCS_OK;
  metrics::DataPath path = metrics::DataPath::Tag;  // what carried it (mw_bytes_*_total)
};

class UcxOp {
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
  // Transfers UCX still holds.
  unsigned inFlight() const { return in_flight_; }
  // Every transfer UCX still holds goes to a process that is gone, so its
  // buffers are no longer read or written by anyone.
  bool onlyGonePeersHold() const;
  // The world is gone; UCX may still call back into this operation.
  void orphan();
  // The receiver of loan `t` read it (ucx_same_host.h).
  void loanReturned(UcxTransfer& t);

 protected:
  // Takes back a receive nothing matched yet (it ends Cancelled, possibly
  // inside the call); one already receiving stays.
  void cancelRecv(UcxTransfer& t);
  // Posts `t` (its peer, recv, bytes filled in) on `channel`. A transfer
  // UCX completes at once comes back through transferDone() before this
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
  bool arrived(const UcxTransfer& t, uint64_t channel);
  // A world with several paths sends and receives through its UcxFailover.
  void postOnPaths(UcxTransfer& t, uint64_t channel, void* buffer);
  // A peer of this host with rings: through them (ucx_rings.cc).
  void postOnRing(UcxTransfer& t, uint64_t channel, void* buffer, samehost::RingPair& ring);
  static void onSend(void* request, ucs_status_t status, void* arg);
  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg);
  void ended(UcxTransfer& t, ucs_status_t status, size_t length);
  // The same-host path (ucx_same_host.cc).
  // Its descriptor goes through `ring`, in the message's place.
  void postLoan(UcxTransfer& t, uint64_t channel, samehost::RingPair& ring);
  // A descriptor of `length` bytes arrived for receive `t`: reads the loan
  // and returns it.
  void readLoan(UcxTransfer& t, size_t length);
  // Withdraws the loans to `peer` (-1: every peer): their receivers can no
  // longer read them, and they end once UCX let go of their descriptors.
  void giveUpLoans(int peer);
  // The same for loan `t`, which ends with its status (Cancelled unless
  // its descriptor's send failed); a loan already returned just settles.
  void giveUpLoan(UcxTransfer& t);
  void settleLoan(UcxTransfer& t);
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
