// Point-to-point over Gloo with sizes checked before any payload can land.
//
// Gloo's TCP transport terminates the process when a payload is larger than
// the posted receive, so a payload only ever travels on a slot that names
// both its sequence number on the pair and its exact byte size: a send and
// a recv of equal size meet on the same slot and the payload flows as soon
// as both are issued; a send and a recv of different sizes never meet.
// Each side also announces its size (16 bytes on a FIFO slot), so on a
// mismatch the sender feeds the receiver's slot a filler and the receiver
// drains the sender's slot: every slot carries exactly one message, both
// requests fail with InvalidArgument, and the world stays usable.
//
// Everything a peer waits for is posted at issue time, never by the worker,
// so two workers each running a recv can never wait on each other.
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

// `seq` counts this pair's messages in one direction, from 0, in issue order.
std::unique_ptr<PendingOp> postGlooSend(GlooLink& link, const void* buf, size_t bytes, int dst, uint64_t seq);
std::unique_ptr<PendingOp> postGlooRecv(GlooLink& link, void* buf, size_t bytes, int src, uint64_t seq);

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
