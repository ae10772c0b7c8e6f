#include "core/event_queue.h"

namespace mw {

void EventQueue::push(Event e) {
  Event dropped;  // destroyed outside the lock: it may hold the last world reference
  {
    std::lock_guard<std::mutex> lock(m_);
    if (events_.size() >= kCapacity) {
      dropped = std::move(events_.front());
      events_.pop_front();
    }
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

std::optional<Event> EventQueue::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  auto any = [&] { return !events_.empty(); };
  if (timeout.count() < 0) {
    cv_.wait(lock, any);
  } else if (!cv_.wait_for(lock, timeout, any)) {
    return std::nullopt;
  }
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

}  // namespace mw
