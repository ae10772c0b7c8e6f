#include "core/completion_queue.h"

#include "core/readiness.h"
#include "core/request.h"

namespace mw {

void CompletionQueue::push(const std::shared_ptr<Request>& r) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (r->reported_ || r->released_ || r->queued_) return;
    r->queue_pos_ = ready_.insert(ready_.end(), r);
    r->queued_ = true;
    readiness_->added(1);
  }
  cv_.notify_one();
}

std::shared_ptr<Request> CompletionQueue::unqueue(Request& r) {
  if (!r.queued_) return nullptr;
  std::shared_ptr<Request> taken = std::move(*r.queue_pos_);
  ready_.erase(r.queue_pos_);
  r.queued_ = false;
  readiness_->removed(1);
  return taken;
}

void CompletionQueue::markReported(Request& r) {
  std::shared_ptr<Request> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(m_);
  r.reported_ = true;
  dropped = unqueue(r);
}

void CompletionQueue::release(Request& r) {
  std::shared_ptr<Request> dropped;
  std::lock_guard<std::mutex> lock(m_);
  r.released_ = true;
  dropped = unqueue(r);
}

std::vector<std::shared_ptr<Request>> CompletionQueue::pop(size_t max, std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Request>> out;
  if (max == 0) return out;
  std::unique_lock<std::mutex> lock(m_);
  if (!wake_.wait(lock, cv_, timeout, [&] { return !ready_.empty(); })) return out;
  while (!ready_.empty() && out.size() < max) {
    std::shared_ptr<Request> r = std::move(ready_.front());
    ready_.pop_front();
    r->queued_ = false;
    r->reported_ = true;
    out.push_back(std::move(r));
  }
  readiness_->removed(out.size());
  return out;
}

bool CompletionQueue::empty() {
  std::lock_guard<std::mutex> lock(m_);
  return ready_.empty();
}

void CompletionQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(m_);
    wake_.raise();
  }
  cv_.notify_all();
}

}  // namespace mw
