// Who may touch a piece of state that only one thread at a time may touch
// (a UCX worker and everything made from it), and how the others hand it
// work.
//
// At any moment at most one thread owns the state. It is the home thread
// (the engine's own thread) unless a thread that waits for a result of its
// own takes it over for a bounded spin (the hybrid wait of MPI and UCX),
// or a thread finds it free and runs its own work there (runOrPost); the
// home thread lets such a waiter go first. Every other thread posts
// closures, which the owner runs in order: post() never waits, call() waits
// for the result, waitUntil() for a condition that the owner checks.
//
// The mutex here guards only the fields below (who owns, what is posted);
// the owned state is touched outside it, by the owner alone.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mw {

class Ownership {
 public:
  using Clock = std::chrono::steady_clock;

  // `wake` tells the home thread, wherever it sleeps, that work was posted
  // while nobody owned the state. `wake_owner` tells an owner that sleeps
  // owning the state (ownerSleeps()) that work was posted. Neither may
  // block.
  explicit Ownership(std::function<void()> wake, std::function<void()> wake_owner = nullptr)
      : wake_(std::move(wake)), wake_owner_(std::move(wake_owner)) {}
  Ownership(const Ownership&) = delete;
  Ownership& operator=(const Ownership&) = delete;

  // True on the thread that owns the state now.
  bool owned() const noexcept { return owner_.load(std::memory_order_acquire) == std::this_thread::get_id(); }

  // Runs `work` on the owner, after what was posted before it; at once when
  // the caller owns. Never waits for it.
  void post(std::function<void()> work);

  // Runs `work` on the calling thread when nobody owns the state, nobody
  // waits for it and nothing posted is pending (taking it for as long as
  // `work` runs); else posts it. What the issuer of an operation calls:
  // the work starts without a hand-off to another thread. `work` must not
  // need a lock the caller holds; what it throws is logged, as posted work's.
  template <typename F>
  void runOrPost(F&& work);

  // Runs `f` on the owner and returns its result, or rethrows what it
  // threw; runs it on the spot when the caller owns.
  template <typename F>
  auto call(F&& f) -> decltype(f());

  // Waits until `holds` (run by the owner after each of its turns) is true
  // or `deadline` passed; true when it held. On the owner itself, `turn`
  // is run between checks instead.
  bool waitUntil(Clock::time_point deadline, std::function<bool()> holds, const std::function<void()>& turn);

  // The home thread: blocks until it owns the state. A waiter that wants
  // it goes first, unless it keeps the home thread out for longer than
  // `patience` (the fds it sleeps on are served only at home). False, not
  // owning, once stopHome() was called.
  bool acquireHome(std::chrono::microseconds patience);
  // A waiter announces itself before it tries, and withdraws when its spin
  // ended. want() returns tryAcquire()'s answer, under the same lock.
  bool want();
  void unwant();
  // Takes the state when nobody owns it.
  bool tryAcquire();
  // Blocks until it owns the state, for threads that act once the home
  // thread has stopped.
  void acquire();
  // Lets go, unless work was posted that the owner has not run: then it
  // keeps owning and returns false, and the owner takes another turn.
  bool tryRelease();
  // Runs what was posted until it can let go.
  void release();
  // True when a waiter wants the state: the home thread then lets go soon.
  bool wanted() const;

  // The owner is about to sleep while it keeps owning the state (a waiter
  // sleeping on the fds of what it owns): work posted from now on calls
  // `wake_owner`. False when work is posted already: the owner runs it
  // instead of sleeping.
  bool ownerSleeps();
  // The owner woke up.
  void ownerAwake();

  // The owner: runs what was posted, in order.
  void runPosted();
  // The owner: finishes the waitUntil() calls whose condition holds.
  void checkWaits();

  // acquireHome() returns false from now on; posted work then runs on the
  // poster's thread once it took the state (acquire()).
  void stopHome();

 private:
  struct Wait {
    std::function<bool()> holds;
    bool done = false;  // under m_
  };
  struct Call {
    bool done = false;  // under m_
    std::exception_ptr error;
  };

  void finish(bool& done);
  void waitFor(const bool& done);
  // Under m_: takes the state for this thread when nobody owns it.
  bool takeIfFree();
  // runOrPost(): takes the free state, and lets it go again (checking the
  // waits, and waking home for what was posted meanwhile).
  bool tryTakeIdle();
  void leave();
  // Runs work, logging what it throws: posted work reports its own
  // failures, and this only keeps the owner alive.
  template <typename F>
  static void runLogged(F& work) noexcept;
  static void logFailure(const char* what) noexcept;

  const std::function<void()> wake_;
  const std::function<void()> wake_owner_;
  mutable std::mutex m_;
  std::condition_variable home_turn_;  // the state is free for the home thread, or it stops
  std::condition_variable finished_;   // a call() or waitUntil() finished
  std::atomic<std::thread::id> owner_{};
  std::vector<std::function<void()>> posted_;  // under m_
  // Whether posted_ may hold work: written under m_, read without it by
  // the owner's runPosted(), which every spinning turn calls.
  std::atomic<bool> maybe_posted_{false};
  int wanting_ = 0;                            // under m_
  int sleepers_ = 0;                           // threads blocked in acquire*(), under m_
  bool home_stopped_ = false;                  // under m_
  bool owner_asleep_ = false;                  // under m_
  std::vector<Wait*> waits_;                   // the owner's
};

template <typename F>
void Ownership::runLogged(F& work) noexcept {
  try {
    work();
  } catch (const std::exception& e) {
    logFailure(e.what());
  } catch (...) {
    logFailure(nullptr);
  }
}

template <typename F>
void Ownership::runOrPost(F&& work) {
  if (owned()) {
    work();
    return;
  }
  if (!tryTakeIdle()) {
    post(std::function<void()>(std::forward<F>(work)));
    return;
  }
  struct Leave {
    Ownership& own;
    ~Leave() { own.leave(); }
  } leave{*this};
  runLogged(work);
}

template <typename F>
auto Ownership::call(F&& f) -> decltype(f()) {
  using R = decltype(f());
  if (owned()) return f();
  Call c;
  if constexpr (std::is_void_v<R>) {
    post([&] {
      try {
        f();
      } catch (...) {
        c.error = std::current_exception();
      }
      finish(c.done);
    });
    waitFor(c.done);
    if (c.error) std::rethrow_exception(c.error);
  } else {
    std::optional<R> result;
    post([&] {
      try {
        result.emplace(f());
      } catch (...) {
        c.error = std::current_exception();
      }
      finish(c.done);
    });
    waitFor(c.done);
    if (c.error) std::rethrow_exception(c.error);
    return std::move(*result);
  }
}

}  // namespace mw
