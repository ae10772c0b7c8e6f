// A recursive mutex in which no thread waits long behind threads that
// unlock and lock again at once.
//
// The UCX engine's lock is taken by the progress thread, by every thread
// that issues (each submit also progresses arrivals), and by the watchdog
// when it breaks a world. With an ordinary mutex a thread that unlocks and
// locks again wins nearly every time: under a stream of traffic one
// issuing thread kept the watchdog waiting for over a second, and its
// heartbeat expired while it was alive. A lock handed over strictly in
// turn costs the data plane a thread wake-up at every change of hands
// (16 KiB ping-pong latency 7.4 -> 25 us), so, as Go's sync.Mutex does,
// threads may take the lock out of turn until one has waited `kPatience`;
// from then on only threads that waited that long get it.
//
// Built on a std::mutex and a condition variable (not std::timed_mutex,
// whose timed wait ThreadSanitizer does not see as an acquisition).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace mw {

class BoundedWaitMutex {
 public:
  static constexpr std::chrono::microseconds kPatience{1000};

  void lock() {
    const std::thread::id me = std::this_thread::get_id();
    std::unique_lock<std::mutex> l(m_);
    if (owner_ == me) {
      ++depth_;
      return;
    }
    if (held() || starving(deadlines_.end())) {
      // A waiter whose patience ran out counts as starving from its
      // deadline on, whether or not it has run since: the holder that lets
      // go must not take the lock back before the waiter is scheduled.
      const auto mine = deadlines_.insert(std::chrono::steady_clock::now() + kPatience);
      waiting_.fetch_add(1);
      for (;;) {
        const bool patient = std::chrono::steady_clock::now() < *mine;
        if (!held() && (!patient || !starving(mine))) break;
        if (patient) {
          turn_.wait_until(l, *mine);
        } else {
          turn_.wait(l);
        }
      }
      waiting_.fetch_sub(1);
      deadlines_.erase(mine);
    }
    owner_ = me;
    depth_ = 1;
  }

  // Fails while the lock is held or a thread has waited past kPatience.
  bool try_lock() {
    const std::thread::id me = std::this_thread::get_id();
    std::lock_guard<std::mutex> l(m_);
    if (owner_ == me) {
      ++depth_;
      return true;
    }
    if (held() || starving(deadlines_.end())) return false;
    owner_ = me;
    depth_ = 1;
    return true;
  }

  // Notifies before letting go of m_: the thread that gets the lock next
  // may destroy this mutex as soon as it can, and nothing here may touch
  // it afterwards.
  void unlock() {
    std::lock_guard<std::mutex> l(m_);
    if (--depth_ > 0) return;
    owner_ = std::thread::id();
    if (waiting_.load() > 0) turn_.notify_all();
  }

  // Threads blocked in lock() now: a thread that would take the lock back
  // at once may let them go first.
  bool contended() const { return waiting_.load() > 0; }

 private:
  using Deadlines = std::multiset<std::chrono::steady_clock::time_point>;

  bool held() const { return owner_ != std::thread::id(); }  // under m_
  // A waiter other than `self` waited past kPatience (under m_).
  bool starving(Deadlines::const_iterator self) const {
    if (deadlines_.empty()) return false;
    auto first = deadlines_.begin();
    if (first == self) ++first;
    return first != deadlines_.end() && *first <= std::chrono::steady_clock::now();
  }

  std::mutex m_;  // guards the fields below but waiting_
  std::condition_variable turn_;
  std::thread::id owner_;  // none: free
  int depth_ = 0;
  Deadlines deadlines_;          // when each waiter's patience ends
  std::atomic<int> waiting_{0};  // threads blocked in lock()
};

}  // namespace mw
