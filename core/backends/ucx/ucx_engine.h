// The progress engine of one context: one ucp_context, one ucp_worker, and
// one progress thread ("mw-ucx"), whatever the number of worlds.
//
// A context with several data paths (rails/ucx_failover.h) also has one worker
// per path, each in a ucp_context of its own restricted to the path's
// network device: UCX 1.13 picks an endpoint's device itself, so a worker
// that has only one device is how an endpoint stays on its path. The same
// owner serves them all.
//
// One thread at a time owns the engine and everything made from its
// workers (endpoints, requests, links, paths, worlds' UCX state): the
// mw-ucx thread, a thread in mw_wait/mw_poll that took it over for a
// bounded spin (spin_us, the hybrid wait of MPI and UCX) and then a
// bounded sleep on the workers' fds, or a thread that
// issues an operation while nobody owns it (runOrPost, for as long as the
// operation takes to start). Only the owner calls into UCX. Other threads
// hand it work: post() and runOrPost() (submit), call() (create, destroy,
// cancel, abort) and waitUntil() (Ownership). The mw-ucx thread sleeps in
// epoll on the workers' event fds (ucp_worker_arm; left out while a waiter
// drives them), an eventfd for wake-ups, a timerfd for a later look, the
// pidfds of watched peer processes and watched sockets, and takes a turn
// when any of them fires.
//
// UCX callbacks run inside ucp_worker_progress. What they must not do there
// (close endpoints, break worlds) they hand to defer(), which runs once the
// progress call returned, on the owner.
#pragma once

#include <sys/epoll.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/ownership.h"
#include "core/progress_driver.h"
#include "core/timer_queue.h"

namespace mw {

class UcxEngine : public ProgressDriver {
 public:
  // Throws Error(Backend) when UCX cannot be initialised. `net_devices`
  // (UCX_NET_DEVICES syntax; empty: all) applies unless the environment
  // sets UCX_NET_DEVICES itself.
  // `path_devices`: one path worker per device, in order (may be empty).
  UcxEngine(std::chrono::microseconds spin, const std::string& net_devices,
            const std::vector<std::string>& path_devices = {});
  ~UcxEngine() override;
  UcxEngine(const UcxEngine&) = delete;
  UcxEngine& operator=(const UcxEngine&) = delete;

  // True on the thread that owns the engine now. Everything below marked
  // "owner" runs there only.
  bool owned() const noexcept { return own_.owned(); }
  // Hand work to the owner (see the top of this file, and Ownership).
  void post(std::function<void()> work) { own_.post(std::move(work)); }
  // Runs `work` here when the engine is free, else posts it
  // (Ownership::runOrPost): how an operation starts.
  template <typename F>
  void runOrPost(F&& work) {
    noteApplication();
    own_.runOrPost(std::forward<F>(work));
  }
  template <typename F>
  auto call(F&& f) -> decltype(f()) {
    return own_.call(std::forward<F>(f));
  }
  // Waits until `holds`, checked by the owner after each of its turns.
  bool waitUntil(std::chrono::steady_clock::time_point deadline, std::function<bool()> holds);

  // Owner.
  ucp_worker_h worker() const { return worker_; }
  size_t pathCount() const { return paths_.size(); }
  ucp_worker_h pathWorker(size_t path) const { return paths_[path].worker; }
  void defer(std::function<void()> work);

  // Wakes the progress thread so it progresses and re-arms: after posting
  // work that needs progress without an incoming event to announce it.
  void kick() noexcept;
  // Wakes a waiter that sleeps owning the engine (sleepOwning).
  void wakeOwner() noexcept;
  // Makes it look again within kLookDelay (1 ms) even if nothing else
  // wakes it (a timerfd): after an application thread that drove the
  // engine left work behind it, which mw-ucx takes over should that thread
  // not come back.
  void lookAgainSoon(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) noexcept;

  // Owns the engine on the calling thread and drives it until `done()`, or
  // until UCX did nothing for the engine's spin; then, still owning it,
  // sleeps on the workers' fds for up to kOwnerSleep (ucx_engine_spin.cc).
  // True when done() held. While another thread owns it, only watches
  // done(). Never past `deadline`.
  bool spinUntil(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) override;
  std::chrono::microseconds spin() const { return spin_; }
  // The processes this one shares a host with through its sources, and
  // itself, outnumber the CPUs it may run on: a waiter that spins or
  // drives takes a CPU one of them needs, so it leaves the engine to
  // mw-ucx and sleeps on its request (spinUntil).
  bool crowded() const { return crowded_.load(std::memory_order_relaxed); }

  // Owner: progresses the workers (unless `workers` is false) until they
  // have nothing to do (or for `rounds` calls each), polls the sources and
  // runs deferred work; true when any of them did anything.
  bool progress(int rounds = kProgressRounds, bool workers = true);

  // Owner: an operation was posted that UCX moves on only in progress
  // (no event of the workers' fds announces it), and whoever posted it
  // progresses before it lets go of the engine.
  void needProgress() { need_progress_ = true; }
  void progressIfNeeded() {
    if (need_progress_) progress();  // which clears it
  }

  // Owner: a send of ours is waiting inside UCX. The worker's event fd
  // reports arrivals, but not always that a peer's queue has room
  // again or that a rendezvous may go on, so while any send waits the
  // mw-ucx thread wakes on a short, growing timer (20 us to 1 ms) as
  // well as on events. Posted by another thread, whose wait drives it
  // meanwhile, the send has mw-ucx look soon, not at once (it may sleep
  // without a timer).
  void sendWaiting() {
    if (waiting_sends_++ == 0 && std::this_thread::get_id() != home_) lookAgainSoon();
  }
  void sendDone() { --waiting_sends_; }

  // Owner: an operation of a world started or ended. While any runs, UCX
  // keeps making progress and no application thread issued or waited for
  // 100 us, the mw-ucx thread polls instead of sleeping (until 100 us pass
  // without progress).
  void transferStarted() { ++transfers_; }
  void transferEnded() { --transfers_; }

  // Owner: calls `exited` (on the owner) once the process `pid` has
  // exited. False when the process cannot be watched (already gone, or
  // another process now has that pid: `start_ticks` is its start time in
  // clock ticks since boot, /proc/<pid>/stat field 22).
  using WatchId = uint64_t;
  bool watchProcess(int pid, unsigned long long start_ticks, std::function<void()> exited, WatchId& id);
  void unwatchProcess(WatchId id);
  // Owner: true when the watched process `pid` has exited, in which case
  // its listeners have been called, as its pidfd would have.
  // For a transport error that may be a death the pidfd has not told yet.
  bool processGone(int pid);
  // Owner: the pidfd of watched process `pid`, -1 once it is not watched
  // (never watched, or its exit was handled). The engine keeps owning it.
  int pidfdOf(int pid) const;

  // Owner: calls `ready` (on the owner) with the epoll events of `fd`
  // (EPOLLIN, EPOLLOUT) each time it is ready, until unwatched. The caller
  // keeps owning the fd.
  using FdWatchId = uint64_t;
  FdWatchId watchFd(int fd, uint32_t events, std::function<void(uint32_t)> ready);
  void unwatchFd(FdWatchId id);

  // Owner: a source of messages beside the workers, polled like them
  // (ucx_engine_sources.cc): the same-host rings. `poll` moves what can
  // move, true when anything did; each progress() calls it. Before the
  // owner sleeps, `arm` asks for a wake (false: something is there, do not
  // sleep); mw-ucx calls `disarm` when it wakes. A waiter that slept
  // owning the engine leaves them armed: mw-ucx may be asleep on the same
  // request. `fds` (eventfds) wake the owner; it reads them when they
  // fire. The caller keeps owning the fds.
  struct Source {
    std::function<bool()> poll, arm;
    std::function<void()> disarm;
    std::vector<int> fds;
    int peer_pid = 0;  // the process at the other end, for crowded()
  };
  using SourceId = uint64_t;
  SourceId addSource(Source source);
  void removeSource(SourceId id);

  // Owner: runs `fire` on the owner at `when` (op_timeout_ms). Cancelling
  // a timer that fired does nothing.
  using TimerId = TimerQueue::Id;
  TimerId schedule(std::chrono::steady_clock::time_point when, std::function<void()> fire);
  void cancel(TimerId id);

  // Stops the mw-ucx thread and releases the worker, once every
  // endpoint is closed (mw_context_free). The object may live on, inert,
  // for requests that still refer to it.
  void shutdown();

 private:
  static constexpr int kProgressRounds = 64;
  // epoll tags: the kind in the top byte, a pid or an FdWatchId below it.
  static constexpr uint64_t kWorkerTag = 1ull << 56;
  static constexpr uint64_t kWakeTag = 2ull << 56;
  static constexpr uint64_t kPidTag = 3ull << 56;
  static constexpr uint64_t kFdTag = 4ull << 56;
  static constexpr uint64_t kLookTag = 5ull << 56;
  static constexpr uint64_t kSourceTag = 6ull << 56;  // | the fd

  struct PathWorker {
    ucp_context_h context = nullptr;
    ucp_worker_h worker = nullptr;
    int fd = -1;
  };
  struct Watch {
    int pidfd = -1;
    std::map<WatchId, std::function<void()>> listeners;
  };

  void run();
  // Owner: one turn (posted work, progress, timers, waits); true when UCX
  // did anything.
  bool turn(int rounds = kProgressRounds);
  // Owner: the `i`th turn of a spinning waiter (ucx_engine_spin.cc).
  bool spinTurn(unsigned i);
  // A waiter that owns the engine and ran out of spin: sleeps on the
  // workers' fds (sleep_fd_) and spins again after each wake-up, until
  // done() or `until`; true when done() held.
  bool sleepOwning(const std::function<bool()>& done, std::chrono::steady_clock::time_point until);
  // epoll_pwait2 on `fd` for `timeout` (negative: no limit), falling back
  // to epoll_wait before Linux 5.11; the number of events, 0 on an error.
  static int waitEvents(int fd, epoll_event* events, int max, std::chrono::nanoseconds timeout);
  // Owner: what epoll reported for pidfds and watched fds.
  void handleEvents(const epoll_event* events, int n);
  void addPathWorker(const std::string& device);
  // Owner: arms every worker; UCS_ERR_BUSY when one has events
  // waiting, else the first error (UCS_OK: all armed).
  ucs_status_t armAll();
  // The main worker and each path's, without allocating (hot path).
  template <typename F>
  void forEachWorker(F f) const {
    f(worker_);
    for (const PathWorker& p : paths_) f(p.worker);
  }
  void runDeferred();  // owner
  // Owner (ucx_engine_sources.cc): every source polled, true when any
  // moved; every source armed, false when one has something; disarmed; an
  // eventfd of a source that fired, read.
  bool pollSources();
  bool armSources();
  void disarmSources();
  void drainSourceFd(uint64_t tag);
  // A waiter spinning on the workers keeps them out of the mw-ucx thread's
  // epoll set: each arrival would wake that thread only for it to find the
  // engine taken. They come back when the last waiter ran out of spin, or
  // once no application thread came for kStallLimit (unmaskIfIdle, by
  // mw-ucx, which lookAgainSoon() wakes); a worker with events unhandled
  // then wakes mw-ucx at once (level-triggered).
  void spinnerStarted();
  void spinnerStopped(bool got_result, std::chrono::steady_clock::time_point now);
  // mw-ucx: puts the workers back unless the application drives; true
  // when they stay out, and mw-ucx must look again (lookAgainSoon).
  bool unmaskIfIdle(bool app_drives);
  void maskWorkers(bool out);  // under mask_m_
  // Owner: fires due timers and what they deferred.
  void fireTimers();
  void processExited(int pid);  // owner

  const std::chrono::microseconds spin_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int worker_fd_ = -1;
  std::vector<PathWorker> paths_;
  int epoll_fd_ = -1;
  // What a waiter that owns the engine sleeps on: the workers' fds and
  // owner_wake_fd_, which work posted meanwhile writes to.
  int sleep_fd_ = -1;
  int owner_wake_fd_ = -1;
  int wake_fd_ = -1;
  int look_fd_ = -1;
  std::atomic<int64_t> look_due_{0};  // when look_fd_ fires (steady_clock ticks)
  std::thread::id home_;  // the mw-ucx thread's id

  Ownership own_;
  std::vector<std::function<void()>> deferred_;
  int waiting_sends_ = 0;
  int transfers_ = 0;
  bool need_progress_ = false;
  bool workers_busy_ = false;  // owner: the last progress of the workers did something
  std::mutex mask_m_;
  int spinners_ = 0;     // under mask_m_
  bool masked_ = false;  // under mask_m_
  // The sources' eventfds, masked with the workers: a writer's wake meant
  // for mw-ucx must not pull it onto a CPU a spinning waiter serves.
  std::vector<int> source_fds_;  // under mask_m_
  // When an application thread last issued an operation or waited
  // (steady_clock ticks): while they keep coming, the mw-ucx thread does
  // not poll beside them.
  std::atomic<int64_t> app_active_{0};
  void noteApplication(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now()) noexcept {
    app_active_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }
  std::map<int, Watch> watches_;  // by pid
  std::map<WatchId, int> watch_pid_;
  struct FdWatch {
    int fd;
    std::function<void(uint32_t)> ready;
  };
  std::map<FdWatchId, FdWatch> fd_watches_;
  std::map<SourceId, Source> sources_;
  std::map<int, int> source_pids_;  // owner: sources per peer process
  const unsigned cpus_;             // the CPUs this process may run on
  std::atomic<bool> crowded_{false};
  SourceId next_source_ = 1;
  bool polling_sources_ = false;  // inside pollSources: removals wait
  std::vector<SourceId> removed_sources_;
  FdWatchId next_fd_watch_ = 1;
  WatchId next_watch_ = 1;
  TimerQueue timers_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> down_{false};  // the worker is gone
  std::thread thread_;
};

// True when UCX can be initialised here (checked once).
bool ucxUsable() noexcept;

}  // namespace mw
