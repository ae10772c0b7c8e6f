// The receiving half of reliable delivery from one peer: every message
// numbered by the peer's send_window.h is delivered exactly once, in
// sequence order, whatever order and however often the transport brings
// it; delivered messages are matched to receives by channel, oldest
// receive first, as tag matching would.
//
// Holds no transport. An arrival is whole (the transport's eager
// protocol), or one chunk of a message striped over several paths
// (stripe_plan.h). A whole arrival's bytes are copied at once when a
// receive waits for them; else they are kept, either held in memory the
// transport lends (given back through the Release function) or copied.
//
// A striped message is bound to the receive it will complete as soon as
// that is known: when every message between the last delivered and it
// has announced its channel (a whole arrival, or any chunk), and enough
// receives are posted on its channel for it and for those ahead of it
// there. From then on its chunks are written straight into that receive
// at their offsets, with no reassembly copy; chunks that came before are
// kept as whole arrivals are, and copied in once it is bound. A bound
// receive can no longer be cancelled. A striped message that is complete
// and next in order while unbound waits as one copy, as a whole one would.
//
// Owned by one thread (for UCX worlds, the engine's owner); nothing here
// locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "core/delivery/chunk_assembly.h"
#include "core/delivery/delivery_outcome.h"

namespace mw {

class ReceiveOrder {
 public:
  // Delivered or Truncated with the sender's length, Lent with the
  // descriptor's, or GivenUp with 0.
  // It may post or cancel receives.
  using Done = std::function<void(DeliveryOutcome, size_t length)>;
  // Gives back `data` (`length` bytes), lent by `lender` (see arrive()).
  using Release = void (*)(void* lender, const char* data, size_t length);

  explicit ReceiveOrder(Release release = nullptr) : release_(release) {}
  // Gives back what it keeps; nothing is called back.
  ~ReceiveOrder() { releaseAll(); }
  ReceiveOrder(ReceiveOrder&&) = default;
  ReceiveOrder& operator=(ReceiveOrder&&) = default;

  enum class Taken {
    Duplicate,  // already here: only its acknowledgement was lost
    Copied,     // delivered, or copied to wait; `data` is free again
    Held,       // waits in `data`, lent by `lender`, until released
    Refused,    // a chunk no sender could have sent: nothing changed
  };
  // Message `seq` on `channel`. With a `lender`, the transport lets this
  // keep `data` until it is released; without, it is copied if it waits.
  // `lent`: `data` is the descriptor of a message the sender lends, and its
  // receive ends Lent. `note` (not 0) goes to the matched hook once a
  // receive took the message.
  Taken arrive(uint64_t seq, uint64_t channel, const char* data, size_t length, void* lender, bool lent = false,
               uint64_t note = 0);
  // Chunk [offset, offset + length) of message `seq` on `channel`, of
  // `total` bytes in all; `data` and `lender` as for arrive(). Refused
  // when it contradicts what earlier chunks of `seq` said (another channel
  // or total, an overlap) or falls outside the message.
  Taken arriveChunk(uint64_t seq, uint64_t channel, size_t total, size_t offset, const char* data, size_t length,
                    void* lender);
  // Called with an arrival's note when a receive takes it.
  void onMatched(std::function<void(uint64_t note)> matched) { matched_ = std::move(matched); }
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
  // What arrived and waits, in order or early, is dropped; a receive bound
  // to a striped message that can no longer complete ends (GivenUp).
  void dropArrivals();
  // Every receive still posted or bound ends (GivenUp).
  void giveUp();

 private:
  struct Arrival {
    uint64_t channel = 0;
    const char* data = nullptr;
    size_t length = 0;
    void* lender = nullptr;
    bool lent = false;
    uint64_t note = 0;
    std::vector<char> copy;
  };
  struct Posted {
    uint64_t id = 0;
    void* buffer = nullptr;
    size_t bytes = 0;
    Done done;
  };

  // A striped message not delivered yet.
  struct Striped {
    Striped(uint64_t c, size_t total) : channel(c), assembly(total) {}
    uint64_t channel;
    ChunkAssembly assembly;
    bool bound = false;
    Posted receive;                    // once bound
    std::map<size_t, Arrival> chunks;  // kept until bound, by offset
  };

  // Delivers `a`, the next in order: to the oldest receive on its channel,
  // else it waits there.
  void next(Arrival a);
  // Delivers what is next in order and complete, whole or striped.
  void advance();
  // Binds every striped message whose receive is known now.
  void bindStriped();
  void bind(Striped& m, Posted r);
  // Writes a chunk into the receive of the bound `m`.
  static void place(const Striped& m, size_t offset, const char* data, size_t length);
  void keep(Arrival& a, const char* data, void* lender);
  void release(Arrival& a);
  void releaseAll();
  // Ends the receives bound to striped messages (GivenUp) and drops those
  // messages.
  void endStriped();

  Release release_ = nullptr;
  std::function<void(uint64_t)> matched_;
  uint64_t delivered_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, uint64_t> channel_of_;  // a posted receive's id: its channel
  std::map<uint64_t, Arrival> early_;  // by sequence number
  std::map<uint64_t, Striped> striped_;  // by sequence number, not delivered
  // By channel. A channel's queue goes once empty: collectives take a new
  // channel for each operation, so kept they would grow with every
  // operation a world ever ran.
  std::map<uint64_t, std::deque<Posted>> posted_;
  std::map<uint64_t, std::deque<Arrival>> waiting_;
};

}  // namespace mw
