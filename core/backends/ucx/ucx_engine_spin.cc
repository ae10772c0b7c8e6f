// The hybrid wait of MPI and UCX: an application thread that waits for a
// result of its own owns the engine and drives it for a bounded spin,
// then sleeps on the workers' fds, still owning it, as a raw progress loop
// does; so a message it waits for is not handed across threads. Only
// after kOwnerSleep does it hand the engine to mw-ucx and sleep on its
// request. See the top of ucx_engine.h.
#include <sys/epoll.h>

#include <unistd.h>

#include <algorithm>

#include "core/backends/ucx/ucx_engine.h"

namespace mw {
namespace {

// How long a waiter drives a transfer that keeps moving, at most.
constexpr std::chrono::microseconds kSpinCap{1000};
// How long a waiter that ran out of spin sleeps owning the engine, at
// most: pidfds and watched sockets are served by mw-ucx alone, which waits
// that long for the engine (as for a spinning waiter, see run()).
constexpr std::chrono::microseconds kOwnerSleep{1000};
// Beside the same-host rings, workers that had nothing to do are
// progressed on every kIdleWorkerTurns-th turn of a spin only: UCX 1.13's
// tcp progress is an epoll_wait on its sockets, several times the cost of
// a look at a ring, and a ring's next message would wait behind it.
constexpr unsigned kIdleWorkerTurns = 16;
// The clock is read, and timers fired, on every kClockTurns-th turn.
constexpr unsigned kClockTurns = 8;

}  // namespace

bool UcxEngine::spinUntil(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) {
  if (done()) return true;
  // Crowded, a waiter sleeps on its request at once, as with spin_us=0:
  // mw-ucx drives, and this thread's CPU goes to the other processes.
  if (spin_.count() <= 0 || down_ || crowded()) return false;
  // The spin counts the time UCX does nothing: a transfer that keeps
  // moving (a rendezvous, a large message) is driven here, for up to
  // kSpinCap, rather than handed to mw-ucx midway.
  const auto start = std::chrono::steady_clock::now();
  const auto cap = std::min(deadline, start + std::max<std::chrono::microseconds>(spin_, kSpinCap));
  auto end = std::min(cap, start + spin_);
  const bool nested = own_.owned();  // a callback of ours waits: we own it already
  bool mine = nested;
  if (!nested) {
    noteApplication(start);
    mine = own_.want();
    spinnerStarted();
  }
  bool result = false;
  bool moved = false;
  auto now = start;  // as of the last clock turn
  for (unsigned i = 1;; ++i) {
    if (!mine) mine = own_.tryAcquire();
    if (mine && !down_ && spinTurn(i)) moved = true;
    if (done()) {
      result = true;
      break;
    }
    if (i % kClockTurns == 0) {
      now = std::chrono::steady_clock::now();
      if (moved) end = std::min(cap, now + spin_);
      moved = false;
      if (now >= end) break;
    }
  }
  if (!result && mine && !nested && !down_) {
    result = sleepOwning(done, std::min(deadline, std::chrono::steady_clock::now() + kOwnerSleep));
    now = std::chrono::steady_clock::now();
  }
  if (!nested) {
    bool busy = false;
    if (mine) {
      // The last waiter without a result puts the workers and sources back
      // into mw-ucx's set (spinnerStopped), and mw-ucx may sleep on the
      // sources' requests for a wake, which this waiter's own sleep may
      // have used up: asked again before it lets go, and a source that
      // holds messages is for mw-ucx to serve now. With a result they stay
      // out until mw-ucx looks again, which asks for itself: a request
      // asked here would only cost the peer's next write a signal.
      auto arm = [&] { return result || armSources(); };
      busy = transfers_ > 0 || !arm();
      while (!own_.tryRelease()) {
        turn();
        busy = transfers_ > 0 || !arm();
      }
    }
    spinnerStopped(result, now);
    // A waiter that got its result comes back for the next one and drives
    // it. One that ran out of spin sleeps on its request: mw-ucx, kicked,
    // serves what it leaves running, and polls once kStallLimit passed
    // since this spin began.
    if (result) noteApplication(now);
    own_.unwant();
    // mw-ucx may sleep without a timer: it polls what this waiter leaves running.
    if (busy && !result) kick();
  }
  return result;
}

bool UcxEngine::spinTurn(unsigned i) {
  own_.runPosted();
  const bool workers = sources_.empty() || workers_busy_ || need_progress_ || waiting_sends_ > 0 ||
                       i % kIdleWorkerTurns == 0;
  // One progress call per look at done(), as a raw progress loop does.
  const bool any = progress(1, workers);
  if (i % kClockTurns == 0) fireTimers();
  own_.checkWaits();
  return any;
}

bool UcxEngine::sleepOwning(const std::function<bool()>& done, std::chrono::steady_clock::time_point until) {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    const auto now = Clock::now();
    if (now >= until) return false;
    // Armed, a worker's fd reports what arrives from now on; busy, it has
    // events waiting, and the spin below takes them. Work posted since
    // the last turn is run by that spin, too.
    if (armAll() == UCS_OK && armSources() && own_.ownerSleeps()) {
      epoll_event events[4];
      // Until the next timer at most: turn() fires it.
      const auto sleep = std::max(Clock::duration::zero(), std::min(until, timers_.next()) - now);
      const int n = waitEvents(sleep_fd_, events, 4, sleep);
      own_.ownerAwake();
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if ((tag & (0xffull << 56)) == kSourceTag) {
          drainSourceFd(tag);
        } else if (tag == kWakeTag) {
          uint64_t v;
          ssize_t got = ::read(owner_wake_fd_, &v, sizeof v);
          (void)got;
        }
      }
    }
    // The sources stay armed: mw-ucx may sleep on them too once this
    // waiter is gone, and only it withdraws the request, when it wakes.
    auto end = std::min(until, Clock::now() + spin_);
    for (unsigned i = 1;; ++i) {
      if (spinTurn(i)) end = std::min(until, Clock::now() + spin_);
      if (done()) return true;
      if (i % kClockTurns == 0 && Clock::now() >= end) break;
    }
  }
}

void UcxEngine::spinnerStarted() {
  std::lock_guard<std::mutex> l(mask_m_);
  if (spinners_++ == 0 && !masked_ && !down_) maskWorkers(true);
}

void UcxEngine::spinnerStopped(bool got_result, std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> l(mask_m_);
  if (--spinners_ > 0 || !masked_ || down_) return;
  if (got_result) {
    // Back soon: the workers stay out until mw-ucx finds the application
    // gone (unmaskIfIdle).
    lookAgainSoon(now);
  } else {
    maskWorkers(false);
  }
}

bool UcxEngine::unmaskIfIdle(bool app_drives) {
  std::lock_guard<std::mutex> l(mask_m_);
  if (!masked_ || spinners_ > 0) return false;
  if (app_drives) return true;
  maskWorkers(false);
  return false;
}

void UcxEngine::maskWorkers(bool out) {
  epoll_event ev{};
  ev.events = out ? 0u : static_cast<uint32_t>(EPOLLIN);
  ev.data.u64 = kWorkerTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, worker_fd_, &ev);
  for (const PathWorker& p : paths_) epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, p.fd, &ev);
  for (int fd : source_fds_) {
    ev.data.u64 = kSourceTag | static_cast<uint32_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  }
  masked_ = out;
}

}  // namespace mw
