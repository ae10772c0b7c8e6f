#include "bench/soak/soak_driver.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>

#include "bench/fault_processes.h"
#include "bench/soak/soak_board.h"
#include "bench/soak/soak_member.h"
#include "bench/soak/soak_pinger.h"
#include "bench/soak/soak_progress.h"
#include "bench/soak/soak_referee.h"
#include "bench/soak/soak_topology.h"
#include "tools/lab/checked_traffic.h"
#include "tools/lab/netns.h"
#include "tools/lab/sentinel_group.h"
#include "tools/lab/shared.h"

namespace mwbench {
namespace soak {

namespace {

using mwlab::monotonicNs;

constexpr int64_t kMs = 1000000;
constexpr int64_t kS = 1000 * kMs;
constexpr int kCreateTimeoutMs = 10000;
constexpr int64_t kFormLimitNs = 120 * kS;     // the first formation of every world
constexpr int64_t kRecoverLimitNs = 90 * kS;   // every world formed again and moving after a fault
constexpr int64_t kSlowRecoveryNs = 15 * kS;  // said while waiting for a recovery
constexpr int64_t kRedisSettleNs = 500 * kMs;  // after a Redis fault, before its PINGs count again
constexpr int64_t kSettleNs = 500 * kMs;       // a fault's window stays open after the recovery
// A break is judged once this old: a crash that explains it is noticed by
// then.
constexpr int64_t kJudgeAfterNs = 100 * kMs;
constexpr auto kExitLimit = std::chrono::seconds(60);
// Leaks (soak_leaks.h): UCX closes a force-closed endpoint's socket from
// its progress thread a moment after the world that held it is gone, so a
// sample may catch a few, and their mappings; a leak of one per fault
// still shows as many. Private memory may grow by 5% of RSS after the
// warm-up, and more if it levels off.
constexpr LeakBounds kLeakBounds{4, 0, 8, 5};
constexpr int kPingSlowMs = 50;
// Sentinel must not fail over during a 3 s pause of the master.
constexpr int kSentinelDownAfterMs = 5000;
constexpr int kSentinelFailoverTimeoutMs = 10000;
// This host's address on the control network, which joins the members'
// namespaces to Redis; a cut of the data rails leaves it alone.
const char kControlNet[] = "10.71.100.";
const char kControlHost[] = "10.71.100.254";

class Driver {
 public:
  explicit Driver(const SoakConfig& cfg)
      : cfg_(cfg),
        worlds_(makeTopology(cfg.processes, "soak")),
        referee_(worlds_, bounds(cfg)),
        progress_(*board_, worlds_, cfg.processes),
        leaks_(std::clamp<int64_t>(static_cast<int64_t>(cfg.minutes * 60 * kS) / 5, 60 * kS, 120 * kS)),
        members_(static_cast<size_t>(cfg.processes)),
        dying_since_(static_cast<size_t>(cfg.processes), 0),
        breaks_seen_(static_cast<size_t>(cfg.processes), 0),
        notes_seen_(static_cast<size_t>(cfg.processes), 0) {}

  SoakResult run() {
    setUp();
    const int64_t origin = monotonicNs();
    referee_.setOrigin(origin);
    for (int m = 0; m < cfg_.processes; ++m) spawn(m);
    const Progress::Since zero = progress_.mark();
    if (!waitFor([&] { return progress_.everyWorldMoves(zero); }, kFormLimitNs)) {
      referee_.violation("the worlds did not all form within " + std::to_string(kFormLimitNs / kS) +
                         " s: " + progress_.stuck(zero));
    }
    std::printf("# every world formed in %.1f s\n", (monotonicNs() - origin) / 1e9);
    std::fflush(stdout);
    Schedule schedule(cfg_.seed, shape());
    const int64_t end = origin + static_cast<int64_t>(cfg_.minutes * 60 * kS);
    while (monotonicNs() < end) {
      const Fault f = schedule.next();
      watchUntil(monotonicNs() + f.gap_ms * kMs);
      runFault(f);
      sampleLeaks();
    }
    finish();
    SoakResult r = result();
    r.duration_s = (monotonicNs() - origin) / 1e9;
    return r;
  }

 private:
  static DetectBounds bounds(const SoakConfig& cfg) {
    DetectBounds b;
    b.stop_ms = cfg.heartbeat_timeout_ms + cfg.heartbeat_interval_ms;
    // A cut is known once every path has been down for a heartbeat
    // timeout, and a path is down a path timeout after its first
    // unanswered message.
    b.cut_ms = cfg.path_timeout_ms + cfg.heartbeat_timeout_ms + cfg.heartbeat_interval_ms;
    return b;
  }

  ScheduleShape shape() const {
    ScheduleShape s;
    s.kinds = cfg_.kinds;
    s.worlds = worlds_;
    s.processes = cfg_.processes;
    s.rails = cfg_.rails;
    s.heartbeat_timeout_ms = cfg_.heartbeat_timeout_ms;
    s.path_timeout_ms = cfg_.path_timeout_ms;
    return s;
  }

  void setUp() {
    mwlab::SentinelGroup::Options ro;
    ro.down_after_ms = kSentinelDownAfterMs;
    ro.failover_timeout_ms = kSentinelFailoverTimeoutMs;
    if (cfg_.rails == 2) {
      rails_ = std::make_unique<mwlab::Rails>(cfg_.processes, 2);
      const std::string bridge = rails_->lab().addBridge(std::string(kControlHost) + "/24");
      for (int m = 0; m < cfg_.processes; ++m) {
        rails_->lab().attach(rails_->ns(m), kControlNet + std::to_string(m + 1) + "/24", bridge);
      }
      ro.host = kControlHost;
    }
    redis_ = std::make_unique<mwlab::SentinelGroup>(ro);
    PingerSpec ps;
    ps.host = ro.host;
    ps.sentinel_ports = redis_->sentinelPorts();
    ps.master_name = mwlab::SentinelGroup::kMasterName;
    ps.slow_ms = kPingSlowMs;
    pinger_ = std::make_unique<Child>("redis pinger", [ps, this] { return runPinger(ps, board_->ping); });
    mw_namespace_ = "soak." + std::to_string(getpid());
  }

  MemberSpec memberSpec(int m) const {
    MemberSpec s;
    s.id = m;
    s.worlds = worlds_;
    s.backend = cfg_.backend;
    s.create_timeout_ms = kCreateTimeoutMs;
    s.settings = {{"redis_url", redis_->url()}, {"namespace", mw_namespace_}};
    if (cfg_.backend == MW_BACKEND_UCX) {
      s.settings.push_back({"data_addresses", rails_ ? mwlab::Rails::addresses({0, 1}, m) : "127.0.0.1"});
    } else {
      s.settings.push_back({"bind_address", rails_ ? mwlab::Rails::address(0, m) : "127.0.0.1"});
    }
    s.settings.insert(s.settings.end(), cfg_.heartbeat.begin(), cfg_.heartbeat.end());
    return s;
  }

  void spawn(int m) {
    const std::string ns = rails_ ? rails_->ns(m) : "";
    MemberSpec spec = memberSpec(m);
    Board* board = board_.get();
    members_[static_cast<size_t>(m)] = std::make_unique<Child>(
        "soak member " + std::to_string(m), [ns, spec, board] {
          if (!ns.empty() && !mwlab::NetLab::enter(ns)) {
            std::fprintf(stderr, "soak member %d: cannot enter namespace %s\n", spec.id, ns.c_str());
            return 97;
          }
          return runMember(spec, *board);
        });
    leaks_.started(m, members_[static_cast<size_t>(m)]->pid(), monotonicNs());
  }

  // A member's process is gone: what it recorded is judged and counted,
  // and a new process takes its slot.
  // `prepare` writes the new process's requests into its fresh slot.
  void replace(int m, const std::function<void(MemberSlot&)>& prepare = nullptr) {
    settle(m);
    MemberSlot& slot = board_->members[m];
    const int generation = slot.generation.load();
    slot.~MemberSlot();
    new (&slot) MemberSlot();
    slot.generation.store(generation + 1);
    if (prepare) prepare(slot);
    breaks_seen_[static_cast<size_t>(m)] = notes_seen_[static_cast<size_t>(m)] = 0;
    spawn(m);
  }

  // Judges what member m recorded since the last look, up to breaks seen
  // at `until_ns`.
  void consume(int m, int64_t until_ns = INT64_MAX) {
    MemberSlot& slot = board_->members[m];
    int& b = breaks_seen_[static_cast<size_t>(m)];
    for (const int n = std::min(slot.n_breaks.load(), kMaxBreaks); b < n && slot.breaks[b].seen_ns <= until_ns; ++b) {
      referee_.judge(m, slot.breaks[b]);
    }
    int& k = notes_seen_[static_cast<size_t>(m)];
    for (const int n = std::min(slot.n_notes.load(), kMaxNotes); k < n; ++k) {
      referee_.violation("member " + std::to_string(m) + " said: " + slot.notes[k]);
    }
  }

  // The last look at a slot whose process is gone: its counts join the totals.
  void settle(int m) {
    consume(m);
    MemberSlot& slot = board_->members[m];
    for (int w = 0; w < kMaxWorlds; ++w) add(slot.cells[w]);
    totals_.path_down += slot.path_down.load();
    totals_.path_up += slot.path_up.load();
    totals_.store_down += slot.store_down.load();
    totals_.store_up += slot.store_up.load();
  }

  void add(const Cell& c) {
    totals_.sent += c.sent.load();
    totals_.delivered += c.delivered.load();
    totals_.lost += c.lost.load();
    totals_.duplicated += c.duplicated.load();
    totals_.reordered += c.reordered.load();
    totals_.corrupt += c.corrupt.load();
    totals_.incarnations += c.incarnations.load();
    totals_.create_failures += c.create_failures.load();
    totals_.cancels_taken_back += c.cancels_taken_back.load();
    totals_.cancels_too_late += c.cancels_too_late.load();
  }

  // One look at everything: processes that ended on their own reported as
  // crashes and replaced, then the records judged.
  void look() {
    checkSignal();
    const int64_t now = monotonicNs();
    for (int m = 0; m < cfg_.processes; ++m) {
      Child& c = *members_[static_cast<size_t>(m)];
      int64_t& dying = dying_since_[static_cast<size_t>(m)];
      // A process is seen dying (PF_EXITING) by its peers before it can be
      // reaped, and their breaks may be recorded meanwhile: they are its
      // doing from the first sign on.
      if (!dying && processExiting(c.pid())) dying = now;
      if (!c.running()) {
        referee_.crashed(m, dying ? dying : now, "(pid " + std::to_string(c.pid()) + "): " + c.describe());
        std::printf("#   crash: %s\n", c.describe().c_str());
        std::fflush(stdout);
        dying = 0;
        replace(m);
      }
    }
    for (int m = 0; m < cfg_.processes; ++m) consume(m, now - kJudgeAfterNs);
    if (!pinger_->running()) throw std::runtime_error(pinger_->describe());
  }

  void watchUntil(int64_t until_ns) {
    for (;;) {
      look();
      if (monotonicNs() >= until_ns) return;
      sleepMs(2);
    }
  }

  bool waitFor(const std::function<bool()>& cond, int64_t limit_ns) {
    const int64_t end = monotonicNs() + limit_ns;
    for (;;) {
      look();
      if (cond()) return true;
      if (monotonicNs() >= end) return false;
      sleepMs(2);
    }
  }

  void runFault(const Fault& f) {
    ++faults_[faultName(f.kind)];
    const int64_t start = monotonicNs();
    referee_.begin(f, start);
    const bool redis = f.kind == FaultKind::RedisPause || f.kind == FaultKind::RedisFailover;
    if (redis) board_->ping.quiet.store(1);
    act(f);
    referee_.restored(monotonicNs());
    const Progress::Since since = progress_.mark();
    bool ok = waitFor([&] { return progress_.everyWorldMoves(since); }, kSlowRecoveryNs);
    if (!ok) {
      std::printf("#   still waiting after %lld s: %s\n", static_cast<long long>(kSlowRecoveryNs / kS),
                  progress_.stuck(since).c_str());
      std::fflush(stdout);
      ok = waitFor([&] { return progress_.everyWorldMoves(since); }, kRecoverLimitNs - kSlowRecoveryNs);
    }
    if (!ok) {
      referee_.violation("not every world formed again and moved within " + std::to_string(kRecoverLimitNs / kS) +
                         " s: " + progress_.stuck(since));
    }
    // What a fault sets off may land a moment after every world moves
    // again (a cancel may break its world a few deliveries later): still
    // the fault's.
    watchUntil(monotonicNs() + kSettleNs);
    for (int m = 0; m < cfg_.processes; ++m) consume(m);
    referee_.close(monotonicNs());
    if (redis) {
      watchUntil(monotonicNs() + kRedisSettleNs);
      board_->ping.quiet.store(0);
    }
    std::printf("[%7.1f s] fault %d: %s: %s in %.2f s\n", referee_.secondsAt(start), f.index, f.text().c_str(),
                ok ? "recovered" : "NOT recovered", (monotonicNs() - start) / 1e9);
    std::fflush(stdout);
  }

  // The fault itself, up to its end (the link back, the process resumed).
  void act(const Fault& f) {
    const int64_t hold = f.hold_ms * kMs;
    switch (f.kind) {
      case FaultKind::Kill9:
        members_[static_cast<size_t>(f.member)]->kill9();  // returns once reaped
        referee_.exited(monotonicNs());
        replace(f.member);
        return;
      case FaultKind::SigstopShort:
      case FaultKind::SigstopLong:
        members_[static_cast<size_t>(f.member)]->signal(SIGSTOP);
        watchUntil(monotonicNs() + hold);
        members_[static_cast<size_t>(f.member)]->signal(SIGCONT);
        return;
      case FaultKind::CutOneRail:
      case FaultKind::CutAllRails: {
        const mwlab::NetCut how = f.drop ? mwlab::NetCut::Drop : mwlab::NetCut::LinkDown;
        std::vector<int> cut;
        for (int k = 0; k < 2; ++k) {
          if (f.kind == FaultKind::CutAllRails || k == f.rail) cut.push_back(k);
        }
        for (int k : cut) {
          if (!rails_->lab().setCut(rails_->link(f.member, k), how, true)) throw std::runtime_error("cannot cut a rail");
        }
        watchUntil(monotonicNs() + hold);
        for (int k : cut) {
          if (!rails_->lab().setCut(rails_->link(f.member, k), how, false)) {
            throw std::runtime_error("cannot restore a rail");
          }
        }
        return;
      }
      case FaultKind::RedisPause: {
        const pid_t pid = redis_->masterPid();
        if (pid <= 0) throw std::runtime_error("no Redis master to pause");
        kill(pid, SIGSTOP);
        watchUntil(monotonicNs() + hold);
        kill(pid, SIGCONT);
        return;
      }
      case FaultKind::RedisFailover: {
        const int old = redis_->killMaster();
        if (!redis_->waitForNewMaster(old, std::chrono::seconds(60))) {
          throw std::runtime_error("Sentinel promoted no new master within 60 s");
        }
        redis_->restartKilled(std::chrono::seconds(60));
        return;
      }
      case FaultKind::Churn:
        for (int m : worlds_[static_cast<size_t>(f.world)].members) {
          board_->members[m].cells[f.world].churn_request.fetch_add(1);
        }
        return;
      case FaultKind::Cancel:
        board_->members[f.member].cells[f.world].cancel_request.fetch_add(1);
        return;
      case FaultKind::Shrink:
        shrinkAndGrow(f);
        return;
    }
  }

  // The shrink fault: the member is killed; the survivors of its
  // allreduce world shrink it (its other worlds form again, as after
  // kill9); its replacement then joins their grow as the newcomer.
  void shrinkAndGrow(const Fault& f) {
    const WorldSpec& world = worlds_[static_cast<size_t>(f.world)];
    std::vector<int> survivors;
    for (int m : world.members) {
      if (m != f.member) survivors.push_back(m);
    }
    for (int m : survivors) board_->members[m].cells[f.world].shrink_request.fetch_add(1);
    members_[static_cast<size_t>(f.member)]->kill9();  // returns once reaped
    referee_.exited(monotonicNs());
    replace(f.member, [&](MemberSlot& slot) {
      slot.cells[f.world].hold.store(1);
      slot.cells[f.world].joins.store(1);
    });
    Cell& replacement = board_->members[f.member].cells[f.world];
    const int smaller = static_cast<int>(survivors.size());
    const bool shrunk = waitFor(
        [&] {
          for (int m : survivors) {
            const Cell& c = board_->members[m].cells[f.world];
            if (c.shrink_done.load() != c.shrink_request.load() || c.state.load() != kRunning ||
                c.order_size.load() != smaller) {
              return false;
            }
          }
          return true;
        },
        kRecoverLimitNs);
    if (!shrunk) {
      // It forms again as after kill9 (the survivors said why in notes).
      referee_.violation("the survivors of " + world.name + " did not shrink it within " +
                         std::to_string(kRecoverLimitNs / kS) + " s");
      replacement.joins.store(0);
      replacement.hold.store(0);
      return;
    }
    // The newcomer's ranks: the survivors' order, then itself.
    const Cell& first = board_->members[survivors[0]].cells[f.world];
    for (int r = 0; r < smaller; ++r) replacement.order[r].store(first.order[r].load());
    replacement.order[smaller].store(f.member);
    replacement.order_size.store(smaller + 1);
    for (int m : survivors) board_->members[m].cells[f.world].grow_request.fetch_add(1);
    replacement.hold.store(0);
  }

  void sampleLeaks() {
    const int64_t now = monotonicNs();
    for (int m = 0; m < cfg_.processes; ++m) leaks_.sample(m, members_[static_cast<size_t>(m)]->pid(), now);
  }

  // The end of the run: every world ends gracefully, every member exits.
  void finish() {
    board_->stop.store(1);
    for (int m = 0; m < cfg_.processes; ++m) {
      Child& c = *members_[static_cast<size_t>(m)];
      // Every exit but a clean one at the end is a crash.
      if (!c.join(kExitLimit)) referee_.crashed(m, monotonicNs(), "at the end of the run: " + c.describe());
      settle(m);
    }
    board_->ping.stop.store(1);
    pinger_->join(std::chrono::seconds(10));
    const Growth g = leaks_.growth(kLeakBounds);
    if (g.leak) {
      char text[600];
      std::snprintf(text, sizeof text, "leak: fds +%d, threads +%d, maps +%d, private memory %+.1f%% of RSS (%s)",
                    g.fds, g.threads, g.maps, g.private_pct, g.worst.c_str());
      referee_.violation(text);
    }
    const PingBoard& p = board_->ping;
    if (p.slow.load() || p.failures.load()) {
      char text[200];
      std::snprintf(text, sizeof text, "Redis: %lld of %lld PINGs slower than %d ms (worst %.1f ms at +%.1f s), %lld failed",
                    static_cast<long long>(p.slow.load()), static_cast<long long>(p.pings.load()), kPingSlowMs,
                    p.worst_us.load() / 1e3, referee_.secondsAt(p.worst_at_ns.load()),
                    static_cast<long long>(p.failures.load()));
      referee_.violation(text);
    }
  }

  SoakResult result() const {
    SoakResult r = totals_;
    r.faults = faults_;
    r.crashes = referee_.crashes();
    r.false_breaks = referee_.falseBreaks();
    r.missed_breaks = referee_.missedBreaks();
    r.fault_breaks = referee_.faultBreaks();
    r.churn_breaks = referee_.churnBreaks();
    r.cancel_breaks = referee_.cancelBreaks();
    r.detect_ms = referee_.detections();
    r.kill_exit_ms = referee_.exitMs();
    r.growth = leaks_.growth(kLeakBounds);
    const PingBoard& p = board_->ping;
    r.pings = p.pings.load();
    r.ping_failures = p.failures.load();
    r.ping_slow = p.slow.load();
    r.ping_worst_ms = p.worst_us.load() / 1e3;
    r.violations = referee_.violations();
    r.fault_log = referee_.faultLog();
    r.first_violation_fault = referee_.firstViolationFault();
    return r;
  }

  const SoakConfig cfg_;
  const std::vector<WorldSpec> worlds_;
  mwlab::Shared<Board> board_;
  Referee referee_;
  Progress progress_;
  LeakWatch leaks_;
  std::unique_ptr<mwlab::Rails> rails_;
  std::unique_ptr<mwlab::SentinelGroup> redis_;
  std::unique_ptr<Child> pinger_;
  std::vector<std::unique_ptr<Child>> members_;
  std::vector<int64_t> dying_since_;  // when a member process was first seen exiting on its own, 0 = not
  std::vector<int> breaks_seen_, notes_seen_;
  std::string mw_namespace_;
  SoakResult totals_;
  std::map<std::string, int> faults_;
};

}  // namespace

SoakResult runSoak(const SoakConfig& cfg) {
  Driver d(cfg);
  return d.run();
}

}  // namespace soak
}  // namespace mwbench
