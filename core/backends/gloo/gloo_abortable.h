// The transport context Gloo's own algorithms (gloo::allreduce and the
// rest) make their buffers through, wrapped so that an abort reaches the
// waits inside them.
//
// An abort fails every pair of the world's TCP context (a receive that
// times out signals them all, GlooCommunicator::abort), and a failed pair
// wakes the waits of its bound buffers and of its pending unbound
// operations. It does not wake an unbound buffer whose send it is still
// writing (tcp::Pair::signalException skips the `ubuf` of its queued
// operations, in the Gloo Debian 12 ships and upstream still): a send to a
// member that stopped reading, its socket full, then waits for the
// algorithm's own timeout, which without op_timeout_ms is ten years, and
// the lane that runs it never returns. So every buffer made here is known
// to an AbortableBuffers, whose abort() interrupts each one's waits; a
// wait interrupted so, or begun after the abort, throws gloo::IoException,
// which ends the algorithm as a failed pair would.
//
// Thread-safe: buffers are made and waited on by the world's lanes, and
// aborted from whichever thread breaks the world.
#pragma once

#include <gloo/transport/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <memory>
#include <mutex>
#include <set>

namespace mw {

class AbortableBuffers {
 public:
  // Interrupts every wait of every buffer alive, and every later one.
  void abort();
  bool aborted() const;

 private:
  friend class AbortableBuffer;
  void add(gloo::transport::UnboundBuffer* inner);
  void remove(gloo::transport::UnboundBuffer* inner);

  mutable std::mutex m_;
  bool aborted_ = false;
  std::set<gloo::transport::UnboundBuffer*> alive_;
};

class AbortableTransport : public gloo::transport::Context {
 public:
  AbortableTransport(std::shared_ptr<gloo::transport::Context> inner, std::shared_ptr<AbortableBuffers> buffers);

  std::unique_ptr<gloo::transport::Pair>& getPair(int rank) override { return inner_->getPair(rank); }
  std::unique_ptr<gloo::transport::Pair>& createPair(int rank) override { return inner_->createPair(rank); }
  std::unique_ptr<gloo::transport::UnboundBuffer> createUnboundBuffer(void* ptr, size_t size) override;

 private:
  const std::shared_ptr<gloo::transport::Context> inner_;
  const std::shared_ptr<AbortableBuffers> buffers_;
};

}  // namespace mw
