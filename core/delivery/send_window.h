// The sending half of reliable delivery to one peer: messages numbered
// from 1, kept in order until the peer acknowledges them (cumulatively,
// by the last number it delivered) and no transmission of them still
// reads the caller's buffer; then they complete, oldest first.
//
// Holds no transport: its owner transmits (again, after a path change,
// whatever unacknowledged() lists) and reports acknowledgements and the
// end of each transmission. Owned by one thread (for UCX worlds, the
// engine's owner); nothing here locks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/delivery/delivery_outcome.h"

namespace mw {

class SendWindow {
 public:
  using Clock = std::chrono::steady_clock;
  // Delivered once acknowledged; GivenUp from giveUp(). It may add more.
  using Done = std::function<void(DeliveryOutcome)>;

  // One chunk of a message striped over several paths (stripe_plan.h):
  // the path it went on last, when, and whether that path's peer
  // acknowledged it (which feeds the path's meter, path_meter.h).
  struct Chunk {
    size_t path = 0;
    size_t offset = 0;
    size_t bytes = 0;
    Clock::time_point sent_at;
    bool acked = false;
  };
  struct Message {
    uint64_t seq = 0;
    uint64_t channel = 0;
    const void* buffer = nullptr;  // the caller's, until `done` runs
    size_t bytes = 0;
    Done done;
    unsigned in_flight = 0;  // transmissions the transport still holds
    bool acked = false;
    std::vector<Chunk> chunks;  // striped: in offset order; empty: whole
  };
  using MessagePtr = std::shared_ptr<Message>;

  // Numbers the message and keeps it; the caller transmits it.
  MessagePtr add(uint64_t channel, const void* buffer, size_t bytes, Done done);

  // A transmission of `m` was handed to the transport, or ended (either
  // way: a failed one is the owner's to act on).
  void transmitting(Message& m) { ++m.in_flight; }
  void transmitted(Message& m);

  // The peer delivered everything up to `seq`. False for an old or a
  // repeated acknowledgement, and for one past what was sent (nonsense
  // from the wire); nothing changes then.
  bool acknowledge(uint64_t seq);

  // What the peer has not acknowledged, in order: what goes again.
  std::vector<MessagePtr> unacknowledged() const;

  // Striping: the owner fills a message's `chunks` as it sends them. The
  // peer acknowledged the chunk at `offset` of message `seq`: that
  // chunk, for its path's meter, or null for one not known or acknowledged
  // already (late news, or nonsense from the wire).
  const Chunk* acknowledgeChunk(uint64_t seq, size_t offset);
  // The chunks on `path` the peer has not acknowledged, in order, of
  // messages it has not acknowledged whole: what goes again elsewhere when
  // the path goes down.
  struct ChunkRef {
    MessagePtr message;
    size_t index = 0;  // into message->chunks
  };
  std::vector<ChunkRef> unacknowledgedOn(size_t path) const;
  // A chunk went again, on `path`, at `now`.
  static void resent(const ChunkRef& c, size_t path, Clock::time_point now);
  // Bytes on `path` not acknowledged, and when the oldest of them was
  // sent (nullopt: none).
  size_t bytesOn(size_t path) const;
  std::optional<Clock::time_point> oldestOn(size_t path) const;

  // Ends every message kept (GivenUp), oldest first; later acknowledgements
  // of them are old news.
  void giveUp();

  bool empty() const { return kept_.empty(); }
  // Something kept is not acknowledged yet: only then is there an answer
  // to wait for. What is acknowledged and only held by a transmission
  // still in the transport (a copy on a path that went quiet) waits on
  // that path, not on the peer.
  bool awaitingAcknowledgement() const { return !kept_.empty() && !kept_.back()->acked; }
  size_t messages() const { return kept_.size(); }
  size_t bytes() const;
  uint64_t acknowledged() const { return acked_; }
  uint64_t nextSeq() const { return next_seq_; }
  // The last sign of life: the last acknowledgement or completion, a
  // message added while nothing awaited acknowledgement, or restart().
  Clock::time_point progress() const { return progress_; }
  // Starts the silence anew (after a retransmission on a new path).
  void restart() { progress_ = Clock::now(); }
  // For an operator: how many are kept and what holds the oldest.
  std::string summary() const;

 private:
  void settle();

  uint64_t next_seq_ = 1;
  uint64_t acked_ = 0;
  std::list<MessagePtr> kept_;  // in sequence order
  Clock::time_point progress_ = Clock::now();
};

}  // namespace mw
