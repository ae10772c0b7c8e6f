// The receiving half of reliable delivery from one peer: every message
// numbered by the peer's send_window.h is delivered exactly once, in
// sequence order, whatever order and however often the transport brings
// it; delivered messages are matched to receives by channel, oldest
// receive first, as tag matching would.
//
// Holds no transport. An arrival is whole (the transport's eager
// protocol). Its bytes are copied at once when a receive waits for them;
// else into an ArrivalCopy (arrival_copy.h), so that the transport's
// buffer is free again when arrive() returns. Nothing bounds what waits:
// a peer streams as long as this side acknowledges, as eager messages do.
// Owned by one thread (for UCX worlds, the engine's owner); nothing here
// locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "core/delivery/arrival_copy.h"
#include "core/delivery/delivery_outcome.h"

namespace mw {

class ReceiveOrder {
 public:
  // Delivered or Truncated with the sender's length, or GivenUp with 0.
  // It may post or cancel receives.
  using Done = std::function<void(DeliveryOutcome, size_t length)>;

  ReceiveOrder() = default;
  ReceiveOrder(ReceiveOrder&&) = default;
  ReceiveOrder& operator=(ReceiveOrder&&) = default;

  enum class Taken {
    Duplicate,  // already here: only its acknowledgement was lost
    Copied,     // delivered, or copied to wait; `data` is free again
  };
  // Message `seq` on `channel`. Throws std::bad_alloc when no memory is
  // left for a copy.
  Taken arrive(uint64_t seq, uint64_t channel, const char* data, size_t length);
  // Every message up to this one was delivered: what an acknowledgement
  // carries.
  uint64_t delivered() const { return delivered_; }

  // A receive of up to `bytes` on `channel`. 0 when a message was
  // waiting and `done` already ran; else an id for cancel().
  uint64_t post(uint64_t channel, void* buffer, size_t bytes, Done done);
  // A receive nothing matched yet: removed, and its `done` runs (GivenUp).
  // False for an id that ended or never was.
  bool cancel(uint64_t id);
  // A delivered message on `channel` waits for a receive.
  bool waiting(uint64_t channel) const;
  // What arrived and waits, in order or early, is dropped.
  void dropArrivals();
  // Every receive still posted ends (GivenUp).
  void giveUp();

 private:
  struct Arrival {
    uint64_t channel = 0;
    const char* data = nullptr;  // the transport's, or copy's
    size_t length = 0;
    ArrivalCopy copy;
  };
  struct Posted {
    uint64_t id = 0;
    void* buffer = nullptr;
    size_t bytes = 0;
    Done done;
  };

  // Delivers `a`, the next in order: to the oldest receive on its channel,
  // else it waits there.
  void next(Arrival a);
  static void keep(Arrival& a, const char* data);

  uint64_t delivered_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, uint64_t> channel_of_;  // a posted receive's id: its channel
  std::map<uint64_t, Arrival> early_;  // by sequence number
  // By channel. A channel's queue goes once empty: collectives take a new
  // channel for each operation, so kept they would grow with every
  // operation a world ever ran.
  std::map<uint64_t, std::deque<Posted>> posted_;
  std::map<uint64_t, std::deque<Arrival>> waiting_;
};

}  // namespace mw
