#include "core/event_queue.h"

#include "core/readiness.h"

namespace mw {

void EventQueue::push(Event e) {
  Event dropped;  // destroyed outside the lock: it may hold the last world reference
  {
    std::lock_guard<std::mutex> lock(m_);
    if (events_.size() >= kCapacity) {
      dropped = std::move(events_.front());
      events_.pop_front();
      if (dropped_) dropped_->add();
    } else {
      readiness_.added(1);
    }
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

std::optional<Event> EventQueue::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  if (!wake_.wait(lock, cv_, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  readiness_.removed(1);
  return e;
}

void EventQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(m_);
    wake_.raise();
  }
  cv_.notify_all();
}

}  // namespace mw
