#include "core/timer_queue.h"

namespace mw {

TimerQueue::Id TimerQueue::add(Clock::time_point when, std::function<void()> fire) {
  const Id id = next_id_++;
  by_time_.emplace(std::make_pair(when, id), std::move(fire));
  due_.emplace(id, when);
  return id;
}

void TimerQueue::cancel(Id id) {
  auto due = due_.find(id);
  if (due == due_.end()) return;
  by_time_.erase(std::make_pair(due->second, id));
  due_.erase(due);
}

void TimerQueue::fireDue(Clock::time_point now) {
  while (!by_time_.empty() && by_time_.begin()->first.first <= now) {
    auto first = by_time_.begin();
    // Out of the queue before it runs: it may add or cancel timers.
    std::function<void()> fire = std::move(first->second);
    due_.erase(first->first.second);
    by_time_.erase(first);
    fire();
  }
}

}  // namespace mw
