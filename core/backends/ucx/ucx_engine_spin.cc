// The hybrid wait of MPI and UCX: an application thread that waits for a
// result of its own owns the engine and drives it for a bounded spin
// before it sleeps, so that a message it waits for is not handed across
// threads. See the top of ucx_engine.h.
#include <sys/epoll.h>

#include <algorithm>

#include "core/backends/ucx/ucx_engine.h"

namespace mw {
namespace {

// How long a waiter drives a transfer that keeps moving, at most.
constexpr std::chrono::microseconds kSpinCap{1000};

}  // namespace

bool UcxEngine::spinUntil(const std::function<bool()>& done) {
  if (done()) return true;
  if (spin_.count() <= 0 || down_) return false;
  // The spin counts the time UCX does nothing: a transfer that keeps
  // moving (a rendezvous, a large message) is driven here, for up to
  // kSpinCap, rather than handed to mw-ucx midway.
  const auto start = std::chrono::steady_clock::now();
  const auto cap = start + std::max<std::chrono::microseconds>(spin_, kSpinCap);
  auto end = start + spin_;
  const bool nested = own_.owned();  // a callback of ours waits: we own it already
  if (!nested) {
    noteApplication();
    own_.want();
    spinnerStarted();
  }
  bool mine = nested;
  bool result = false;
  for (unsigned i = 1;; ++i) {
    if (!mine) mine = own_.tryAcquire();
    // One progress call per look at done(), as a raw progress loop does.
    if (mine && !down_ && turn(1)) end = std::min(cap, std::chrono::steady_clock::now() + spin_);
    if (done()) {
      result = true;
      break;
    }
    if ((i & 7) == 0 && std::chrono::steady_clock::now() >= end) break;
  }
  if (!nested) {
    bool busy = false;
    if (mine) {
      busy = transfers_ > 0;
      while (!own_.tryRelease()) {
        turn();
        busy = transfers_ > 0;
      }
    }
    spinnerStopped(result);
    // A waiter that got its result comes back for the next one and drives
    // it. One that ran out of spin sleeps on its request: mw-ucx, kicked,
    // serves what it leaves running, and polls once kStallLimit passed
    // since this spin began.
    if (result) noteApplication();
    own_.unwant();
    // mw-ucx may sleep without a timer: it polls what this waiter leaves running.
    if (busy && !result) kick();
  }
  return result;
}

void UcxEngine::spinnerStarted() {
  std::lock_guard<std::mutex> l(mask_m_);
  if (spinners_++ == 0 && !masked_ && !down_) maskWorkers(true);
}

void UcxEngine::spinnerStopped(bool got_result) {
  std::lock_guard<std::mutex> l(mask_m_);
  if (--spinners_ > 0 || !masked_ || down_) return;
  if (got_result) {
    // Back soon: the workers stay out until mw-ucx finds the application
    // gone (unmaskIfIdle).
    lookAgainSoon();
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
  masked_ = out;
}

}  // namespace mw
