#include "core/backends/ucx/ucx_engine.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>
#include <cstring>

#include <ucs/debug/debug.h>

#include "core/error.h"
#include "core/log.h"
#include "core/signals.h"

namespace mw {
namespace {

constexpr std::chrono::microseconds kFirstBackoff{20};
constexpr std::chrono::microseconds kLastBackoff{1000};
// How long the mw-ucx thread polls without UCX doing anything while
// operations run, before it sleeps on the fds.
constexpr std::chrono::microseconds kStallLimit{100};
// How soon mw-ucx looks again at work an application thread left behind
// (lookAgainSoon), at most.
constexpr std::chrono::microseconds kLookDelay{1000};

// libucs, when it loads, puts its own handlers on SIGILL, SIGSEGV, SIGBUS
// and SIGFPE over those of the process that loads us. A JVM takes SIGSEGV
// on purpose (safepoint polls, implicit null checks), and Go and Python
// have handlers of their own: UCX's would turn those into a crash report
// and an abort. Unless the program asked for UCX's handlers, the signals go
// back to whoever had them. This runs after libucs's own initialiser, as
// libucs is a library this one needs.
__attribute__((constructor)) void giveErrorSignalsBack() {
  if (std::getenv("UCX_ERROR_SIGNALS") || std::getenv("UCX_HANDLE_ERRORS")) return;
  for (int signum : {SIGILL, SIGSEGV, SIGBUS, SIGFPE}) ucs_debug_disable_signal(signum);
}

[[noreturn]] void fail(const char* what, ucs_status_t s) {
  throw Error(Status::Backend, std::string("UCX ") + what + ": " + ucs_status_string(s));
}

unsigned usableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

}  // namespace

bool ucxUsable() noexcept {
  static const bool usable = [] {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    ucp_context_h ctx = nullptr;
    if (ucp_init(&params, nullptr, &ctx) != UCS_OK) return false;
    ucp_cleanup(ctx);
    return true;
  }();
  return usable;
}

namespace {

constexpr const char* kTcpRendezvousFrom = "256k";

// Whether the host has an RDMA device (InfiniBand, RoCE, iWARP): without
// one, every network lane UCX can choose is TCP.
bool hasRdmaDevice() {
  static const bool has = [] {
    DIR* d = opendir("/sys/class/infiniband");
    if (!d) return false;
    bool any = false;
    while (dirent* e = readdir(d)) any = any || e->d_name[0] != '.';
    closedir(d);
    return any;
  }();
  return has;
}

// A ucp_context and its worker: the engine's main one (tag matching, every
// device unless `net_devices` narrows them) or a path's (active messages,
// TCP on one device).
struct WorkerParts {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int fd = -1;

  void release() {
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
    worker = nullptr;
    context = nullptr;
  }
};

WorkerParts makeWorker(const std::string& net_devices, bool path) {
  ucp_config_t* config = nullptr;  // the usual UCX_* environment variables
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) fail("reading the configuration (UCX_* variables)", s);
  // A peer that dies leaves sends UCX never finishes; at shutdown UCX warns
  // of each. The world already reported it: keep UCX to errors unless the
  // program chose a level itself.
  // On a path, a failed connect is what a cut link looks like, and the
  // world reports it as MW_EVENT_PATH_DOWN: UCX keeps quiet about it.
  if (!std::getenv("UCX_LOG_LEVEL")) ucp_config_modify(config, "LOG_LEVEL", path ? "fatal" : "error");
  // A path worker has its device whatever the environment says: that is
  // what makes it a path. Sockets are what every device has.
  if (!net_devices.empty() && (path || !std::getenv("UCX_NET_DEVICES"))) {
    s = ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
    if (s != UCS_OK) {
      ucp_config_release(config);
      fail(("restricting it to the devices " + net_devices).c_str(), s);
    }
  }
  if (path && !std::getenv("UCX_TLS")) ucp_config_modify(config, "TLS", "tcp");
  // Over TCP, UCX's automatic rendezvous threshold (about 20 KiB) makes
  // each larger message wait a round trip before its data moves; between
  // client-server endpoints that measured slower than eager up to 256 KiB
  // (BENCHMARKS.md, "p2p"). The worlds pace eager sends
  // (ucx_send_pacing.h), so a sender cannot flood its receiver. RDMA
  // devices keep UCX's own choice.
  if (!path && !std::getenv("UCX_RNDV_THRESH") && !hasRdmaDevice()) {
    ucp_config_modify(config, "RNDV_THRESH", kTcpRendezvousFrom);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
  // The main worker's endpoints name their world with an active message
  // (ucx_links.h).
  params.features = (path ? UCP_FEATURE_AM : UCP_FEATURE_TAG | UCP_FEATURE_AM) | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.name = path ? "multiworld-path" : "multiworld";
  WorkerParts parts;
  s = ucp_init(&params, config, &parts.context);
  ucp_config_release(config);
  if (s != UCS_OK) fail("ucp_init", s);
  try {
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // Only the owner calls UCX; UCX's own async thread runs the connection
    // manager of the client-server endpoints (ucx_links.h). In multi-thread
    // mode progress blocks that thread and its events queue as missed, and
    // UCX 1.13.1 dispatches a queued event even after the socket closed and
    // a new one took its fd number (third_party/ucx: the copy of libucs the
    // build links drops such events). In serialized mode the async thread
    // handles most events when they happen.
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    {
      SigpipeBlockedForNewThreads no_sigpipe;  // UCX's async thread writes to sockets
      s = ucp_worker_create(parts.context, &wp, &parts.worker);
    }
    if (s != UCS_OK) fail("ucp_worker_create", s);
    s = ucp_worker_get_efd(parts.worker, &parts.fd);
    if (s != UCS_OK) fail("ucp_worker_get_efd", s);
  } catch (...) {
    parts.release();
    throw;
  }
  return parts;
}

}  // namespace

UcxEngine::UcxEngine(std::chrono::microseconds spin, const std::string& net_devices,
                     const std::vector<std::string>& path_devices)
    : spin_(spin), own_([this] { kick(); }, [this] { wakeOwner(); }), cpus_(usableCpus()) {
  WorkerParts main = makeWorker(net_devices, false);
  context_ = main.context;
  worker_ = main.worker;
  worker_fd_ = main.fd;
  try {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    sleep_fd_ = epoll_create1(EPOLL_CLOEXEC);
    owner_wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    look_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (epoll_fd_ < 0 || sleep_fd_ < 0 || owner_wake_fd_ < 0 || wake_fd_ < 0 || look_fd_ < 0) {
      throw Error(Status::Internal, std::string("UCX engine: epoll/eventfd/timerfd: ") + std::strerror(errno));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWorkerTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, worker_fd_, &ev);
    epoll_ctl(sleep_fd_, EPOLL_CTL_ADD, worker_fd_, &ev);
    ev.data.u64 = kWakeTag;
    epoll_ctl(sleep_fd_, EPOLL_CTL_ADD, owner_wake_fd_, &ev);
    ev.data.u64 = kWakeTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    ev.data.u64 = kLookTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, look_fd_, &ev);
    for (const std::string& device : path_devices) addPathWorker(device);

    SigpipeBlockedForNewThreads no_sigpipe;
    thread_ = std::thread([this] { run(); });
    // Named here, not by the thread itself, so that it carries its name
    // once the constructor returned.
    pthread_setname_np(thread_.native_handle(), "mw-ucx");
    home_ = thread_.get_id();
  } catch (...) {
    for (int fd : {epoll_fd_, sleep_fd_, owner_wake_fd_, wake_fd_}) {
      if (fd >= 0) ::close(fd);
    }
    if (look_fd_ >= 0) ::close(look_fd_);
    for (PathWorker& p : paths_) WorkerParts{p.context, p.worker, -1}.release();
    main.release();
    throw;
  }
}

void UcxEngine::addPathWorker(const std::string& device) {
  WorkerParts parts = makeWorker(device, true);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWorkerTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, parts.fd, &ev);
  epoll_ctl(sleep_fd_, EPOLL_CTL_ADD, parts.fd, &ev);
  paths_.push_back(PathWorker{parts.context, parts.worker, parts.fd});
}

ucs_status_t UcxEngine::armAll() {
  ucs_status_t result = UCS_OK;
  forEachWorker([&](ucp_worker_h w) {
    const ucs_status_t armed = ucp_worker_arm(w);
    if (armed == UCS_ERR_BUSY) {
      result = UCS_ERR_BUSY;
    } else if (armed != UCS_OK) {
      // Cannot happen with UCP_FEATURE_WAKEUP; never spin on it regardless.
      MW_LOG(LogLevel::Error, "ucp_worker_arm: %s", ucs_status_string(armed));
      if (result == UCS_OK) result = armed;
    }
  });
  return result;
}

UcxEngine::~UcxEngine() { shutdown(); }

void UcxEngine::shutdown() {
  if (thread_.joinable()) {
    stop_ = true;
    own_.stopHome();
    kick();
    thread_.join();
  }
  own_.acquire();
  struct Release {
    Ownership& own;
    ~Release() { own.release(); }
  } release{own_};
  if (down_) return;
  own_.runPosted();
  runDeferred();
  for (auto& [pid, w] : watches_) ::close(w.pidfd);
  watches_.clear();
  watch_pid_.clear();
  for (PathWorker& p : paths_) WorkerParts{p.context, p.worker, -1}.release();
  paths_.clear();
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  ucp_cleanup(context_);
  context_ = nullptr;
  ::close(epoll_fd_);
  ::close(sleep_fd_);
  ::close(owner_wake_fd_);
  ::close(wake_fd_);
  ::close(look_fd_);
  down_ = true;
}

void UcxEngine::defer(std::function<void()> work) { deferred_.push_back(std::move(work)); }

void UcxEngine::runDeferred() {
  while (!deferred_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(deferred_);
    for (auto& work : batch) work();
  }
}

bool UcxEngine::progress(int rounds, bool workers) {
  // Bounded: under a stream of arrivals progress never runs dry, and
  // posted work, timers and other fds must get their turn.
  bool any = false;
  if (workers) {
    need_progress_ = false;
    forEachWorker([&](ucp_worker_h w) {
      for (int i = 0; i < rounds && ucp_worker_progress(w) != 0; ++i) any = true;
    });
    workers_busy_ = any;
  }
  any = pollSources() || any;
  runDeferred();
  return any;
}

void UcxEngine::kick() noexcept {
  if (down_) return;
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter already means "wake up"
}

void UcxEngine::wakeOwner() noexcept {
  if (down_) return;
  uint64_t one = 1;
  ssize_t n = ::write(owner_wake_fd_, &one, sizeof one);
  (void)n;  // a full counter already means "wake up"
}

void UcxEngine::lookAgainSoon(std::chrono::steady_clock::time_point at) noexcept {
  if (down_) return;
  const int64_t now = at.time_since_epoch().count();
  const int64_t limit = std::chrono::nanoseconds(kLookDelay).count();
  // Armed for half the delay or more: leave it, so that a thread that
  // keeps coming back does not reprogram the timer each time.
  if (look_due_.load(std::memory_order_relaxed) - now >= limit / 2) return;
  look_due_.store(now + limit, std::memory_order_relaxed);
  itimerspec when{};
  when.it_value.tv_nsec = limit;
  timerfd_settime(look_fd_, 0, &when, nullptr);
}

bool UcxEngine::waitUntil(std::chrono::steady_clock::time_point deadline, std::function<bool()> holds) {
  return own_.waitUntil(deadline, std::move(holds), [this] {
    turn();
    std::this_thread::yield();
  });
}

bool UcxEngine::turn(int rounds) {
  own_.runPosted();
  bool any = progress(rounds);
  fireTimers();
  own_.checkWaits();
  return any;
}

UcxEngine::TimerId UcxEngine::schedule(std::chrono::steady_clock::time_point when, std::function<void()> fire) {
  const bool earliest = when < timers_.next();
  const TimerId id = timers_.add(when, std::move(fire));
  if (earliest) kick();  // mw-ucx may sleep past `when`
  return id;
}

void UcxEngine::cancel(TimerId id) { timers_.cancel(id); }

void UcxEngine::fireTimers() {
  timers_.fireDue(std::chrono::steady_clock::now());
  runDeferred();
}

void UcxEngine::run() {
  // A waiter keeps the engine from this thread for at most this long:
  // timers and the pidfds are served here.
  constexpr std::chrono::microseconds kPatience{1000};
  // The backoff timer below is in microseconds; the default 50 us of
  // slack would more than double it.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  epoll_event events[16];
  int n = 0;
  std::chrono::microseconds backoff = kFirstBackoff;
  auto last_progress = std::chrono::steady_clock::time_point();
  for (;;) {
    if (!own_.acquireHome(kPatience)) return;
    disarmSources();  // asleep no more: the rings' writers need not wake it
    ucs_status_t armed;
    bool sends_wait;
    std::chrono::steady_clock::time_point next_timer;
    handleEvents(events, n);
    bool polling;
    bool app_drives;
    for (;;) {
      if (turn()) {
        backoff = kFirstBackoff;
        last_progress = std::chrono::steady_clock::now();
      }
      // An application thread that issued or waited lately drives the
      // transfers itself and comes back for the next: polling beside it
      // only takes its CPU (and its completions).
      const auto now = std::chrono::steady_clock::now();
      app_drives = now.time_since_epoch().count() - app_active_.load(std::memory_order_relaxed) <
                   std::chrono::nanoseconds(kStallLimit).count();
      polling = transfers_ > 0 && now - last_progress < kStallLimit && !app_drives;
      next_timer = timers_.next();  // turn() fired what was due
      armed = armAll();
      if (!armSources()) armed = UCS_ERR_BUSY;  // a ring holds messages: look again at once
      sends_wait = waiting_sends_ > 0;
      if (own_.tryRelease()) break;  // else work was posted meanwhile
    }
    // Busy: more came in while progressing, so only look at the other fds
    // (a peer's death must not wait for the traffic to stop). Sends
    // waiting: a short, growing timer, or, while the application drives
    // them, a look once it may have gone. Else (also while a waiter drives
    // the workers, which it keeps out of the set): until an event or the
    // next timer.
    const auto now = std::chrono::steady_clock::now();
    auto sleep = next_timer == std::chrono::steady_clock::time_point::max()
                     ? std::chrono::nanoseconds::max()
                     : std::chrono::duration_cast<std::chrono::nanoseconds>(next_timer - now);
    const bool workers_out = unmaskIfIdle(app_drives);
    if (workers_out || (sends_wait && app_drives)) {
      lookAgainSoon();  // pushed on while the application keeps coming back
    } else if (sends_wait || armed != UCS_OK) {
      sleep = std::min<std::chrono::nanoseconds>(sleep, backoff);
      backoff = std::min(backoff * 2, kLastBackoff);
    }
    if (armed == UCS_ERR_BUSY || sleep.count() <= 0 || polling) sleep = std::chrono::nanoseconds(0);
    if (sleep == std::chrono::nanoseconds::max()) sleep = std::chrono::nanoseconds(-1);
    n = waitEvents(epoll_fd_, events, 16, sleep);
    // Polling gives way to whatever else waits for this CPU (other members
    // on a host with fewer cores than processes).
    if (polling && n == 0) sched_yield();
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag || tag == kLookTag) {
        uint64_t v;
        ssize_t got = ::read(tag == kWakeTag ? wake_fd_ : look_fd_, &v, sizeof v);
        (void)got;
      } else if ((tag & (0xffull << 56)) == kSourceTag) {
        drainSourceFd(tag);
      }
    }
  }
}

int UcxEngine::waitEvents(int fd, epoll_event* events, int max, std::chrono::nanoseconds timeout) {
  int n;
  if (timeout.count() <= 0) {
    n = epoll_wait(fd, events, max, timeout.count() < 0 ? -1 : 0);
  } else {
    const timespec ts{static_cast<time_t>(timeout.count() / 1000000000), static_cast<long>(timeout.count() % 1000000000)};
    n = epoll_pwait2(fd, events, max, &ts, nullptr);
    if (n < 0 && errno == ENOSYS) n = epoll_wait(fd, events, max, 1);  // before Linux 5.11
  }
  return n < 0 ? 0 : n;
}

void UcxEngine::handleEvents(const epoll_event* events, int n) {
  for (int i = 0; i < n; ++i) {
    const uint64_t tag = events[i].data.u64;
    if ((tag & (0xffull << 56)) == kPidTag) {
      processExited(static_cast<int>(tag & 0xffffffffull));
    } else if ((tag & (0xffull << 56)) == kFdTag) {
      auto w = fd_watches_.find(tag & ~(0xffull << 56));
      if (w == fd_watches_.end()) continue;  // unwatched meanwhile
      auto ready = w->second.ready;  // it may unwatch itself
      ready(events[i].events);
      runDeferred();
    }
  }
}

}  // namespace mw
