#include "bench/falsebreaks_suite.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <multiworld/multiworld.h>

#include "bench/fault_processes.h"
#include "bench/fault_traffic.h"
#include "bench/suite_common.h"
#include "tools/lab/shared.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace std::chrono_literals;
using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr int kMembers = 4;
constexpr int kWorlds = kMembers * (kMembers - 1) / 2;
constexpr int kWorldsPerMember = kMembers - 1;
constexpr std::size_t kBytes = 4096;
constexpr std::size_t kWindow = 4;
constexpr int64_t kWarmMessages = 50;  // per world and side, before the load
constexpr auto kCpuLoad = 10s;
constexpr auto kRedisPause = 3s;
constexpr auto kGraceBase = 2s;  // after the load, plus twice the heartbeat timeout
constexpr auto kSetupLimit = 60s;
constexpr int kCreateTimeoutMs = 60000;

enum class Load { Cpu, RedisPause };

const char* loadName(Load l) { return l == Load::Cpu ? "cpu" : "redis_pause"; }

// World k joins members pairs()[k].first (rank 0) and .second (rank 1).
// Every member creates its worlds in this order, so the blocking creates
// cannot wait on each other in a cycle.
const std::array<std::pair<int, int>, kWorlds>& pairs() {
  static const std::array<std::pair<int, int>, kWorlds> p = [] {
    std::array<std::pair<int, int>, kWorlds> out{};
    int k = 0;
    for (int i = 0; i < kMembers; ++i) {
      for (int j = i + 1; j < kMembers; ++j) out[k++] = {i, j};
    }
    return out;
  }();
  return p;
}

struct MemberBoard {
  std::atomic<int> ready{0};
  std::atomic<int> store_down{0};
  LaneStats lanes[kWorlds];  // only this member's worlds are used
};

struct Board {
  std::atomic<int> stop{0};
  MemberBoard members[kMembers];
};

struct LoadResult {
  Load load;
  int rounds = 0;
  int worlds = 0;
  int broken = 0;         // worlds that broke during the load or the grace after it
  int broken_before = 0;  // worlds that broke before the load began
  int64_t messages_during = 0;  // received by all members while the load lasted
  int store_down = 0;           // MW_EVENT_STORE_DOWN events, all members
  double load_s = 0, grace_s = 0;
  int burners = 0;
};

std::string worldName(Load load, int round, int k) {
  return std::string("falsebreaks.") + loadName(load) + "." + std::to_string(round) + "." + std::to_string(k);
}

// One member: forms its worlds, streams on all of them until told to stop,
// and records every break and store outage it is told of. Leaves without
// tearing down: all it measured is in shared memory.
int memberMain(int me, Load load, int round, const Settings& settings, mw_backend_t backend, MemberBoard& b,
               const std::atomic<int>& stop) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  std::vector<std::unique_ptr<Lane>> lanes;
  Lane* by_world[kWorlds] = {};
  std::vector<std::string> names(kWorlds);
  for (int k = 0; k < kWorlds; ++k) {
    const auto [lo, hi] = pairs()[k];
    if (me != lo && me != hi) continue;
    names[k] = worldName(load, round, k);
    mw_world_t* w = nullptr;
    if (mw_world_create(ctx, names[k].c_str(), me == lo ? 0 : 1, 2, backend, 0, kCreateTimeoutMs, &w) != MW_OK) {
      std::fprintf(stderr, "mw_bench falsebreaks: member %d: mw_world_create %s: %s\n", me, names[k].c_str(),
                   mw_last_error());
      return 1;
    }
    lanes.push_back(std::make_unique<Lane>(w, static_cast<uint32_t>(k) + 1, k, me == lo ? 0 : 1, kBytes, kWindow,
                                           b.lanes[k]));
    by_world[k] = lanes.back().get();
  }
  for (auto& lane : lanes) lane->start();
  b.ready.store(1);
  mw_completion_t done[64];
  int rc = 0;
  while (!stop.load()) {
    size_t n = 0;
    if (mw_poll(ctx, done, 64, 20, &n) != MW_OK) {
      std::fprintf(stderr, "mw_bench falsebreaks: member %d: mw_poll: %s\n", me, mw_last_error());
      rc = 1;
      break;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t k = Lane::tagOf(done[i].user_data) - 1;
      if (k < static_cast<uint32_t>(kWorlds) && by_world[k]) {
        by_world[k]->complete(done[i]);
      } else {
        mw_request_free(done[i].request);
      }
    }
    mw_event_t ev;
    while (mw_next_event(ctx, &ev, 0) == MW_OK) {
      if (ev.type == MW_EVENT_STORE_DOWN) b.store_down.fetch_add(1);
      // Members leave one by one at the end: what the others see then is
      // no false break.
      if (ev.type != MW_EVENT_WORLD_BROKEN || stop.load()) continue;
      for (int k = 0; k < kWorlds; ++k) {
        if (names[k] != ev.world_name) continue;
        b.lanes[k].markBroken(LaneStats::kByEvent);
        b.lanes[k].noteBlamed(ev.peer_rank);
        std::fprintf(stderr, "mw_bench falsebreaks: member %d saw %s break: %s\n", me, ev.world_name, ev.detail);
      }
    }
  }
  std::fflush(nullptr);
  _exit(rc);
}

// Keeps one CPU busy for `span`.
int burn(std::chrono::steady_clock::duration span) {
  volatile uint64_t x = 0;
  const auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 100000; ++k) x = x + k;
  }
  return 0;
}

// Sends SIGCONT to a paused redis-server on every way out.
class Paused {
 public:
  explicit Paused(pid_t pid) : pid_(pid) {
    if (kill(pid_, SIGSTOP) != 0) throw SuiteError("cannot SIGSTOP redis-server");
  }
  ~Paused() { kill(pid_, SIGCONT); }
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;

 private:
  pid_t pid_;
};

int64_t receivedByAll(Board& b) {
  int64_t n = 0;
  for (auto& m : b.members) {
    for (auto& l : m.lanes) n += l.received.load();
  }
  return n;
}

// Worlds that either member saw break.
int brokenWorlds(Board& b) {
  int n = 0;
  for (int k = 0; k < kWorlds; ++k) {
    const auto [lo, hi] = pairs()[k];
    n += b.members[lo].lanes[k].broken_at_ns.load() != 0 || b.members[hi].lanes[k].broken_at_ns.load() != 0;
  }
  return n;
}

void runRound(Load load, int round, const Settings& settings, mw_backend_t backend, pid_t redis_pid,
              std::chrono::milliseconds grace, LoadResult& res) {
  const std::string what = std::string(loadName(load)) + " round " + std::to_string(round + 1);
  mwlab::Shared<Board> b;
  std::vector<std::unique_ptr<Child>> members;
  for (int m = 0; m < kMembers; ++m) {
    members.push_back(std::make_unique<Child>("member " + std::to_string(m), [&, m] {
      return memberMain(m, load, round, settings, backend, b->members[m], b->stop);
    }));
  }
  auto warm = [&] {
    for (int k = 0; k < kWorlds; ++k) {
      const auto [lo, hi] = pairs()[k];
      if (!b->members[lo].ready.load() || !b->members[hi].ready.load()) return false;
      if (b->members[lo].lanes[k].received.load() < kWarmMessages ||
          b->members[hi].lanes[k].received.load() < kWarmMessages) {
        return false;
      }
    }
    return true;
  };
  if (!waitUntil(warm, kSetupLimit, {members[0].get(), members[1].get(), members[2].get(), members[3].get()})) {
    throw SuiteError(what + ": traffic did not start within 60 s");
  }
  const int broken_before = brokenWorlds(*b);
  const int64_t before = receivedByAll(*b);
  const int64_t t0 = monotonicNs();
  if (load == Load::Cpu) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    std::vector<std::unique_ptr<Child>> burners;
    for (long i = 0; i < cpus; ++i) {
      burners.push_back(std::make_unique<Child>("burner " + std::to_string(i), [] { return burn(kCpuLoad); }));
    }
    for (auto& c : burners) {
      if (!c->join(kCpuLoad + 30s)) throw SuiteError(what + ": " + c->describe());
    }
    res.burners = static_cast<int>(cpus);
  } else {
    Paused paused(redis_pid);
    sleepUntilNs(t0 + std::chrono::duration_cast<std::chrono::nanoseconds>(kRedisPause).count());
  }
  res.load_s = static_cast<double>(monotonicNs() - t0) / 1e9;
  res.messages_during += receivedByAll(*b) - before;
  // Watching that no member dies meanwhile.
  waitUntil([] { return false; }, grace, {members[0].get(), members[1].get(), members[2].get(), members[3].get()});
  res.grace_s = static_cast<double>(grace.count()) / 1e3;

  res.rounds++;
  res.worlds += kWorlds;
  res.broken_before += broken_before;
  res.broken += brokenWorlds(*b) - broken_before;
  for (auto& m : b->members) {
    res.store_down += m.store_down.load();
    for (auto& l : m.lanes) {
      if (l.corrupt.load() || l.errors.load()) {
        throw SuiteError(what + ": " + std::to_string(l.corrupt.load()) + " corrupt payloads, " +
                         std::to_string(l.errors.load()) + " unexpected errors");
      }
    }
  }
  b->stop.store(1);
  for (auto& m : members) {
    if (!m->join(30s)) throw SuiteError(what + ": " + m->describe());
  }
}

void printResult(const LoadResult& r) {
  std::printf("%-12s %6d %7d %7d %14d %8.1f %8.1f %8d %16lld %11d\n", loadName(r.load), r.rounds, r.worlds,
              r.broken, r.broken_before, r.load_s, r.grace_s, r.burners, static_cast<long long>(r.messages_during),
              r.store_down);
  std::fflush(stdout);
}

common::JsonRow jsonRow(const LoadResult& r) {
  using common::jnum;
  return {{"load", common::jsonString(loadName(r.load))},
          {"rounds", jnum(r.rounds)},
          {"worlds", jnum(r.worlds)},
          {"broken_worlds", jnum(r.broken)},
          {"broken_before_load", jnum(r.broken_before)},
          {"load_s", jnum(r.load_s)},
          {"grace_s", jnum(r.grace_s)},
          {"burners", jnum(r.burners)},
          {"messages_during_load", jnum(static_cast<double>(r.messages_during))},
          {"store_down_events", jnum(r.store_down)}};
}

}  // namespace

int runFalseBreaksSuite(const BenchOptions& opt) {
  if (const std::string bad = common::heartbeatProblem(opt); !bad.empty()) {
    std::fprintf(stderr, "mw_bench falsebreaks: %s\n", bad.c_str());
    return 2;
  }
  const std::string machine = common::machineName();
  const mw_backend_t backend = common::backendOf(opt);
  std::vector<LoadResult> results;
  SignalGuard signals;
  try {
    mwlab::TempDir dir("mw-bench-");
    PrivateRedis redis(dir.path());
    Settings settings = {{"redis_url", redis.url()},
                         {"namespace", "mwbench-falsebreaks." + std::to_string(getpid())},
                         {"bind_address", "127.0.0.1"}};
    for (auto& s : common::heartbeatSettings(opt)) settings.push_back(std::move(s));
    const auto grace = kGraceBase + 2 * common::heartbeatInForce(opt).timeout;

    std::printf("# %s on %s: %s\n", common::resultsName("falsebreaks", opt).c_str(), machine.c_str(),
                opt.command.c_str());
    std::printf("# multiworld %s, %s, %s, bind_address 127.0.0.1; private redis-server on a unix socket\n",
                mw_version_string(), common::backendName(opt), common::heartbeatText(opt).c_str());
    std::printf("# each round: %d member processes, a 2-rank world per pair (%d worlds), checked %zu KiB messages "
                "both ways (%zu sends + %zu recvs outstanding per side), then the load, then a grace of %lld ms\n",
                kMembers, kWorlds, kBytes >> 10, kWindow, kWindow, static_cast<long long>(grace.count()));
    std::printf("# cpu = one busy-loop process per online CPU for %lld s at this process's priority; redis_pause = "
                "redis-server SIGSTOPped for %lld s\n",
                static_cast<long long>(std::chrono::seconds(kCpuLoad).count()),
                static_cast<long long>(std::chrono::seconds(kRedisPause).count()));
    std::printf("# broken = worlds that either member saw break during the load or the grace (each one a false "
                "break: no member failed); msgs_during = messages all members received while the load lasted\n");
    std::printf("%-12s %6s %7s %7s %14s %8s %8s %8s %16s %11s\n", "load", "rounds", "worlds", "broken",
                "broken_before", "load_s", "grace_s", "burners", "msgs_during", "store_down");
    std::fflush(stdout);
    for (Load load : {Load::Cpu, Load::RedisPause}) {
      LoadResult r;
      r.load = load;
      for (int round = 0; round < static_cast<int>(opt.trials); ++round) {
        runRound(load, round, settings, backend, redis.pid(), grace, r);
      }
      printResult(r);
      results.push_back(r);
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mw_bench falsebreaks: %s\nmw_bench falsebreaks: FAILED\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<common::JsonRow> rows;
    for (const auto& r : results) rows.push_back(jsonRow(r));
    common::JsonRow top = common::backendFields(opt);
    for (auto& field : common::heartbeatFields(opt)) top.push_back(std::move(field));
    if (!common::writeJson(opt.json_path, common::resultsName("falsebreaks", opt), opt.command, machine, rows, top)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace mwbench
