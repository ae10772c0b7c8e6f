#include "bench/faults_suite.h"

#include "tools/lab/private_redis.h"
#include "bench/suite_common.h"

#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <multiworld/multiworld.h>

#include "bench/fault_processes.h"
#include "bench/fault_traffic.h"

namespace mwbench {
namespace {

using namespace std::chrono_literals;
using common::jsonString;
using common::machineName;
using common::median;
using Settings = std::vector<std::pair<std::string, std::string>>;

// Part 1: traffic of each trial's world.
constexpr std::size_t kDetectBytes = 4096;
constexpr std::size_t kDetectWindow = 4;
// Messages each side must have received before the fault.
constexpr int64_t kWarmMessages = 20;
// Part 2.
constexpr std::size_t kHealthyBytes = 64 << 10;
constexpr std::size_t kHealthyWindow = 8;
constexpr int kHealthyReps = 5;
constexpr int64_t kMeasureNs = 2000000000;  // each of the two windows
constexpr int64_t kHealthyWarmMessages = 100;
constexpr int64_t kSettleNs = 500000000;  // streaming before the first window
// Limits; going past one fails the suite.
constexpr auto kDetectLimit = 10s;  // fault -> break seen
// mw_world_destroy promises bounded time; one that has not returned after
// this long is reported as hung (not a failure of the suite: the process is
// killed and the run goes on).
constexpr auto kDestroyLimit = 10s;
constexpr auto kSetupLimit = 30s;   // processes up, worlds formed, traffic flowing
constexpr int kCreateTimeoutMs = 30000;

// The partition's addresses; partition_test.cc uses 10.213.7.0/24 and names
// mwt*/mwo*/mwi*, so both can run at once.
const char kOuterAddr[] = "10.213.8.1";
const char kInnerAddr[] = "10.213.8.2";
const char kNsPrefix[] = "mwbf";     // namespace mwbf<pid>
const char kOuterPrefix[] = "mwbfo";  // veth mwbfo<pid> here ...
const char kInnerPrefix[] = "mwbfi";  // ... and mwbfi<pid> in the namespace
const char kTempPrefix[] = "mw-bench-faults-";  // $TMPDIR/mw-bench-faults-<pid>.XXXXXX

// The host backend of every world of the run; set by runFaultsSuite before
// any process is forked.
mw_backend_t g_backend = MW_BACKEND_UCX;

bool deadPid(long pid);
long pidIn(const std::string& name, const std::string& prefix);

// The run's directory (redis-server's socket and log), named after this
// process, so that a later run can remove one left by a run that was killed.
class TempDir {
 public:
  TempDir() {
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(tmp, ec)) {
      const std::string name = entry.path().filename().string();
      const auto dot = name.find('.', sizeof kTempPrefix - 1);
      if (name.rfind(kTempPrefix, 0) == 0 && dot != std::string::npos &&
          deadPid(pidIn(name.substr(0, dot), kTempPrefix))) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
    std::string base = tmp.string() + "/" + kTempPrefix + std::to_string(getpid()) + ".XXXXXX";
    std::vector<char> tmpl(base.begin(), base.end());
    tmpl.push_back('\0');
    if (!mkdtemp(tmpl.data())) throw SuiteError("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = tmpl.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// ---- the partition: a network namespace behind a veth pair ---------------------

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

std::vector<std::string> shLines(const std::string& cmd) {
  std::vector<std::string> lines;
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return lines;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string s = buf;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    lines.push_back(s);
  }
  pclose(p);
  return lines;
}

// The pid in a name made by an earlier run (prefix + digits), or -1.
long pidIn(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return -1;
  return std::stol(digits);
}

bool deadPid(long pid) { return pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// Whether this address is already configured on this side (another run's
// veth): binding to an address that is not local fails.
bool addressIsLocal(const char* ip) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a.sin_addr);
  bool local = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return local;
}

class Netns {
 public:
  Netns()
      : ns_(kNsPrefix + std::to_string(getpid())),
        outer_(kOuterPrefix + std::to_string(getpid())),
        inner_(kInnerPrefix + std::to_string(getpid())) {}
  ~Netns() { teardown(); }
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  // Makes the namespace and the veth pair; "" on success, else why not.
  std::string setup() {
    if (geteuid() != 0) return "needs root to make a network namespace";
    sweepStale();
    if (addressIsLocal(kOuterAddr)) {
      return std::string(kOuterAddr) + " is already configured here (another run?)";
    }
    if (!sh("ip netns add " + ns_)) return "`ip netns add " + ns_ + "` failed";
    made_ns_ = true;
    if (!sh("ip link add " + outer_ + " type veth peer name " + inner_)) return "`ip link add ... type veth` failed";
    made_link_ = true;
    const bool ok = sh("ip link set " + inner_ + " netns " + ns_) &&
                    sh("ip addr add " + std::string(kOuterAddr) + "/24 dev " + outer_) &&
                    sh("ip link set " + outer_ + " up") &&
                    sh("ip netns exec " + ns_ + " ip addr add " + kInnerAddr + "/24 dev " + inner_) &&
                    sh("ip netns exec " + ns_ + " ip link set " + inner_ + " up") &&
                    sh("ip netns exec " + ns_ + " ip link set lo up");
    if (!ok) return "configuring the veth pair failed";
    ctl_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (ctl_ < 0) return "socket for interface control failed";
    if (!waitOperUp(5000)) return "the veth pair did not come up";
    return "";
  }

  void teardown() {
    if (ctl_ >= 0) close(ctl_);
    ctl_ = -1;
    if (made_link_) sh("ip link del " + outer_);  // takes the peer with it
    if (made_ns_) sh("ip netns del " + ns_);
    made_link_ = made_ns_ = false;
  }

  // In a forked child, before it makes any socket. As `ip netns exec`
  // does, it also mounts this namespace's /sys in a mount namespace of its
  // own: UCX finds its network devices there, and with the host's /sys it
  // would offer the peer no tcp lane at all.
  bool enter() const {
    int fd = open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = setns(fd, CLONE_NEWNET) == 0;
    close(fd);
    return ok && unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
           umount2("/sys", MNT_DETACH) == 0 && mount("sysfs", "/sys", "sysfs", 0, nullptr) == 0;
  }

  // The fault and its repair: the outer veth's IFF_UP flag, set with the
  // same ioctl-level change `ip link set <dev> down|up` makes, in-process so
  // that the fault's timestamp is not blurred by starting `ip`.
  bool setUp(bool up) {
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, outer_.c_str(), IFNAMSIZ - 1);
    if (ioctl(ctl_, SIOCGIFFLAGS, &ifr) != 0) return sh("ip link set " + outer_ + (up ? " up" : " down"));
    if (up) {
      ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    } else {
      ifr.ifr_flags = static_cast<short>(ifr.ifr_flags & ~IFF_UP);
    }
    return ioctl(ctl_, SIOCSIFFLAGS, &ifr) == 0 || sh("ip link set " + outer_ + (up ? " up" : " down"));
  }

  bool waitOperUp(int limit_ms) {
    for (int waited = 0;; waited += 5) {
      std::ifstream in("/sys/class/net/" + outer_ + "/operstate");
      std::string state;
      if (in >> state && state == "up") return true;
      if (waited >= limit_ms) return false;
      sleepMs(5);
    }
  }

  const std::string& name() const { return ns_; }
  const std::string& outer() const { return outer_; }

 private:
  // Namespaces and veths of earlier runs whose process is gone (killed
  // before it could clean up).
  static void sweepStale() {
    for (const std::string& line : shLines("ip netns list")) {
      std::string name = line.substr(0, line.find(' '));
      if (deadPid(pidIn(name, kNsPrefix))) sh("ip netns del " + name);
    }
    for (const std::string& line : shLines("ip -o link show")) {
      // "12: mwbfo123@if11: <...>"
      auto a = line.find(": ");
      if (a == std::string::npos) continue;
      std::string name = line.substr(a + 2);
      name = name.substr(0, name.find_first_of("@:"));
      if (deadPid(pidIn(name, kOuterPrefix))) sh("ip link del " + name);
    }
  }

  std::string ns_, outer_, inner_;
  bool made_ns_ = false, made_link_ = false;
  int ctl_ = -1;
};

// ---- part 1: detection latency ------------------------------------------------

enum class Fault { Kill9, Sigstop, Partition };

const char* faultName(Fault f) {
  switch (f) {
    case Fault::Kill9: return "kill9";
    case Fault::Sigstop: return "sigstop";
    case Fault::Partition: return "partition";
  }
  return "?";
}

struct KindBoard {
  std::atomic<int> go{-1};          // the trial the survivor should run next
  std::atomic<int> quit{0};
  std::atomic<int> surv_ready{-1};  // trial whose world the survivor formed and streams on
  std::atomic<int> surv_done{-1};   // trial whose world the survivor destroyed
  std::atomic<int> victim_ready{0};
  LaneStats surv, victim;
};

struct KindResult {
  std::string fault;
  std::string skipped;  // why the kind did not run; empty when it did
  std::vector<double> ms;
  int by_request = 0, by_event = 0;
  int destroy_hangs = 0;  // trials whose survivor never got out of mw_world_destroy
};

struct Env {
  std::string redis_url;   // unix socket (or --redis)
  std::string tcp_url;     // to the private redis-server over the veth, for the partition
  std::string mw_namespace;
  Netns* netns = nullptr;  // null: no partition
  Settings heartbeat;      // --heartbeat-interval-ms, --heartbeat-timeout-ms as given
};

std::string trialWorld(Fault f, int t) { return std::string("faults.") + faultName(f) + "." + std::to_string(t); }

Settings settingsFor(const Env& env, const std::string& url, const std::string& bind) {
  Settings s = {{"redis_url", url}, {"namespace", env.mw_namespace}, {"bind_address", bind}};
  s.insert(s.end(), env.heartbeat.begin(), env.heartbeat.end());
  return s;
}

// One survivor serves the trials of a kind from `first_trial` on: forms trial
// t's world as rank 0 once told to, streams until it sees the break, destroys
// the world.
int survivorMain(Fault kind, int first_trial, const Settings& settings, KindBoard& b) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  // The events are read on a thread of their own, so an event is timed when
  // it arrives, not when the completion loop next looks.
  std::mutex mu;
  std::string current;  // the world whose break counts
  std::atomic<bool> stop_events{false};
  std::thread events([&] {
    mw_event_t ev;
    while (!stop_events.load()) {
      if (mw_next_event(ctx, &ev, 50) != MW_OK || ev.type != MW_EVENT_WORLD_BROKEN) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (current.empty() || current != ev.world_name) continue;
      b.surv.markBroken(LaneStats::kByEvent);
      b.surv.noteBlamed(ev.peer_rank);
    }
  });
  int rc = 0;
  for (int t = first_trial; rc == 0; ++t) {
    while (b.go.load() < t && !b.quit.load()) std::this_thread::sleep_for(1ms);
    if (b.quit.load()) break;
    const std::string name = trialWorld(kind, t);
    {
      std::lock_guard<std::mutex> lock(mu);
      b.surv.reset();
      current = name;
    }
    mw_world_t* w = nullptr;
    mw_status_t s = mw_world_create(ctx, name.c_str(), 0, 2, g_backend, 0, kCreateTimeoutMs, &w);
    if (s != MW_OK) {
      std::fprintf(stderr, "mw_bench faults: survivor: mw_world_create %s: %s\n", name.c_str(), mw_last_error());
      rc = 1;
      break;
    }
    {
      Lane lane(w, static_cast<uint32_t>(t) + 1, 0, 0, kDetectBytes, kDetectWindow, b.surv);
      lane.start();
      b.surv_ready.store(t);
      mw_completion_t done[32];
      while (!lane.broken() && !b.quit.load()) {
        size_t n = 0;
        if (mw_poll(ctx, done, 32, 20, &n) != MW_OK) {
          std::fprintf(stderr, "mw_bench faults: survivor: mw_poll: %s\n", mw_last_error());
          rc = 1;
          break;
        }
        for (size_t k = 0; k < n; ++k) {
          if (Lane::tagOf(done[k].user_data) == lane.tag()) {
            lane.complete(done[k]);
          } else {
            mw_request_free(done[k].request);
          }
        }
      }
      mw_world_destroy(w);
      lane.releaseAfterDestroy();
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      current.clear();
    }
    b.surv_done.store(t);
  }
  stop_events.store(true);
  events.join();
  mw_context_free(ctx);
  return rc;
}

// A victim lives for one trial: joins trial t's world as rank 1 and streams
// until it is killed.
int victimMain(Fault kind, int t, const Settings& settings, const Netns* netns, KindBoard& b) {
  if (netns && !netns->enter()) {
    std::fprintf(stderr, "mw_bench faults: victim: cannot enter namespace %s: %s\n", netns->name().c_str(),
                 std::strerror(errno));
    return 1;
  }
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  const std::string name = trialWorld(kind, t);
  mw_world_t* w = nullptr;
  if (mw_world_create(ctx, name.c_str(), 1, 2, g_backend, 0, kCreateTimeoutMs, &w) != MW_OK) {
    std::fprintf(stderr, "mw_bench faults: victim: mw_world_create %s: %s\n", name.c_str(), mw_last_error());
    mw_context_free(ctx);
    return 1;
  }
  int rc = 0;
  {
    Lane lane(w, 1, 0, 1, kDetectBytes, kDetectWindow, b.victim);
    lane.start();
    b.victim_ready.store(1);
    mw_completion_t done[32];
    while (!b.quit.load()) {
      size_t n = 0;
      if (mw_poll(ctx, done, 32, 100, &n) != MW_OK) {
        rc = 1;
        break;
      }
      for (size_t k = 0; k < n; ++k) lane.complete(done[k]);
    }
    mw_world_destroy(w);
    lane.releaseAfterDestroy();
  }
  mw_context_free(ctx);
  return rc;
}

KindResult runKind(Fault kind, const Env& env, std::size_t trials) {
  KindResult res;
  res.fault = faultName(kind);
  const bool partition = kind == Fault::Partition;
  const Settings surv_settings = settingsFor(env, env.redis_url, partition ? kOuterAddr : "127.0.0.1");
  const Settings victim_settings =
      partition ? settingsFor(env, env.tcp_url, kInnerAddr) : settingsFor(env, env.redis_url, "127.0.0.1");
  Shared<KindBoard> b;
  // Replaced after a trial whose destroy hung.
  std::unique_ptr<Child> survivor;
  for (int t = 0; t < static_cast<int>(trials); ++t) {
    const std::string trial = res.fault + " trial " + std::to_string(t + 1);
    if (!survivor) {
      survivor = std::make_unique<Child>(res.fault + " survivor",
                                         [&] { return survivorMain(kind, t, surv_settings, *b); });
    }
    b->victim.reset();
    b->victim_ready.store(0);
    Child victim(res.fault + " victim " + std::to_string(t + 1),
                 [&] { return victimMain(kind, t, victim_settings, partition ? env.netns : nullptr, *b); });
    b->go.store(t);
    if (!waitUntil([&] {
          return b->surv_ready.load() == t && b->victim_ready.load() && b->surv.received.load() >= kWarmMessages &&
                 b->victim.received.load() >= kWarmMessages;
        }, kSetupLimit, {survivor.get(), &victim})) {
      throw SuiteError(trial + ": traffic did not start within 30 s");
    }
    if (b->surv.broken_at_ns.load() != 0) throw SuiteError(trial + ": the world broke before the fault");
    if (b->surv.corrupt.load() || b->victim.corrupt.load()) throw SuiteError(trial + ": corrupt payloads");

    int64_t fault_at = 0;
    switch (kind) {
      case Fault::Kill9:
        fault_at = monotonicNs();
        victim.signal(SIGKILL);
        break;
      case Fault::Sigstop:
        fault_at = monotonicNs();
        victim.signal(SIGSTOP);
        break;
      case Fault::Partition:
        fault_at = monotonicNs();
        if (!env.netns->setUp(false)) throw SuiteError(trial + ": cannot take " + env.netns->outer() + " down");
        break;
    }
    const bool seen = waitUntil([&] { return b->surv.broken_at_ns.load() != 0; }, kDetectLimit, {survivor.get()});
    victim.kill9();  // stopped or cut off: it has served its purpose
    if (partition && !(env.netns->setUp(true) && env.netns->waitOperUp(5000))) {
      throw SuiteError(trial + ": cannot bring " + env.netns->outer() + " back up");
    }
    if (!seen) throw SuiteError(trial + ": the survivor did not see the break within 10 s of the fault");
    const int64_t broken_at = b->surv.broken_at_ns.load();
    if (broken_at < fault_at) throw SuiteError(trial + ": the break was seen before the fault");
    res.ms.push_back(static_cast<double>(broken_at - fault_at) / 1e6);
    (b->surv.broken_by.load() == LaneStats::kByEvent ? res.by_event : res.by_request)++;

    const bool destroyed = waitUntil([&] { return b->surv_done.load() == t; }, kDestroyLimit, {survivor.get()});
    for (LaneStats* s : {&b->surv, &b->victim}) {
      if (s->corrupt.load() || s->errors.load()) {
        throw SuiteError(trial + ": " + std::to_string(s->corrupt.load()) + " corrupt payloads, " +
                         std::to_string(s->errors.load()) + " unexpected errors (" +
                         (s == &b->surv ? "survivor" : "victim") + ")");
      }
    }
    if (!destroyed) {
      // The sample stands (the break was seen); the survivor is stuck in
      // the library, so a new one takes the remaining trials.
      ++res.destroy_hangs;
      std::fprintf(stderr,
                   "mw_bench faults: %s: the survivor's mw_world_destroy of the broken world did not return within "
                   "%lld s; killed it, a new survivor takes the next trial\n",
                   trial.c_str(), static_cast<long long>(std::chrono::seconds(kDestroyLimit).count()));
      std::fflush(stderr);
      survivor.reset();
    }
  }
  if (survivor) {
    b->quit.store(1);
    if (!survivor->join(30s)) throw SuiteError(survivor->describe());
  }
  return res;
}

// Nearest rank: the ceil(q * n)-th smallest.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // (less a hair, so that 0.99 * 100 is 99, whatever the rounding)
  std::size_t rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()) - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

void printKind(const KindResult& r) {
  if (!r.skipped.empty()) {
    std::printf("%-10s %6s  skipped: %s\n", r.fault.c_str(), "-", r.skipped.c_str());
  } else {
    const auto [mn, mx] = std::minmax_element(r.ms.begin(), r.ms.end());
    std::printf("%-10s %6zu %9.2f %9.2f %9.2f %9.2f  %2d event, %2d request %14d\n", r.fault.c_str(), r.ms.size(),
                percentile(r.ms, 0.50), percentile(r.ms, 0.99), *mn, *mx, r.by_event, r.by_request, r.destroy_hangs);
  }
  std::fflush(stdout);
}

// ---- part 2: a healthy world while a neighbour fails ---------------------------

struct HealthyBoard {
  std::atomic<int> stop{0};
  std::atomic<int> ready_x{0}, ready_y{0}, ready_z{0};
  LaneStats xh, xf, yh, zf;
  std::atomic<int64_t> f_destroy_begin_ns{0}, f_destroy_end_ns{0};
};

struct Rep {
  double before = 0, during = 0, ratio = 0, detect_ms = 0, destroy_ms = 0;
  bool destroy_hung = false;  // X's mw_world_destroy(f) had not returned kDestroyLimit after the window
};

std::string healthyWorld(const char* w, int rep) { return std::string("healthy.") + w + "." + std::to_string(rep); }

// Reads the events of a process in part 2: breaks of its worlds go to their
// stats (the loop then sees the lane broken).
void drainEvents(mw_context_t* ctx, const std::vector<std::pair<std::string, LaneStats*>>& worlds) {
  mw_event_t ev;
  while (mw_next_event(ctx, &ev, 0) == MW_OK) {
    if (ev.type != MW_EVENT_WORLD_BROKEN) continue;
    for (const auto& [name, stats] : worlds) {
      if (name != ev.world_name) continue;
      stats->markBroken(LaneStats::kByEvent);
      stats->noteBlamed(ev.peer_rank);
    }
  }
}

// The end of a rep: everything measured is in shared memory already, so X
// and Y leave without mw_world_destroy / mw_context_free (their sockets close
// with the process). Tearing h down from both ends at once while sends are
// in flight is not what part 2 measures (the destroy of f after the kill is:
// it is timed, and reported as hung if it does not return).
[[noreturn]] void exitWithoutTeardown(int rc) {
  std::fflush(nullptr);
  _exit(rc);
}

int healthyX(int rep, const Settings& settings, HealthyBoard& b) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  const std::string hname = healthyWorld("h", rep), fname = healthyWorld("f", rep);
  mw_world_t *h = nullptr, *f = nullptr;
  if (mw_world_create(ctx, hname.c_str(), 0, 2, g_backend, 0, kCreateTimeoutMs, &h) != MW_OK ||
      mw_world_create(ctx, fname.c_str(), 0, 2, g_backend, 0, kCreateTimeoutMs, &f) != MW_OK) {
    std::fprintf(stderr, "mw_bench faults: X: mw_world_create: %s\n", mw_last_error());
    mw_context_free(ctx);  // destroys whichever was made
    return 1;
  }
  int rc = 0;
  {
    Lane lh(h, 1, 0, 0, kHealthyBytes, kHealthyWindow, b.xh);
    Lane lf(f, 2, 1, 0, kHealthyBytes, kHealthyWindow, b.xf);
    lh.start();
    lf.start();
    b.ready_x.store(1);
    mw_completion_t done[64];
    while (!b.stop.load()) {
      size_t n = 0;
      if (mw_poll(ctx, done, 64, 20, &n) != MW_OK) {
        std::fprintf(stderr, "mw_bench faults: X: mw_poll: %s\n", mw_last_error());
        rc = 1;
        break;
      }
      for (size_t k = 0; k < n; ++k) {
        const uint32_t tag = Lane::tagOf(done[k].user_data);
        if (tag == lh.tag()) {
          lh.complete(done[k]);
        } else if (tag == lf.tag() && f) {
          lf.complete(done[k]);
        } else {
          mw_request_free(done[k].request);
        }
      }
      drainEvents(ctx, {{hname, &b.xh}, {fname, &b.xf}});
      // What an application does with a broken world: tear it down, here,
      // on the thread that also drives the healthy one.
      if (f && lf.broken()) {
        b.f_destroy_begin_ns.store(monotonicNs());
        mw_status_t s = mw_world_destroy(f);
        b.f_destroy_end_ns.store(monotonicNs());
        f = nullptr;
        lf.releaseAfterDestroy();
        if (s != MW_OK) {
          std::fprintf(stderr, "mw_bench faults: X: mw_world_destroy(f): %s\n", mw_last_error());
          b.xf.errors.fetch_add(1);
        }
      }
    }
    exitWithoutTeardown(rc);
  }
}

// Y (world h) or Z (world f): rank 1 of one world, streaming until stopped
// (or, for Z, killed).
int healthyPeer(const std::string& name, int world_id, const Settings& settings, LaneStats& stats,
                std::atomic<int>& ready, const std::atomic<int>& stop) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  mw_world_t* w = nullptr;
  if (mw_world_create(ctx, name.c_str(), 1, 2, g_backend, 0, kCreateTimeoutMs, &w) != MW_OK) {
    std::fprintf(stderr, "mw_bench faults: mw_world_create %s: %s\n", name.c_str(), mw_last_error());
    mw_context_free(ctx);
    return 1;
  }
  int rc = 0;
  {
    Lane lane(w, 1, world_id, 1, kHealthyBytes, kHealthyWindow, stats);
    lane.start();
    ready.store(1);
    mw_completion_t done[64];
    while (!stop.load()) {
      size_t n = 0;
      if (mw_poll(ctx, done, 64, 20, &n) != MW_OK) {
        rc = 1;
        break;
      }
      for (size_t k = 0; k < n; ++k) lane.complete(done[k]);
      drainEvents(ctx, {{name, &stats}});
    }
    exitWithoutTeardown(rc);
  }
}

Rep runHealthyRep(int rep, const Env& env) {
  const Settings settings = settingsFor(env, env.redis_url, "127.0.0.1");
  const std::string what = "healthy rep " + std::to_string(rep + 1);
  Shared<HealthyBoard> b;
  Child x("X", [&] { return healthyX(rep, settings, *b); });
  Child y("Y", [&] { return healthyPeer(healthyWorld("h", rep), 0, settings, b->yh, b->ready_y, b->stop); });
  Child z("Z", [&] { return healthyPeer(healthyWorld("f", rep), 1, settings, b->zf, b->ready_z, b->stop); });
  if (!waitUntil([&] {
        return b->ready_x.load() && b->ready_y.load() && b->ready_z.load() &&
               b->xh.received.load() >= kHealthyWarmMessages && b->yh.received.load() >= kHealthyWarmMessages &&
               b->xf.received.load() >= kHealthyWarmMessages && b->zf.received.load() >= kHealthyWarmMessages;
      }, kSetupLimit, {&x, &y, &z})) {
    throw SuiteError(what + ": traffic did not start within 30 s");
  }
  sleepUntilNs(monotonicNs() + kSettleNs);

  const int64_t t_a = monotonicNs();
  const int64_t c_a = b->xh.received.load();
  sleepUntilNs(t_a + kMeasureNs);
  const int64_t c_b = b->xh.received.load();
  const int64_t t_kill = monotonicNs();
  z.signal(SIGKILL);
  sleepUntilNs(t_kill + kMeasureNs);
  const int64_t c_c = b->xh.received.load();
  const int64_t t_c = monotonicNs();
  z.kill9();  // reaps it

  const int64_t f_broken_at = b->xf.broken_at_ns.load();
  if (f_broken_at != 0 && f_broken_at < t_kill) throw SuiteError(what + ": world f broke before Z was killed");
  if (!waitUntil([&] { return b->xf.broken_at_ns.load() != 0; }, kDetectLimit, {&x, &y})) {
    throw SuiteError(what + ": X did not see f break within 10 s of the kill");
  }
  const bool destroyed = waitUntil([&] { return b->f_destroy_end_ns.load() != 0; }, kDestroyLimit, {&x, &y});
  if (b->xh.broken_at_ns.load() || b->yh.broken_at_ns.load()) {
    throw SuiteError(what + ": the healthy world h broke");
  }
  for (LaneStats* s : {&b->xh, &b->yh, &b->xf, &b->zf}) {
    if (s->corrupt.load() || s->errors.load()) {
      throw SuiteError(what + ": " + std::to_string(s->corrupt.load()) + " corrupt payloads, " +
                       std::to_string(s->errors.load()) + " unexpected errors");
    }
  }
  Rep r;
  r.before = static_cast<double>(c_b - c_a) / (static_cast<double>(t_kill - t_a) / 1e9);
  r.during = static_cast<double>(c_c - c_b) / (static_cast<double>(t_c - t_kill) / 1e9);
  r.ratio = r.before > 0 ? r.during / r.before : 0;
  r.detect_ms = static_cast<double>(b->xf.broken_at_ns.load() - t_kill) / 1e6;
  if (r.before <= 0) throw SuiteError(what + ": no traffic on h before the kill");
  if (!destroyed) {
    // X is stuck in the library (and h with it, as X drives both): what
    // the window measured stands; X and Y are killed rather than stopped.
    r.destroy_hung = true;
    r.destroy_ms = static_cast<double>(monotonicNs() - b->f_destroy_begin_ns.load()) / 1e6;
    std::fprintf(stderr,
                 "mw_bench faults: %s: X's mw_world_destroy(f) had not returned %.0f ms after it began; killed X and "
                 "Y\n",
                 what.c_str(), r.destroy_ms);
    std::fflush(stderr);
    return r;
  }
  r.destroy_ms = static_cast<double>(b->f_destroy_end_ns.load() - b->f_destroy_begin_ns.load()) / 1e6;

  b->stop.store(1);
  const bool x_ok = x.join(30s), y_ok = y.join(30s);
  if (!x_ok) throw SuiteError(what + ": " + x.describe());
  if (!y_ok) throw SuiteError(what + ": " + y.describe());
  return r;
}

// ---- reporting ------------------------------------------------------------------

std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

bool writeJson(const std::string& path, const BenchOptions& opt, const std::string& machine,
               const std::vector<KindResult>& kinds, const std::vector<Rep>& reps) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "mw_bench faults: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(f, "{\"bench\": %s, \"command\": %s, \"machine\": %s, ",
               jsonString(common::resultsName("faults", opt)).c_str(), jsonString(opt.command).c_str(),
               jsonString(machine).c_str());
  common::JsonRow top = common::backendFields(opt);
  for (auto& field : common::heartbeatFields(opt)) top.push_back(std::move(field));
  for (const auto& [key, value] : top) {
    std::fprintf(f, "%s: %s, ", jsonString(key).c_str(), value.c_str());
  }
  std::fprintf(f, "\"rows\": [");
  const char* sep = "";
  for (const KindResult& r : kinds) {
    if (r.skipped.empty()) {
      const auto [mn, mx] = std::minmax_element(r.ms.begin(), r.ms.end());
      std::fprintf(f,
                   "%s\n  {\"fault\": %s, \"trials\": %zu, \"p50_ms\": %s, \"p99_ms\": %s, \"min_ms\": %s, "
                   "\"max_ms\": %s, \"first_sign_event\": %d, \"first_sign_request\": %d, "
                   "\"destroy_hangs\": %d}",
                   sep, jsonString(r.fault).c_str(), r.ms.size(), jsonNumber(percentile(r.ms, 0.5)).c_str(),
                   jsonNumber(percentile(r.ms, 0.99)).c_str(), jsonNumber(*mn).c_str(), jsonNumber(*mx).c_str(),
                   r.by_event, r.by_request, r.destroy_hangs);
    } else {
      std::fprintf(f,
                   "%s\n  {\"fault\": %s, \"trials\": 0, \"p50_ms\": null, \"p99_ms\": null, \"min_ms\": null, "
                   "\"max_ms\": null, \"skipped\": %s}",
                   sep, jsonString(r.fault).c_str(), jsonString(r.skipped).c_str());
    }
    sep = ",";
  }
  std::vector<double> before, during, ratio;
  int hung = 0;
  for (const Rep& r : reps) {
    before.push_back(r.before);
    during.push_back(r.during);
    ratio.push_back(r.ratio);
    hung += r.destroy_hung;
  }
  std::fprintf(f,
               "%s\n  {\"fault\": \"healthy_ratio\", \"reps\": %zu, \"before_msgs_per_s\": %s, "
               "\"during_msgs_per_s\": %s, \"ratio_median\": %s, \"ratio_min\": %s, \"message_bytes\": %zu, "
               "\"destroy_hangs\": %d}",
               sep, reps.size(), jsonNumber(median(before)).c_str(), jsonNumber(median(during)).c_str(),
               jsonNumber(median(ratio)).c_str(), jsonNumber(*std::min_element(ratio.begin(), ratio.end())).c_str(),
               kHealthyBytes, hung);
  std::fprintf(f, "\n]}\n");
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "mw_bench faults: writing %s failed\n", path.c_str());
  return ok;
}


}  // namespace

int runFaultsSuite(const BenchOptions& opt) {
  if (opt.trials == 0) {
    std::fprintf(stderr, "mw_bench faults: --trials must be at least 1\n");
    return 2;
  }
  if (const std::string bad = common::heartbeatProblem(opt); !bad.empty()) {
    std::fprintf(stderr, "mw_bench faults: %s\n", bad.c_str());
    return 2;
  }
  const std::string machine = machineName();
  std::vector<KindResult> kinds;
  std::vector<Rep> reps;
  g_backend = common::backendOf(opt);
  SignalGuard signals;
  try {
    TempDir dir;
    Env env;
    env.mw_namespace = "mwbench-faults." + std::to_string(getpid());
    env.heartbeat = common::heartbeatSettings(opt);

    std::unique_ptr<Netns> netns;
    std::string partition_skip;
    if (!opt.redis_url.empty()) {
      partition_skip = "needs the suite's own redis-server reachable from the namespace (--redis was given)";
    } else {
      netns = std::make_unique<Netns>();
      partition_skip = netns->setup();
      if (!partition_skip.empty()) netns.reset();
    }
    std::unique_ptr<PrivateRedis> redis;
    env.redis_url = opt.redis_url;
    if (env.redis_url.empty()) {
      if (netns) {
        const int port = freeLoopbackPort();
        try {
          redis = std::make_unique<PrivateRedis>(
              dir.path(), std::vector<std::string>{"--port", std::to_string(port), "--bind", kOuterAddr, "127.0.0.1",
                                                   "--protected-mode", "no"});
          env.tcp_url = "redis://" + std::string(kOuterAddr) + ":" + std::to_string(port);
        } catch (const std::exception& e) {
          partition_skip = std::string("redis-server would not listen on ") + kOuterAddr + ": " + e.what();
          netns.reset();
        }
      }
      if (!redis) redis = std::make_unique<PrivateRedis>(dir.path(), std::vector<std::string>{});
      env.redis_url = redis->url();
    }
    env.netns = netns.get();

    std::printf("# %s on %s: %s\n", common::resultsName("faults", opt).c_str(), machine.c_str(), opt.command.c_str());
    std::printf("# multiworld %s, %s, %s, bind_address 127.0.0.1; Redis %s\n", mw_version_string(),
                opt.ucx ? ("UCX (UCX_TLS " + common::ucxTls() + ", error mode peer)").c_str() : "Gloo",
                common::heartbeatText(opt).c_str(),
                opt.redis_url.empty() ? "private redis-server on a unix socket" : "from --redis");
    std::printf("#\n# 1. detection latency: ms from the fault to the survivor's first sign of the break (a request "
                "completing with MW_ERR_WORLD_BROKEN or an MW_EVENT_WORLD_BROKEN event, whichever came first), "
                "CLOCK_MONOTONIC across processes\n");
    std::printf("#    each trial: a fresh 2-rank world between one survivor process (serving all trials of a kind) and "
                "a new victim process, checked %zu KiB messages both ways (%zu sends + %zu recvs outstanding per "
                "side), then the fault\n",
                kDetectBytes >> 10, kDetectWindow, kDetectWindow);
    std::printf("#    kill9 = SIGKILL the victim; sigstop = SIGSTOP it (SIGKILLed after the trial); partition = victim "
                "in netns %s behind veth %s (%s here, %s there, Redis over TCP to %s), fault = %s down (SIOCSIFFLAGS, "
                "the change `ip link set %s down` makes), back up after the trial\n",
                netns ? netns->name().c_str() : "mwbf<pid>", netns ? netns->outer().c_str() : "mwbfo<pid>",
                kOuterAddr, kInnerAddr, kOuterAddr, netns ? netns->outer().c_str() : "the outer veth",
                netns ? netns->outer().c_str() : "<dev>");
    std::printf("#    p50 and p99 are nearest-rank percentiles (the ceil(q*n)-th smallest sample): with fewer than "
                "100 trials p99 is the maximum; first_sign = how the break was first seen, per trial; "
                "destroy_hangs = trials whose survivor was still inside mw_world_destroy %lld s after the break "
                "(killed and replaced; the sample counts)\n",
                static_cast<long long>(std::chrono::seconds(kDestroyLimit).count()));
    std::printf("%-10s %6s %9s %9s %9s %9s  %-20s %14s\n", "fault", "trials", "p50_ms", "p99_ms", "min_ms", "max_ms",
                "first_sign", "destroy_hangs");
    std::fflush(stdout);

    for (Fault kind : {Fault::Kill9, Fault::Sigstop, Fault::Partition}) {
      if (kind == Fault::Partition && !netns) {
        KindResult r;
        r.fault = faultName(kind);
        r.skipped = partition_skip;
        kinds.push_back(r);
      } else {
        kinds.push_back(runKind(kind, env, opt.trials));
      }
      printKind(kinds.back());
    }

    std::printf("#\n# 2. healthy world during a failure: process X in h = {X, Y} and f = {X, Z}, all streaming checked "
                "%zu KiB messages (%zu sends + %zu recvs outstanding per side and world)\n",
                kHealthyBytes >> 10, kHealthyWindow, kHealthyWindow);
    std::printf("#    msgs/s = messages X received on h per second; before = the 2 s before kill -9 Z; during = the "
                "2 s from the kill (X sees f break and calls mw_world_destroy(f) on the thread that drives h); "
                "f_detect = kill -> X's first sign; f_destroy = duration of that mw_world_destroy (\"hung\": not "
                "returned %lld s after the window; X and Y killed, the rep counts)\n",
                static_cast<long long>(std::chrono::seconds(kDestroyLimit).count()));
    std::printf("%-5s %16s %16s %7s %12s %13s\n", "rep", "before_msgs_s", "during_msgs_s", "ratio", "f_detect_ms",
                "f_destroy_ms");
    std::fflush(stdout);
    for (int rep = 0; rep < kHealthyReps; ++rep) {
      reps.push_back(runHealthyRep(rep, env));
      const Rep& r = reps.back();
      if (r.destroy_hung) {
        std::printf("%-5d %16.0f %16.0f %7.3f %12.2f %13s\n", rep + 1, r.before, r.during, r.ratio, r.detect_ms,
                    ("hung>" + std::to_string(static_cast<long long>(r.destroy_ms))).c_str());
      } else {
        std::printf("%-5d %16.0f %16.0f %7.3f %12.2f %13.2f\n", rep + 1, r.before, r.during, r.ratio, r.detect_ms,
                    r.destroy_ms);
      }
      std::fflush(stdout);
    }
    std::vector<double> before, during, ratio;
    int hung = 0;
    for (const Rep& r : reps) {
      before.push_back(r.before);
      during.push_back(r.during);
      ratio.push_back(r.ratio);
      hung += r.destroy_hung;
    }
    std::printf("healthy_ratio: before %.0f msgs/s, during %.0f msgs/s (medians of %zu), ratio median %.3f, min %.3f "
                "(%.1f MB/s before); destroy hung in %d of %zu reps\n",
                median(before), median(during), reps.size(), median(ratio),
                *std::min_element(ratio.begin(), ratio.end()), median(before) * kHealthyBytes / 1e6, hung,
                reps.size());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mw_bench faults: %s\nmw_bench faults: FAILED\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty() && !writeJson(opt.json_path, opt, machine, kinds, reps)) return 1;
  return 0;
}

}  // namespace mwbench
