// Point-to-point over Gloo with sizes checked before any payload can land.
//
// Gloo's TCP transport terminates the process when a payload is larger than
// the posted receive, so a payload only ever travels on a slot that names
// both its sequence number on the pair and its exact byte size: a send and
// a recv of equal size meet on the same slot and the payload flows as soon
// as both are issued; a send and a recv of different sizes never meet.
//
// One message is two transfers, both posted at issue: the payload, then a
// 16-byte header naming its size on a FIFO slot. The receiver waits for the
// header (which travels right behind the payload, so one wake-up usually
// finds both) and so learns of a mismatch. Then it sends the sender a NACK
// naming its own size, drains the sender's payload into scratch, and waits
// for the filler that the sender, on seeing the NACK, puts on the
// receiver's slot: every slot carries exactly one message, both requests
// fail with InvalidArgument, and the world stays usable. The NACK is sent
// before the drain is posted, so by the time the sender's payload has gone
// out the NACK, if any, has arrived; the matching case never sends one.
//
// Everything a peer waits for is posted at issue time, never by a lane, so
// two lanes each running a recv can never wait on each other.
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

// The point-to-point state of one world on this rank: per peer, message
// counts in each direction and the NACK receive that stays posted.
class GlooP2p {
 public:
  explicit GlooP2p(GlooLink& link);
  ~GlooP2p();

  // On the issuing thread, in issue order.
  std::unique_ptr<PendingOp> postSend(const void* buf, size_t bytes, int dst);
  std::unique_ptr<PendingOp> postRecv(void* buf, size_t bytes, int src);

  struct Peer;

 private:
  GlooLink& link_;
  std::vector<std::shared_ptr<Peer>> peers_;  // by rank; null for this rank
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
