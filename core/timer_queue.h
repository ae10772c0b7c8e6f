// The timers of one owner, as UCX's ucs/time/timerq.h keeps them for its
// event loop: added, cancelled and fired by that owner alone, which sleeps
// until next().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace mw {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = uint64_t;  // never 0

  // Adds a timer that fires at `when`.
  Id add(Clock::time_point when, std::function<void()> fire);
  // Cancelling a timer that fired or was cancelled does nothing.
  void cancel(Id id);
  // Fires, in order of due time, every timer due at `now`, also those that
  // a firing timer adds and that are due by then.
  void fireDue(Clock::time_point now);
  // When the earliest timer is due; Clock::time_point::max() when none is.
  Clock::time_point next() const {
    return by_time_.empty() ? Clock::time_point::max() : by_time_.begin()->first.first;
  }
  bool empty() const { return by_time_.empty(); }

 private:
  std::map<std::pair<Clock::time_point, Id>, std::function<void()>> by_time_;
  std::map<Id, Clock::time_point> due_;
  Id next_id_ = 1;
};

}  // namespace mw
