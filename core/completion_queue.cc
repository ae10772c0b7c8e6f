#include "core/completion_queue.h"

#include "core/request.h"

namespace mw {

void CompletionQueue::push(const std::shared_ptr<Request>& r) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (r->reported_ || r->released_ || r->queued_) return;
    r->queue_pos_ = ready_.insert(ready_.end(), r);
    r->queued_ = true;
  }
  cv_.notify_one();
}

void CompletionQueue::markReported(Request& r) {
  std::shared_ptr<Request> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(m_);
  r.reported_ = true;
  if (r.queued_) {
    dropped = std::move(*r.queue_pos_);
    ready_.erase(r.queue_pos_);
    r.queued_ = false;
  }
}

void CompletionQueue::release(Request& r) {
  std::shared_ptr<Request> dropped;
  std::lock_guard<std::mutex> lock(m_);
  r.released_ = true;
  if (r.queued_) {
    dropped = std::move(*r.queue_pos_);
    ready_.erase(r.queue_pos_);
    r.queued_ = false;
  }
}

std::vector<std::shared_ptr<Request>> CompletionQueue::pop(size_t max,
                                                          std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Request>> out;
  if (max == 0) return out;
  std::unique_lock<std::mutex> lock(m_);
  auto any = [&] { return !ready_.empty(); };
  if (timeout.count() < 0) {
    cv_.wait(lock, any);
  } else if (timeout.count() > 0) {
    cv_.wait_for(lock, timeout, any);
  }
  while (!ready_.empty() && out.size() < max) {
    std::shared_ptr<Request> r = std::move(ready_.front());
    ready_.pop_front();
    r->queued_ = false;
    r->reported_ = true;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace mw
