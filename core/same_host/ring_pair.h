// The two rings between a member and one peer of its host in one world:
// the one it writes (RingWriter) and the one the peer writes and it reads
// (RingReader), with what the transport needs around them: sends that
// found the ring full wait in order (the backlog), and arrivals are
// matched to receives by channel, oldest first, as tag matching would
// (core/delivery/receive_order.h).
//
// A message goes whole into the ring or waits; one of same_host_min_bytes
// or more is lent (core/same_host/cma.h) and only its descriptor goes, so
// every message the ring carries fits it. A goodbye goes after everything
// sent before it.
//
// Holds no thread and never sleeps: the owner (the engine's owner, for UCX
// worlds) calls progress() when the reader's wake fd or the writer's space
// fd fires, or while it spins. Nothing here locks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "core/delivery/receive_order.h"
#include "core/same_host/ring.h"

namespace mw::samehost {

class RingPair {
 public:
  using SendDone = std::function<void(DeliveryOutcome)>;
  using RecvDone = ReceiveOrder::Done;

  // Creates the ring this member writes (`capacity` bytes; see RingWriter).
  explicit RingPair(uint64_t capacity);
  // Callbacks still pending are dropped: giveUp() first runs them.
  ~RingPair();
  RingPair(const RingPair&) = delete;
  RingPair& operator=(const RingPair&) = delete;

  // What the peer takes to read this member's ring.
  RingFds offer() const { return writer_.fds(); }
  // Takes the peer's ring out of its process; throws as RingReader does.
  void attach(int peer_pidfd, const RingFds& theirs);
  bool attached() const { return reader_ != nullptr; }
  // The largest message send() takes.
  size_t maxMessage() const { return writer_.maxMessage(); }

  // Sends `bytes` of `data` on `channel` (below 2^32). `lent`: `data` is a
  // descriptor. `marker` (below 2^24, not 0): the peer's matched hook gets
  // it once a receive took the message. Written into the ring now, `done`
  // (Delivered) runs before this returns; else the send waits, behind any
  // send before it, and the caller's `data` must stay until `done`. What
  // the ring cannot carry fails (GivenUp) at once.
  void send(uint64_t channel, const void* data, size_t bytes, bool lent, SendDone done, uint32_t marker = 0);
  // Called with the marker of a message of the peer's once a receive here
  // took it.
  void onMatched(std::function<void(uint32_t marker)> matched) { matched_ = std::move(matched); }
  // A word for the peer's word hook (a control word of the transport),
  // behind every send before it; dropped when the ring is given up or
  // after the goodbye.
  void sendWord(uint64_t word);
  void onWord(std::function<void(uint64_t word)> word) { word_ = std::move(word); }
  // After every send so far: tells the peer this member left. Sends
  // after it fail (GivenUp).
  void sendBye();
  // A receive on `channel`; 0 when it ended inside the call, else an id
  // for cancelRecv().
  uint64_t recv(uint64_t channel, void* buffer, size_t bytes, RecvDone done);
  bool cancelRecv(uint64_t id) { return order_.cancel(id); }
  bool arrived(uint64_t channel) const { return order_.waiting(channel); }

  // Moves what can move: waiting sends into the ring, arrivals to their
  // receives. True when anything moved. Stops at a corrupt ring.
  bool progress();
  // The peer's goodbye came: what it sent before is delivered or waits.
  bool byeSeen() const { return bye_seen_; }
  // Sends wait for room: spaceFd() says when there is.
  bool backlogged() const { return !backlog_.empty() || bye_pending_; }
  int spaceFd() const { return writer_.spaceFd(); }
  // Before the owner sleeps: asks for a wake on wakeFd(), and, while sends
  // wait, on spaceFd() once the first fits. False when a message came or
  // room was made meanwhile. After waking: disarmWake(); the owner reads
  // wakeFd() and spaceFd() itself when they fire.
  bool armWake();
  void disarmWake();
  int wakeFd() const;
  // Why the peer's ring (or its reading of ours) cannot be trusted, "" if
  // it can.
  const std::string& failure() const { return failure_; }

  // The peer is gone: every waiting send ends (GivenUp) and nothing more
  // is sent; what it sent can still be received.
  void abandonSends();
  // The world is going: every waiting send and posted receive ends
  // (GivenUp), and nothing more is sent or read.
  void giveUp();

 private:
  struct Waiting {
    uint64_t tag;
    const void* data;
    size_t bytes;
    SendDone done;
    uint64_t word = 0;  // a word's own copy: `data` points here once it waits
  };
  // The ring's tag: the channel below bit 32, a marker from bit 32, flags
  // in the top byte.
  static constexpr uint64_t kChannelMask = 0xffffffffull;
  static constexpr int kMarkerShift = 32;
  static constexpr uint64_t kMarkerMask = 0xffffffull << kMarkerShift;
  static constexpr uint64_t kLentFlag = 1ull << 56;
  static constexpr uint64_t kByeTag = 2ull << 56;
  static constexpr uint64_t kWordTag = 3ull << 56;
  static constexpr uint64_t kFlagMask = 0xffull << 56;
  bool flush();  // the backlog into the ring: true when anything went
  // A send just found the ring full: the reader signals spaceFd() once the
  // first waiting one fits, so the backlog moves on even when the thread
  // that sent it never polls again (mw-ucx may sleep meanwhile). Polling
  // owners ask again only before they sleep (armWake).
  void askForRoom();
  // True when nothing waits to be sent (or nothing can go any more), or
  // the reader was asked to signal once the first waiting send fits;
  // false when it fits now.
  bool roomAsked();
  bool drain();  // the peer's ring to the receives: true when anything came

  RingWriter writer_;
  std::unique_ptr<RingReader> reader_;
  ReceiveOrder order_;
  uint64_t arrivals_ = 0;  // the sequence number ReceiveOrder wants
  std::deque<Waiting> backlog_;
  bool bye_asked_ = false;    // sendBye() ran: nothing more is sent
  bool bye_pending_ = false;  // and the goodbye is not in the ring yet
  bool bye_seen_ = false;
  bool given_up_ = false;
  bool sends_abandoned_ = false;
  std::string failure_;
  std::function<void(uint32_t)> matched_;
  std::function<void(uint64_t)> word_;
};

}  // namespace mw::samehost
