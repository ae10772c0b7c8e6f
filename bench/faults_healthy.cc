#include "bench/faults_healthy.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <multiworld/multiworld.h>

#include "bench/fault_processes.h"
#include "bench/fault_traffic.h"
#include "tools/lab/shared.h"

namespace mwbench {
namespace faults {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kMeasureNs = 2000000000;  // each of the two windows
constexpr int64_t kHealthyWarmMessages = 100;
constexpr int64_t kSettleNs = 500000000;  // streaming before the first window

struct HealthyBoard {
  std::atomic<int> stop{0};
  std::atomic<int> ready_x{0}, ready_y{0}, ready_z{0};
  LaneStats xh, xf, yh, zf;
  std::atomic<int64_t> f_destroy_begin_ns{0}, f_destroy_end_ns{0};
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

int healthyX(int rep, mw_backend_t backend, std::size_t bytes, const Settings& settings, HealthyBoard& b) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  const std::string hname = healthyWorld("h", rep), fname = healthyWorld("f", rep);
  mw_world_t* h = joinPairWorld(ctx, hname, 0, backend, "X");
  mw_world_t* f = h ? joinPairWorld(ctx, fname, 0, backend, "X") : nullptr;
  if (!f) {
    mw_context_free(ctx);  // destroys whichever was made
    return 1;
  }
  int rc = 0;
  {
    Lane lh(h, 1, 0, 0, bytes, kHealthyWindow, b.xh);
    Lane lf(f, 2, 1, 0, bytes, kHealthyWindow, b.xf);
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
int healthyPeer(const char* who, const std::string& name, int world_id, mw_backend_t backend, std::size_t bytes,
                const Settings& settings, LaneStats& stats, std::atomic<int>& ready, const std::atomic<int>& stop) {
  mw_context_t* ctx = newBenchContext(settings);
  if (!ctx) return 1;
  mw_world_t* w = joinPairWorld(ctx, name, 1, backend, who);
  if (!w) {
    mw_context_free(ctx);
    return 1;
  }
  int rc = 0;
  {
    Lane lane(w, 1, world_id, 1, bytes, kHealthyWindow, stats);
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

}  // namespace

Rep runHealthyRep(int rep, const Env& env) {
  const Settings settings = settingsFor(env, env.redis_url, "127.0.0.1");
  const std::string what = "healthy rep " + std::to_string(rep + 1);
  mwlab::Shared<HealthyBoard> b;
  const mw_backend_t backend = env.backend;
  Child x("X", [&] { return healthyX(rep, backend, env.healthy_bytes, settings, *b); });
  auto peer = [&](const char* who, const char* world, int id, LaneStats& stats, std::atomic<int>& ready) {
    return healthyPeer(who, healthyWorld(world, rep), id, backend, env.healthy_bytes, settings, stats, ready, b->stop);
  };
  Child y("Y", [&] { return peer("Y", "h", 0, b->yh, b->ready_y); });
  Child z("Z", [&] { return peer("Z", "f", 1, b->zf, b->ready_z); });
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

}  // namespace faults
}  // namespace mwbench
