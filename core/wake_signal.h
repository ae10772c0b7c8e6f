// mw_context_wake for one queue's blocking waits: every wait blocked when
// the wake comes returns, and a wake that finds none blocked is kept for
// the next blocking wait, so a wake sent just before a thread blocks is
// not lost (an eventfd's semantics, without the fd).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace mw {

class WakeSignal {
 public:
  // Under the queue's lock; then notify_all on the queue's condition.
  void raise() {
    ++generation_;
    pending_ = true;
  }

  // Under `lock`: waits on `cv` up to `timeout` (negative: forever; zero:
  // only looks) until `ready()` holds or a wake comes. True when ready().
  template <typename Ready>
  bool wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, std::chrono::milliseconds timeout,
            Ready ready) {
    if (ready()) return true;
    if (timeout.count() == 0) return false;
    if (pending_) {
      pending_ = false;
      return false;
    }
    const uint64_t seen = generation_;
    auto done = [&] { return ready() || generation_ != seen; };
    if (timeout.count() < 0) {
      cv.wait(lock, done);
    } else {
      cv.wait_for(lock, timeout, done);
    }
    if (ready()) return true;
    if (generation_ != seen) pending_ = false;
    return false;
  }

 private:
  uint64_t generation_ = 0;
  bool pending_ = false;
};

}  // namespace mw
