// Point-to-point over Gloo with sizes checked before any payload moves.
//
// Gloo's TCP transport terminates the process when a payload is larger than
// the posted receive, so every transfer carries two 16-byte announcements:
// the receiver tells the sender how much room it has, the sender tells the
// receiver how much it sends, and the payload is the smaller of the two.
// All three are posted at issue time, so a pre-posted receive lets the
// payload flow as soon as the send is issued; a mismatch fails both requests
// with InvalidArgument and leaves the world usable.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/backends/gloo/gloo_link.h"
#include "core/communicator.h"

namespace mw {

std::unique_ptr<PendingOp> postGlooSend(GlooLink& link, const void* buf, size_t bytes, int dst);
std::unique_ptr<PendingOp> postGlooRecv(GlooLink& link, void* buf, size_t bytes, int src);

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
