// Completion order for a self-driven backend, the same as the lanes give a
// blocking one: sends and collectives complete in issue order, and so do
// the receives from each peer, on their own. An operation that finishes
// early waits for the earlier ones of its lane; a cancelled operation
// completes at once (it has no data to order).
//
// A lane is a stream: once one of its operations completes in order with
// the world's failure (WorldBroken, or Cancelled once it is destroyed),
// every later one of that lane completes with the same failure, even one
// whose data is in. A message that came after one that never did is never
// delivered as if the lost one had not been sent (the rule LaneBackend
// keeps for blocking backends).
//
// Not thread-safe: the backend calls it under its own lock.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "core/op.h"

namespace mw {

class Request;

class OrderedCompletions {
 public:
  static constexpr int kMainLane = -1;
  using Ticket = uint64_t;

  // The lane of `op`: kMainLane, or the source rank of a receive.
  static int laneOf(const OpDesc& op) { return op.kind == OpKind::Recv ? op.peer : kMainLane; }

  // In issue order: reserves `r`'s place in its lane.
  Ticket enqueue(int lane, std::shared_ptr<Request> r);
  // The operation behind `t` ended with `result`; completes it and every
  // later one of its lane that had ended already, in order.
  void finish(int lane, Ticket t, OpResult result);
  // Takes `t` out of its lane and completes it now (cancelled).
  void finishOutOfOrder(int lane, Ticket t, OpResult result);

 private:
  struct Slot {
    Ticket ticket;
    std::shared_ptr<Request> request;
    bool ended = false;
    OpResult result;
  };
  struct Lane {
    std::deque<Slot> slots;
    bool lost = false;  // an operation of it completed WorldBroken: `failure`
    OpResult failure;
  };
  Slot* find(int lane, Ticket t);
  void release(Lane& lane);

  Ticket next_ = 1;
  std::map<int, Lane> lanes_;
};

}  // namespace mw
