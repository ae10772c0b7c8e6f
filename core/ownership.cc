#include "core/ownership.h"

#include <algorithm>
#include <exception>

#include "core/log.h"

namespace mw {

void Ownership::post(std::function<void()> work) {
  if (owned()) {
    work();
    return;
  }
  bool wake = false, wake_owner = false, here = false;
  {
    std::lock_guard<std::mutex> l(m_);
    here = home_stopped_;
    if (!here) {
      posted_.push_back(std::move(work));
      maybe_posted_.store(true, std::memory_order_release);
      // An owner runs it before it lets go (one asleep once woken), and a
      // waiter that wants the state takes it soon (unwant() wakes home if
      // it does not).
      wake = owner_.load(std::memory_order_relaxed) == std::thread::id() && wanting_ == 0;
      wake_owner = owner_asleep_;
    }
  }
  if (wake_owner && wake_owner_) wake_owner_();
  if (here) {  // no home thread any more: run it here, as the owner
    acquire();
    work();
    release();
    return;
  }
  if (wake) wake_();
}

bool Ownership::waitUntil(Clock::time_point deadline, std::function<bool()> holds,
                          const std::function<void()>& turn) {
  if (owned()) {
    while (!holds()) {
      if (Clock::now() >= deadline) return false;
      turn();
    }
    return true;
  }
  Wait w{std::move(holds)};
  post([this, &w] {
    if (w.holds()) {
      finish(w.done);
    } else {
      waits_.push_back(&w);
    }
  });
  {
    std::unique_lock<std::mutex> l(m_);
    if (finished_.wait_until(l, deadline, [&] { return w.done; })) return true;
  }
  // Out of time: the owner forgets it (after the post above, which ran
  // first) and looks once more.
  return call([this, &w] {
    waits_.erase(std::remove(waits_.begin(), waits_.end(), &w), waits_.end());
    bool done;
    {
      std::lock_guard<std::mutex> l(m_);
      done = w.done;
    }
    return done || w.holds();
  });
}

bool Ownership::acquireHome(std::chrono::microseconds patience) {
  std::unique_lock<std::mutex> l(m_);
  const Clock::time_point until = Clock::now() + patience;
  ++sleepers_;
  for (;;) {
    if (home_stopped_) {
      --sleepers_;
      return false;
    }
    const bool free = owner_.load(std::memory_order_relaxed) == std::thread::id();
    if (free && (wanting_ == 0 || Clock::now() >= until)) break;
    if (free) {
      home_turn_.wait_until(l, until);
    } else {
      home_turn_.wait(l);
    }
  }
  --sleepers_;
  owner_.store(std::this_thread::get_id(), std::memory_order_release);
  return true;
}

void Ownership::acquire() {
  std::unique_lock<std::mutex> l(m_);
  ++sleepers_;
  home_turn_.wait(l, [&] { return owner_.load(std::memory_order_relaxed) == std::thread::id(); });
  --sleepers_;
  owner_.store(std::this_thread::get_id(), std::memory_order_release);
}

bool Ownership::want() {
  std::lock_guard<std::mutex> l(m_);
  ++wanting_;
  return takeIfFree();
}

void Ownership::unwant() {
  bool wake;
  {
    std::lock_guard<std::mutex> l(m_);
    --wanting_;
    const bool free = owner_.load(std::memory_order_relaxed) == std::thread::id();
    wake = wanting_ == 0 && free && !posted_.empty();
    if (wanting_ == 0 && sleepers_ > 0) home_turn_.notify_all();
  }
  if (wake) wake_();
}

bool Ownership::ownerSleeps() {
  std::lock_guard<std::mutex> l(m_);
  owner_asleep_ = posted_.empty();
  return owner_asleep_;
}

void Ownership::ownerAwake() {
  std::lock_guard<std::mutex> l(m_);
  owner_asleep_ = false;
}

bool Ownership::wanted() const {
  std::lock_guard<std::mutex> l(m_);
  return wanting_ > 0;
}

bool Ownership::tryAcquire() {
  std::lock_guard<std::mutex> l(m_);
  return takeIfFree();
}

bool Ownership::takeIfFree() {
  if (owner_.load(std::memory_order_relaxed) != std::thread::id()) return false;
  owner_.store(std::this_thread::get_id(), std::memory_order_release);
  return true;
}

bool Ownership::tryRelease() {
  std::lock_guard<std::mutex> l(m_);
  if (!posted_.empty()) return false;
  owner_.store(std::thread::id(), std::memory_order_release);
  if (sleepers_ > 0) home_turn_.notify_all();
  return true;
}

void Ownership::release() {
  while (!tryRelease()) runPosted();
}

void Ownership::logFailure(const char* what) noexcept {
  if (what) {
    MW_LOG(LogLevel::Error, "work handed to the owner failed: %s", what);
  } else {
    MW_LOG(LogLevel::Error, "work handed to the owner failed");
  }
}

void Ownership::runPosted() {
  // Missed here, work posted meanwhile is run by the next turn, or found
  // by tryRelease() under the lock before the owner lets go.
  if (!maybe_posted_.load(std::memory_order_acquire)) return;
  for (;;) {
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> l(m_);
      if (posted_.empty()) {
        maybe_posted_.store(false, std::memory_order_relaxed);
        return;
      }
      batch.swap(posted_);
    }
    for (auto& work : batch) runLogged(work);
  }
}

bool Ownership::tryTakeIdle() {
  std::lock_guard<std::mutex> l(m_);
  const bool free = owner_.load(std::memory_order_relaxed) == std::thread::id();
  if (!free || home_stopped_ || wanting_ > 0 || !posted_.empty()) return false;
  owner_.store(std::this_thread::get_id(), std::memory_order_release);
  return true;
}

void Ownership::leave() {
  checkWaits();
  bool wake;
  {
    std::lock_guard<std::mutex> l(m_);
    owner_.store(std::thread::id(), std::memory_order_release);
    // What others posted while this thread ran its own work is the home
    // thread's (or a waiter's), not this issuer's.
    wake = !posted_.empty() && wanting_ == 0;
    if (sleepers_ > 0) home_turn_.notify_all();
  }
  if (wake) wake_();
}

void Ownership::checkWaits() {
  for (size_t i = 0; i < waits_.size();) {
    Wait* w = waits_[i];
    if (w->holds()) {
      waits_.erase(waits_.begin() + static_cast<std::ptrdiff_t>(i));
      finish(w->done);
    } else {
      ++i;
    }
  }
}

void Ownership::stopHome() {
  std::lock_guard<std::mutex> l(m_);
  home_stopped_ = true;
  home_turn_.notify_all();
}

void Ownership::finish(bool& done) {
  std::lock_guard<std::mutex> l(m_);
  done = true;
  finished_.notify_all();
}

void Ownership::waitFor(const bool& done) {
  std::unique_lock<std::mutex> l(m_);
  finished_.wait(l, [&] { return done; });
}

}  // namespace mw
