#include "core/backends/gloo/gloo_abortable.h"

#include <gloo/common/error.h>

#include <utility>
#include <vector>

namespace mw {

// One of Gloo's buffers, known to the registry while it lives.
class AbortableBuffer : public gloo::transport::UnboundBuffer {
 public:
  AbortableBuffer(std::unique_ptr<gloo::transport::UnboundBuffer> inner, std::shared_ptr<AbortableBuffers> buffers)
      : gloo::transport::UnboundBuffer(inner->ptr, inner->size), inner_(std::move(inner)), buffers_(std::move(buffers)) {
    buffers_->add(inner_.get());
  }
  ~AbortableBuffer() override { buffers_->remove(inner_.get()); }

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override {
    refuseIfAborted();
    const bool done = inner_->waitRecv(rank, timeout);
    if (!done) refuseIfAborted();
    return done;
  }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override {
    refuseIfAborted();
    const bool done = inner_->waitSend(rank, timeout);
    if (!done) refuseIfAborted();
    return done;
  }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int dst, uint64_t slot, size_t offset, size_t nbytes) override { inner_->send(dst, slot, offset, nbytes); }
  void recv(int src, uint64_t slot, size_t offset, size_t nbytes) override { inner_->recv(src, slot, offset, nbytes); }
  void recv(std::vector<int> srcs, uint64_t slot, size_t offset, size_t nbytes) override {
    inner_->recv(std::move(srcs), slot, offset, nbytes);
  }

 private:
  void refuseIfAborted() const {
    if (buffers_->aborted()) throw gloo::IoException("the world was aborted");
  }

  const std::unique_ptr<gloo::transport::UnboundBuffer> inner_;
  const std::shared_ptr<AbortableBuffers> buffers_;
};

void AbortableBuffers::abort() {
  std::lock_guard<std::mutex> lock(m_);
  aborted_ = true;
  // A buffer's own lock is taken inside; none of them calls back here.
  for (gloo::transport::UnboundBuffer* b : alive_) {
    b->abortWaitSend();
    b->abortWaitRecv();
  }
}

bool AbortableBuffers::aborted() const {
  std::lock_guard<std::mutex> lock(m_);
  return aborted_;
}

void AbortableBuffers::add(gloo::transport::UnboundBuffer* inner) {
  std::lock_guard<std::mutex> lock(m_);
  alive_.insert(inner);
}

void AbortableBuffers::remove(gloo::transport::UnboundBuffer* inner) {
  std::lock_guard<std::mutex> lock(m_);
  alive_.erase(inner);
}

AbortableTransport::AbortableTransport(std::shared_ptr<gloo::transport::Context> inner,
                                       std::shared_ptr<AbortableBuffers> buffers)
    : gloo::transport::Context(inner->rank, inner->size), inner_(std::move(inner)), buffers_(std::move(buffers)) {
  setTimeout(inner_->getTimeout());
}

std::unique_ptr<gloo::transport::UnboundBuffer> AbortableTransport::createUnboundBuffer(void* ptr, size_t size) {
  return std::make_unique<AbortableBuffer>(inner_->createUnboundBuffer(ptr, size), buffers_);
}

}  // namespace mw
