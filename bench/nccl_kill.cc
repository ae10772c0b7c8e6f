// The nccl suite's kill part: isolation of worlds under a kill -9. Three
// processes: A and B share the NCCL world "doomed", A and C the NCCL world
// "kept". A runs float32 allreduces of 16 MiB on "kept" back to back, timed
// in windows of a fixed number of operations (about 1 s each), while a
// receive from B is pending on "doomed" and B sits idle. After the baseline
// windows the suite's process kill -9's B; A measures on: how long until
// its pending receive ends (MW_ERR_WORLD_BROKEN), whether "kept" slowed
// down meanwhile, and how long destroying the broken world takes.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "bench/nccl_parts.h"
#include "bench/suite_common.h"
#include "tools/lab/clock.h"
#include "tools/lab/shared.h"

namespace mwbench::gpu {
namespace {

using namespace common;

constexpr size_t kCount = (size_t{16} << 20) / sizeof(float);  // "kept"'s allreduce
constexpr size_t kSmall = (size_t{1} << 20) / sizeof(float);   // what "doomed" carries
constexpr int kCreateMs = 60000;
constexpr int kWaitMs = 30000;
constexpr int kCalibOps = 5;
constexpr double kWindowS = 1.0;
// A warm-up window, then the baseline, then the windows after the kill.
constexpr int kWindows = 1 + kKillBaselineWindows + kKillAfterWindows;
// How long after the kill A waits for the break before it gives up.
constexpr double kDetectLimitS = 10;

struct Board {
  std::atomic<int> failed{0};
  std::atomic<int> b_ready{0};         // B: "doomed" worked, B is idle in it now
  std::atomic<long> per_window{0};     // A: operations per window (C runs as many)
  std::atomic<int> kill_now{0};        // A: the baseline windows are done
  std::atomic<int64_t> kill_ns{0};     // the suite: just before kill(B, SIGKILL)
  std::atomic<int64_t> broken_ns{0};   // A: when its pending receive completed
  std::atomic<int> recv_status{MW_IN_PROGRESS};
  std::atomic<int> a_checked{0};       // A: "kept" checked after the kill; C may leave it
  double window_s[kWindows] = {};      // A: seconds per window
  double destroy_ms = -1;              // A: mw_world_destroy("doomed")
};

void say(const std::string& line) {
  std::fprintf(stderr, "mw_bench nccl: kill: %s\n", line.c_str());
  std::fflush(stderr);
}

// A context whose heartbeat would notice a silent peer within 2 s, as the
// NCCL tests' (a dead one is noticed by its closed connections, sooner).
mw_context_t* killContext(const std::string& redis_url) {
  mw_config_t* cfg = nullptr;
  mwCheck(mw_config_new(&cfg), "mw_config_new");
  const std::pair<const char*, std::string> settings[] = {
      {"redis_url", redis_url},
      {"namespace", "mwbench.nccl." + std::to_string(getppid()) + ".kill"},
      {"bind_address", "127.0.0.1"},
      {"op_timeout_ms", std::to_string(kWaitMs)},
      {"heartbeat_timeout_ms", "2000"},
      {"log_level", "error"},
  };
  for (const auto& [key, value] : settings) {
    if (mw_config_set(cfg, key, value.c_str()) != MW_OK) {
      mw_config_free(cfg);
      mwFail(std::string("mw_config_set ") + key);
    }
  }
  mw_context_t* ctx = nullptr;
  mw_status_t st = mw_context_new(cfg, &ctx);
  mw_config_free(cfg);
  if (st != MW_OK) mwFail("mw_context_new");
  return ctx;
}

// A context and its worlds, torn down in order (a world first).
struct Member {
  mw_context_t* ctx = nullptr;
  mw_world_t* worlds[2] = {nullptr, nullptr};
  ~Member() {
    for (mw_world_t* w : worlds) mw_world_destroy(w);
    mw_context_free(ctx);
  }
  mw_world_t* create(int slot, const char* name, int rank, int device) {
    mwCheck(mw_world_create(ctx, name, rank, 2, MW_BACKEND_NCCL, device, kCreateMs, &worlds[slot]),
            (std::string("mw_world_create ") + name).c_str());
    return worlds[slot];
  }
};

void allreduce(mw_world_t* w, const float* in, float* out, size_t count, const char* what) {
  mw_request_t* r = nullptr;
  mwCheck(mw_allreduce_async(w, in, out, count, MW_FLOAT32, MW_SUM, &r), what);
  mwWait(r, kWaitMs, what);
}

void clear(float* dev, size_t count) {
  cudaCheck(cudaMemset(dev, 0xff, count * sizeof(float)), "cudaMemset");
  cudaCheck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// A: rank 0 of both worlds, and the one that measures.
int processA(const KillSetup& s, Board& b) {
  const int device = placeProcess(0, s.devices, s.one_gpu);
  cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  DeviceFloats in(kCount), out(kCount), small(kSmall);
  fillPattern(in.get(), kCount);
  Member m;
  m.ctx = killContext(s.redis_url);
  mw_world_t* doomed = m.create(0, "doomed", 0, device);
  mw_world_t* kept = m.create(1, "kept", 0, device);
  say("A: worlds \"doomed\" (with B) and \"kept\" (with C) created");

  // "doomed" carries data both ways before B goes idle.
  clear(small.get(), kSmall);
  allreduce(doomed, in.get(), small.get(), kSmall, "allreduce on doomed");
  verify(small.get(), kSmall, 2, "A: allreduce on doomed");
  clear(small.get(), kSmall);
  mw_request_t* r = nullptr;
  mwCheck(mw_recv_async(doomed, small.get(), kSmall, MW_FLOAT32, 1, &r), "mw_recv_async on doomed");
  mwWait(r, kWaitMs, "recv on doomed");
  verify(small.get(), kSmall, 1, "A: recv from B on doomed");

  clear(out.get(), kCount);
  allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
  verify(out.get(), kCount, 2, "A: allreduce on kept");
  const int64_t c0 = mwlab::monotonicNs();
  for (int i = 0; i < kCalibOps; ++i) allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
  const double per_op = std::max(secondsSince(c0) / kCalibOps, 1e-6);
  const long per_window = std::clamp(std::lround(kWindowS / per_op), 3L, 100000L);

  mw_request_t* pending = nullptr;
  mwCheck(mw_recv_async(doomed, small.get(), kSmall, MW_FLOAT32, 1, &pending), "mw_recv_async on doomed");
  // Waited for on a thread of its own, so its completion is timed to the
  // millisecond while this thread keeps "kept" busy.
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    for (;;) {
      const mw_status_t st = mw_wait(pending, 20);
      if (st != MW_ERR_TIMEOUT) {
        b.broken_ns = mwlab::monotonicNs();
        b.recv_status = st;
        return;
      }
      if (stop) return;
    }
  });
  // Stops and joins the waiter on every way out, before the worlds go.
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Joiner() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } joiner{stop, waiter};
  say("A: " + std::to_string(per_window) + " allreduces of 16 MiB per window; a recv from B pending on doomed");
  b.per_window = per_window;

  for (int w = 0; w < kWindows; ++w) {
    if (w == 1 + kKillBaselineWindows) {
      b.kill_now = 1;
      waitFor([&] { return b.kill_ns.load() != 0; }, 10, &b.failed, "A: waiting for the kill of B");
    }
    const int64_t t0 = mwlab::monotonicNs();
    for (long i = 0; i < per_window; ++i) allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
    b.window_s[w] = secondsSince(t0);
  }
  const int64_t give_up = b.kill_ns + static_cast<int64_t>(kDetectLimitS * 1e9);
  while (b.broken_ns == 0 && mwlab::monotonicNs() < give_up) usleep(1000);
  stop = true;
  waiter.join();
  mw_request_free(pending);  // a request still pending is detached

  verify(out.get(), kCount, 2, "A: the last allreduce on kept");
  if (mw_world_state(kept) != MW_WORLD_READY) throw Error("A: \"kept\" is no longer ready");
  b.a_checked = 1;
  const int64_t d0 = mwlab::monotonicNs();
  mw_world_destroy(doomed);
  b.destroy_ms = secondsSince(d0) * 1e3;
  m.worlds[0] = nullptr;
  return 0;
}

// B: rank 1 of "doomed"; killed while idle.
int processB(const KillSetup& s, Board& b) {
  const int device = placeProcess(1, s.devices, s.one_gpu);
  cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  DeviceFloats in(kSmall), out(kSmall);
  fillPattern(in.get(), kSmall);
  Member m;
  m.ctx = killContext(s.redis_url);
  mw_world_t* doomed = m.create(0, "doomed", 1, device);
  allreduce(doomed, in.get(), out.get(), kSmall, "allreduce on doomed");
  mw_request_t* r = nullptr;
  mwCheck(mw_send_async(doomed, in.get(), kSmall, MW_FLOAT32, 0, &r), "mw_send_async on doomed");
  mwWait(r, kWaitMs, "send on doomed");
  b.b_ready = 1;
  for (int i = 0; i < 600 && !b.failed; ++i) usleep(100000);
  return 1;  // not killed within a minute
}

// C: rank 1 of "kept"; matches A's allreduces, one for one.
int processC(const KillSetup& s, Board& b) {
  const int device = placeProcess(2, s.devices, s.one_gpu);
  cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  DeviceFloats in(kCount), out(kCount);
  fillPattern(in.get(), kCount);
  Member m;
  m.ctx = killContext(s.redis_url);
  mw_world_t* kept = m.create(0, "kept", 1, device);
  clear(out.get(), kCount);
  allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
  verify(out.get(), kCount, 2, "C: allreduce on kept");
  for (int i = 0; i < kCalibOps; ++i) allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
  waitFor([&] { return b.per_window.load() > 0; }, 60, &b.failed, "C: waiting for A's calibration");
  const long n = b.per_window * kWindows;
  for (long i = 0; i < n; ++i) allreduce(kept, in.get(), out.get(), kCount, "allreduce on kept");
  // Leaving "kept" breaks it for A, which checks it after waiting for the
  // break of "doomed".
  waitFor([&] { return b.a_checked.load() != 0; }, kDetectLimitS + 30, &b.failed, "C: waiting for A's checks");
  return 0;
}

template <typename F>
int guarded(Board& b, F body) {
  try {
    return body();
  } catch (...) {
    b.failed = 1;
    throw;
  }
}

double gbps(double ops, double seconds) { return ops * kCount * sizeof(float) * 8 / seconds / 1e9; }

void fillReport(const Board& b, KillReport* r) {
  r->bytes = kCount * sizeof(float);
  r->ops_per_window = static_cast<size_t>(std::max(b.per_window.load(), 0L));
  const double n = static_cast<double>(r->ops_per_window);
  double base_s = 0, after_s = 0;
  for (int w = 0; w < kWindows && b.window_s[w] > 0; ++w) {
    r->window_gbps.push_back(gbps(n, b.window_s[w]));
    if (w >= 1 && w <= kKillBaselineWindows) base_s += b.window_s[w];  // window 0 warms up
    if (w > kKillBaselineWindows) after_s += b.window_s[w];
  }
  if (r->window_gbps.size() == static_cast<size_t>(kWindows)) {
    r->baseline_gbps = gbps(n * kKillBaselineWindows, base_s);
    r->after_gbps = gbps(n * kKillAfterWindows, after_s);
    r->first_after_gbps = r->window_gbps[1 + kKillBaselineWindows];
  }
  if (b.kill_ns && b.broken_ns) r->detect_ms = static_cast<double>(b.broken_ns - b.kill_ns) / 1e6;
  r->recv_status = b.recv_status == MW_IN_PROGRESS ? "still pending"
                                                   : mw_status_string(static_cast<mw_status_t>(b.recv_status.load()));
  r->destroy_ms = b.destroy_ms;
}

}  // namespace

std::string runKill(const KillSetup& s, KillReport* r) {
  mwlab::Shared<Board> board;
  Board& b = *board;
  const int64_t deadline = mwlab::monotonicNs() + static_cast<int64_t>(s.limit_s * 1e9);
  std::string why;
  try {
    Child a("nccl kill, A", [&] { return guarded(b, [&] { return processA(s, b); }); });
    Child victim("nccl kill, B", [&] { return guarded(b, [&] { return processB(s, b); }); });
    Child c("nccl kill, C", [&] { return guarded(b, [&] { return processC(s, b); }); });
    const auto left = std::chrono::milliseconds(std::max<int64_t>(deadline - mwlab::monotonicNs(), 0) / 1000000);
    if (!waitUntil([&] { return b.kill_now && b.b_ready; }, left, {&a, &victim, &c})) {
      why = "the baseline did not end within " + std::to_string(static_cast<int>(s.limit_s)) + " s";
      b.failed = 1;
    } else {
      b.kill_ns = mwlab::monotonicNs();
      victim.kill9();
      say("B killed (kill -9) after the baseline");
      why = joinAll({&a, &c}, deadline, &b.failed, 5000);
    }
  } catch (const std::exception& e) {
    why = e.what();
    b.failed = 1;
  }
  fillReport(b, r);
  if (why.empty() && r->recv_status != mw_status_string(MW_ERR_WORLD_BROKEN)) {
    why = "A's pending recv on \"doomed\" ended with " + r->recv_status + " (within " +
          std::to_string(static_cast<int>(kDetectLimitS)) + " s of the kill), not MW_ERR_WORLD_BROKEN";
  }
  return why;
}

}  // namespace mwbench::gpu
