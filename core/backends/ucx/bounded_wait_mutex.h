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
// from then on nobody else gets in before it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace mw {

class BoundedWaitMutex {
 public:
  static constexpr std::chrono::microseconds kPatience{1000};

  void lock() {
    const std::thread::id me = std::this_thread::get_id();
    if (owner_.load(std::memory_order_relaxed) == me) {
      ++depth_;
      return;
    }
    waitWhileAnyoneStarves();
    if (!inner_.try_lock()) {
      waiting_.fetch_add(1);
      if (!inner_.try_lock_for(kPatience)) {
        starving_.fetch_add(1);
        inner_.lock();
        if (starving_.fetch_sub(1) == 1) {
          std::lock_guard<std::mutex> g(gate_m_);
          gate_.notify_all();
        }
      }
      waiting_.fetch_sub(1);
    }
    owner_.store(me, std::memory_order_relaxed);
    depth_ = 1;
  }

  // Fails while the lock is held or a thread has waited past kPatience.
  bool try_lock() {
    const std::thread::id me = std::this_thread::get_id();
    if (owner_.load(std::memory_order_relaxed) == me) {
      ++depth_;
      return true;
    }
    if (starving_.load() > 0 || !inner_.try_lock()) return false;
    owner_.store(me, std::memory_order_relaxed);
    depth_ = 1;
    return true;
  }

  // Threads blocked in lock() now: a thread that would take the lock back
  // at once may let them go first.
  bool contended() const { return waiting_.load() > 0; }

  void unlock() {
    if (--depth_ > 0) return;
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    inner_.unlock();
  }

 private:
  void waitWhileAnyoneStarves() {
    if (starving_.load() == 0) return;
    std::unique_lock<std::mutex> g(gate_m_);
    gate_.wait(g, [this] { return starving_.load() == 0; });
  }

  std::timed_mutex inner_;
  std::atomic<std::thread::id> owner_{};
  int depth_ = 0;                // the owner's alone
  std::atomic<int> waiting_{0};   // threads blocked in lock()
  std::atomic<int> starving_{0};  // of those, the ones that waited past kPatience
  std::mutex gate_m_;
  std::condition_variable gate_;  // starving_ fell to 0
};

}  // namespace mw
