// Point-to-point over Gloo with sizes checked before any payload can land.
//
// Gloo's TCP transport terminates the process when a payload is larger than
// the posted receive (a smaller one it takes), so every message starts with
// one transfer on a FIFO slot whose receive is always kHeaderRoom bytes: a
// 16-byte header naming the sender's size, followed, for a message of at
// most kEagerBytes, by the payload itself (copied through a staging buffer
// on both sides; one transfer per message, like raw Gloo). A larger payload
// follows zero-copy on a slot that names its sequence number on the pair and
// its exact size, and the receiver posts that receive into the caller's
// buffer only once the header showed that the sizes agree. Headers arrive
// as soon as both sides issued, so the receive lane, whenever it looks,
// posts the data receives of every queued receive whose header is in:
// large messages stream with as many payloads in flight as are issued.
//
// On a mismatch the receiver drains a large payload into scratch: every slot
// carries exactly one message, the recv fails with InvalidArgument naming
// both sizes, the send succeeds (as in MPI), and the world stays usable.
//
// Everything a receiver waits for is posted by the sender at issue time and
// written by Gloo's own thread, so a receive lane never waits on a lane of
// the peer.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/backends/gloo/gloo_link.h"
#include "core/communicator.h"

namespace mw {

// Bytes one send or recv may move: the size must fit in the slot.
constexpr uint64_t kMaxP2pBytes = (uint64_t{1} << 36) - 1;
// Messages up to this size travel inside their header transfer. Every
// posted receive holds a staging buffer of this size plus the header.
constexpr size_t kEagerBytes = 64 << 10;

// The point-to-point state of one world on this rank: per peer, the
// messages issued in each direction and the receives whose header is out.
class GlooP2p {
 public:
  explicit GlooP2p(GlooLink& link);
  ~GlooP2p();

  // On the issuing thread, in issue order.
  std::unique_ptr<PendingOp> postSend(const void* buf, size_t bytes, int dst);
  std::unique_ptr<PendingOp> postRecv(void* buf, size_t bytes, int src);

  class Inbox;
  class StagingPool;

 private:
  GlooLink& link_;
  std::vector<uint64_t> sent_to_, received_from_;
  std::vector<std::shared_ptr<Inbox>> inboxes_;  // by source rank
  std::shared_ptr<StagingPool> staging_;
};

// Send and recv to this process's own rank: Gloo has no pair to self.
// Matching happens at issue time so a send and a recv issued in either
// order never wait on each other in the world's queue.
class SelfChannel {
 public:
  std::unique_ptr<PendingOp> postSend(const void* buf, size_t bytes);
  std::unique_ptr<PendingOp> postRecv(void* buf, size_t bytes);
  void abort();

  struct Slot;  // one recv waiting for its data

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::deque<std::vector<char>> unclaimed_;       // sends nobody received yet
  std::deque<std::shared_ptr<Slot>> waiting_;     // recvs nobody sent to yet
  friend class SelfRecv;
};

}  // namespace mw
