#include "core/backends/nccl/nccl_poller.h"

#include <algorithm>

#include <pthread.h>
#include <sys/prctl.h>

#include "core/request.h"
#include "core/signals.h"

namespace mw {
namespace {

constexpr std::chrono::microseconds kFirstPause{5};
constexpr std::chrono::microseconds kLongestPause{500};
constexpr size_t kErrLen = 512;

}  // namespace

std::chrono::microseconds ncclPauseAfter(Clock::duration waited) {
  auto p = std::chrono::duration_cast<std::chrono::microseconds>(waited) / 20;
  return std::clamp(p, kFirstPause, kLongestPause);
}

NcclPoller::NcclPoller(const mwn_plugin& plugin, std::chrono::microseconds spin) : plugin_(plugin), spin_(spin) {
  SigpipeBlockedForNewThreads no_sigpipe;
  thread_ = std::thread([this] { main(); });
  // Named here, not by the thread itself, so that it carries its name
  // once the constructor returned.
  pthread_setname_np(thread_.native_handle(), kThreadName);
}

NcclPoller::~NcclPoller() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The last world can go on this very thread, when it drops the last
  // request that held it.
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

bool NcclPoller::spinUntil(const std::function<bool()>& done, Clock::time_point deadline) {
  if (done()) return true;
  if (spin_.count() <= 0) return false;
  spinners_.fetch_add(1, std::memory_order_relaxed);
  cv_.notify_one();  // out of its pause
  const auto end = std::min(deadline, Clock::now() + spin_);
  bool held = false;
  for (unsigned i = 1;; ++i) {
    if (done()) {
      held = true;
      break;
    }
    if ((i & 15) == 0 && Clock::now() >= end) break;
  }
  spinners_.fetch_sub(1, std::memory_order_relaxed);
  return held;
}

void NcclPoller::post(Command c) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(m_);
    wake = c.kind != Command::Kind::Watch || busy_.count(c.owner) == 0;
    commands_.push_back(std::move(c));
  }
  if (wake) cv_.notify_one();
}

void NcclPoller::watch(NcclOpOwner* owner, std::shared_ptr<Request> request, mwn_op* op,
                       std::chrono::milliseconds op_timeout) {
  Command c{Command::Kind::Watch, owner};
  c.watched = Watched{std::move(request), op, Clock::now(), op_timeout};
  post(std::move(c));
}

void NcclPoller::abort(NcclOpOwner* owner) { post(Command{Command::Kind::Abort, owner}); }

void NcclPoller::drain(NcclOpOwner* owner, std::chrono::milliseconds grace, std::string why) {
  Command c{Command::Kind::Drain, owner};
  c.grace = grace;
  c.why = std::move(why);
  post(std::move(c));
}

void NcclPoller::forget(NcclOpOwner* owner) {
  std::promise<void> forgotten;
  Command c{Command::Kind::Forget, owner};
  c.forgotten = &forgotten;
  if (std::this_thread::get_id() == thread_.get_id()) {
    // Called back from here (a request dropped here held the last
    // reference to its world): what is queued goes first, then the owner.
    std::vector<Command> queued;
    {
      std::lock_guard<std::mutex> lock(m_);
      queued.swap(commands_);
    }
    for (Command& q : queued) apply(q);
    apply(c);
    return;
  }
  std::future<void> done = forgotten.get_future();
  post(std::move(c));
  done.wait();
}

void NcclPoller::finish(Watched& w, Status s, const std::string& detail) {
  plugin_.op_free(w.op);
  w.op = nullptr;
  w.request->complete(s, detail);
  // Dropped only between rounds: the last reference to a world may go
  // with it, and that world's destroy calls forget() on this thread.
  released_.push_back(std::move(w.request));
}

void NcclPoller::failAll(NcclOpOwner* owner, Owned& owned) {
  if (owned.ops.empty()) return;
  const OpResult f = owner->failure();
  while (!owned.ops.empty()) {
    Watched w = std::move(owned.ops.front());
    owned.ops.pop_front();
    finish(w, f.status, f.detail);
  }
}

void NcclPoller::apply(Command& c) {
  switch (c.kind) {
    case Command::Kind::Watch: {
      Owned& o = owned_[c.owner];
      o.ops.push_back(std::move(c.watched));
      if (o.aborted) failAll(c.owner, o);
      break;
    }
    case Command::Kind::Abort: {
      Owned& o = owned_[c.owner];
      o.aborted = true;
      failAll(c.owner, o);
      break;
    }
    case Command::Kind::Drain: {
      Owned& o = owned_[c.owner];
      o.grace = c.grace;
      o.drain_until = Clock::now() + o.grace;
      o.drain_why = std::move(c.why);
      break;
    }
    case Command::Kind::Forget: {
      auto it = owned_.find(c.owner);
      if (it != owned_.end()) {
        failAll(c.owner, it->second);
        owned_.erase(it);
      }
      c.forgotten->set_value();
      break;
    }
  }
}

Deadline NcclPoller::pollOnce() {
  Deadline next = Deadline::max();
  char err[kErrLen];
  for (auto& [owner, o] : owned_) {
    if (o.aborted) continue;
    while (!o.ops.empty()) {
      Watched& w = o.ops.front();
      err[0] = 0;
      const int st = plugin_.op_query(w.op, err, sizeof err);
      if (st == MWN_OK || st == MWN_ERR_ARGUMENT) {
        Watched done = std::move(w);
        o.ops.pop_front();
        finish(done, st == MWN_OK ? Status::Ok : Status::InvalidArgument, err);
        if (o.drain_until != Deadline::max()) o.drain_until = Clock::now() + o.grace;
        continue;
      }
      if (st != MWN_PENDING) {
        owner->operationFailed(err[0] ? err : "the NCCL operation failed", BreakCause::Backend, Clock::now());
        break;
      }
      const auto now = Clock::now();
      if (now >= o.drain_until) {
        owner->operationFailed(o.drain_why, BreakCause::PeerLeft, now - o.grace);
        break;
      }
      next = std::min(next, o.drain_until);
      const auto waited = now - w.started;
      if (w.op_timeout.count() > 0) {
        if (waited >= w.op_timeout) {
          owner->operationFailed("an operation ran past op_timeout_ms=" + std::to_string(w.op_timeout.count()),
                                 BreakCause::OpTimeout, w.started);
          break;
        }
        next = std::min(next, w.started + w.op_timeout);
      }
      // Later operations of the stream cannot finish before this one.
      next = std::min<Deadline>(next, now + ncclPauseAfter(waited));
      break;
    }
  }
  return next;
}

void NcclPoller::main() {
  // The pauses are a few microseconds at first; Linux's default timer
  // slack (50 us) would stretch each of them past the operation itself.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  Deadline next = Deadline::max();
  for (;;) {
    std::vector<Command> commands;
    {
      std::unique_lock<std::mutex> lock(m_);
      auto ready = [&] { return stopping_ || !commands_.empty() || spinners_.load(std::memory_order_relaxed) > 0; };
      if (next == Deadline::max()) {
        cv_.wait(lock, [&] { return stopping_ || !commands_.empty(); });
      } else {
        cv_.wait_until(lock, next, ready);
      }
      if (stopping_ && commands_.empty()) return;
      commands.swap(commands_);
      busy_.clear();
    }
    for (Command& c : commands) apply(c);
    next = pollOnce();
    {
      std::lock_guard<std::mutex> lock(m_);
      for (const auto& [owner, o] : owned_) {
        if (!o.ops.empty() && !o.aborted) busy_.insert(owner);
      }
    }
    while (!released_.empty()) {
      std::vector<std::shared_ptr<Request>> drop;
      drop.swap(released_);  // a world dropped here may release more
    }
  }
}

}  // namespace mw
