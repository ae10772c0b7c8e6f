// A Gloo TCP unbound buffer whose finished transfers can be taken without
// waiting.
//
// Gloo's own waits cannot be used to poll: a wait that times out fails every
// pair of its context. Its completion counters, though, live under the
// buffer's own mutex, which a subclass may take. A transfer that already
// finished while it was being posted (Gloo writes a send in the posting
// thread when the peer's receive is already there) can then complete on the
// issuing thread, with no hand-off to a lane and no thread woken.
#pragma once

#include <memory>
#include <mutex>

#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/unbound_buffer.h>

namespace mw {

class GlooBuffer : public gloo::transport::tcp::UnboundBuffer {
 public:
  GlooBuffer(const std::shared_ptr<gloo::transport::tcp::Context>& ctx, void* ptr, size_t size)
      : gloo::transport::tcp::UnboundBuffer(ctx, ptr, size) {}
  // A pair that fails signals its buffers from Gloo's device thread, each
  // under the buffer's mutex; taking the mutex here lets a signal under way
  // finish, and orders one that finished, before the buffer's condition
  // variables go. (Gloo holds no reference that keeps a buffer alive, so a
  // pair that only starts failing while its buffer is destroyed remains
  // Gloo's to order.)
  ~GlooBuffer() override { std::lock_guard<std::mutex> lock(m_); }

  // Consumes one finished recv (send) when there is one, as waitRecv
  // (waitSend) would have; false when none has finished. A transfer that
  // finished before its pair failed still counts; otherwise throws Gloo's
  // error when the pair failed. The buffer's mutex orders the payload the
  // device thread wrote before the caller reads it.
  bool takeRecv() { return take(recvCompletions_); }
  bool takeSend() { return take(sendCompletions_); }

 private:
  bool take(int& completions) {
    std::lock_guard<std::mutex> lock(m_);
    if (completions == 0) {
      throwIfException();
      return false;
    }
    --completions;
    return true;
  }
};

}  // namespace mw
