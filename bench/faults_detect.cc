#include "bench/faults_detect.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include <multiworld/multiworld.h>

#include "bench/fault_processes.h"
#include "bench/fault_traffic.h"
#include "tools/lab/process_exit.h"
#include "tools/lab/shared.h"

namespace mwbench {
namespace faults {
namespace {

using namespace std::chrono_literals;

// Messages each side must have received before the fault.
constexpr int64_t kWarmMessages = 20;

struct KindBoard {
  std::atomic<int> go{-1};          // the trial the survivor should run next
  std::atomic<int> quit{0};
  std::atomic<int> surv_ready{-1};  // trial whose world the survivor formed and streams on
  std::atomic<int> surv_done{-1};   // trial whose world the survivor destroyed
  std::atomic<int> victim_ready{0};
  LaneStats surv, victim;
};

std::string trialWorld(Fault f, int t) { return std::string("faults.") + faultName(f) + "." + std::to_string(t); }

// One survivor serves the trials of a kind from `first_trial` on: forms trial
// t's world as rank 0 once told to, streams until it sees the break, destroys
// the world.
int survivorMain(Fault kind, int first_trial, mw_backend_t backend, const Settings& settings, KindBoard& b) {
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
    mw_world_t* w = joinPairWorld(ctx, name, 0, backend, "survivor");
    if (!w) {
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
int victimMain(Fault kind, int t, mw_backend_t backend, const Settings& settings, const Partition* partition,
               KindBoard& b) {
  if (partition && !mwlab::NetLab::enter(partition->ns)) {
    std::fprintf(stderr, "mw_bench faults: victim: cannot enter namespace %s: %s\n", partition->ns.c_str(),
                 std::strerror(errno));
    return 1;
  }
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  const std::string name = trialWorld(kind, t);
  mw_world_t* w = joinPairWorld(ctx, name, 1, backend, "victim");
  if (!w) {
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

}  // namespace

const char* faultName(Fault f) {
  switch (f) {
    case Fault::Kill9: return "kill9";
    case Fault::Sigstop: return "sigstop";
    case Fault::Partition: return "partition";
  }
  return "?";
}

KindResult runKind(Fault kind, const Env& env, std::size_t trials) {
  KindResult res;
  res.fault = faultName(kind);
  const bool partition = kind == Fault::Partition;
  const Settings surv_settings = settingsFor(env, env.redis_url, partition ? kOuterAddr : "127.0.0.1");
  const Settings victim_settings =
      partition ? settingsFor(env, env.tcp_url, kInnerAddr) : settingsFor(env, env.redis_url, "127.0.0.1");
  const Partition* victim_net = partition ? env.partition : nullptr;
  mwlab::Shared<KindBoard> b;
  // Replaced after a trial whose destroy hung.
  std::unique_ptr<Child> survivor;
  for (int t = 0; t < static_cast<int>(trials); ++t) {
    const std::string trial = res.fault + " trial " + std::to_string(t + 1);
    if (!survivor) {
      survivor = std::make_unique<Child>(res.fault + " survivor",
                                         [&] { return survivorMain(kind, t, env.backend, surv_settings, *b); });
    }
    b->victim.reset();
    b->victim_ready.store(0);
    Child victim(res.fault + " victim " + std::to_string(t + 1),
                 [&] { return victimMain(kind, t, env.backend, victim_settings, victim_net, *b); });
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
        // The victim is our unreaped child: its pid stays its own.
        if (mwlab::waitForExit(victim.pid(), 10s) == mwlab::ExitWait::Exited) {
          res.exit_ms.push_back(static_cast<double>(monotonicNs() - fault_at) / 1e6);
        }
        break;
      case Fault::Sigstop:
        fault_at = monotonicNs();
        victim.signal(SIGSTOP);
        break;
      case Fault::Partition:
        fault_at = monotonicNs();
        if (!env.partition->lab.setUpNow(env.partition->link, false)) {
          throw SuiteError(trial + ": cannot take " + env.partition->link.a.dev + " down");
        }
        break;
    }
    const bool seen = waitUntil([&] { return b->surv.broken_at_ns.load() != 0; }, kDetectLimit, {survivor.get()});
    victim.kill9();  // stopped or cut off: it has served its purpose
    if (partition && !env.partition->lab.setUp(env.partition->link, true)) {
      throw SuiteError(trial + ": cannot bring " + env.partition->link.a.dev + " back up");
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

}  // namespace faults
}  // namespace mwbench
