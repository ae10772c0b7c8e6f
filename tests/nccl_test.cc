// The NCCL backend. Without a GPU: the backend says it is unavailable and
// why, world creation fails with MW_ERR_UNSUPPORTED naming the reason, and a
// missing plugin is reported as such. With a GPU (tests skip, saying why,
// when there is none): size-1 worlds with self send/recv and every
// collective, host buffers refused, eight worlds used at once with our
// threads as with one, destroy while operations are queued on the GPU, two
// ranks (sharing one GPU where there is only one), and a killed peer
// breaking only the world it shared, which then forms again with a new
// process. Every op and dtype on 2 and 3 ranks: nccl_ops_test. The core's
// side without a GPU: nccl_double_test.
//
// CUDA must not be initialised in a process that later forks workers that
// use it, so the parent never touches CUDA or the NCCL backend: every check
// runs in a forked worker.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#if MW_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

#include "tests/support/mw_test.h"
#include "tests/support/nccl_gpu.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kCreateMs = 60000;
constexpr int kWaitMs = 60000;

const mwtest::NcclProbe& probe() { return mwtest::ncclProbe(); }

#define SKIP_WITHOUT_GPU()                                                         \
  do {                                                                             \
    if (!probe().available) GTEST_SKIP() << "no usable GPU here: " << probe().why; \
  } while (0)

#define SKIP_WITH_GPU()                                                                           \
  do {                                                                                            \
    if (probe().available) GTEST_SKIP() << "a GPU is usable here, so the no-GPU path cannot be seen"; \
  } while (0)

// ------------------------------------------------------------------ no GPU

TEST(NcclWithoutGpu, BackendUnavailableAndCreateSaysWhy) {
  SKIP_WITH_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    MWT_REQUIRE(mw_backend_available(MW_BACKEND_NCCL) == 0);
    MWT_REQUIRE(mw_backend_available(MW_BACKEND_GLOO) == 1);
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    for (int device : {0, 1, -1, INT_MAX, INT_MIN}) {
      mw_world_t* w = reinterpret_cast<mw_world_t*>(0x1);
      mw_status_t s = mw_world_create(ctx, "nccl-none", 0, 1, MW_BACKEND_NCCL, device, 1000, &w);
      const std::string err = mw_last_error();
      std::fprintf(stderr, "device %d: %s\n", device, err.c_str());
      MWT_REQUIRE(s == MW_ERR_UNSUPPORTED);
      MWT_REQUIRE(w == nullptr);
      MWT_REQUIRE(err.find("NCCL") != std::string::npos);
#if MW_TEST_HAVE_PLUGIN
      // The plugin loaded; the reason is CUDA's: no driver or no device.
      MWT_REQUIRE(err.find("CUDA") != std::string::npos);
      MWT_REQUIRE(err.find("device") != std::string::npos || err.find("driver") != std::string::npos);
#else
      MWT_REQUIRE(err.find("plugin") != std::string::npos);
#endif
    }
    // Gloo worlds are unaffected.
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "gloo-still", 0, 1, MW_BACKEND_GLOO, 0, 30000, &w));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 120s), 0);
}

TEST(NcclWithoutGpu, MissingPluginIsNamed) {
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    setenv("MW_NCCL_PLUGIN", "/nonexistent/libmultiworld-nccl.so.0", 1);
    MWT_REQUIRE(mw_backend_available(MW_BACKEND_NCCL) == 0);
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    mw_status_t s = mw_world_create(ctx, "nccl-noplugin", 0, 1, MW_BACKEND_NCCL, 0, 1000, &w);
    const std::string err = mw_last_error();
    std::fprintf(stderr, "%s\n", err.c_str());
    MWT_REQUIRE(s == MW_ERR_UNSUPPORTED);
    MWT_REQUIRE(err.find("no NCCL plugin") != std::string::npos);
    MWT_REQUIRE(err.find("MW_NCCL_PLUGIN") != std::string::npos);
    MWT_REQUIRE(err.find("/nonexistent/libmultiworld-nccl.so.0") != std::string::npos);
    mw_context_free(ctx);
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 120s), 0);
}

// The libmultiworld this process loaded (not necessarily the build tree's:
// the GPU kit carries its own): a real shared library that is not the
// plugin.
std::string loadedCoreLibrary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&mw_backend_available), &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

TEST(NcclWithoutGpu, LibraryWithoutTheEntryPointIsRefused) {
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    // A real shared library that is not the plugin.
    setenv("MW_NCCL_PLUGIN", loadedCoreLibrary().c_str(), 1);
    MWT_REQUIRE(mw_backend_available(MW_BACKEND_NCCL) == 0);
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    mw_status_t s = mw_world_create(ctx, "nccl-wrong", 0, 1, MW_BACKEND_NCCL, 0, 1000, &w);
    const std::string err = mw_last_error();
    std::fprintf(stderr, "%s\n", err.c_str());
    MWT_REQUIRE(s == MW_ERR_UNSUPPORTED);
    MWT_REQUIRE(err.find("has no mw_nccl_plugin_v1") != std::string::npos);
    mw_context_free(ctx);
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 120s), 0);
}

#if MW_TEST_HAVE_CUDA

// ------------------------------------------------------------------ GPU

#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

using DeviceFloats = mwtest::DeviceArray<float>;

std::vector<float> pattern(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i % 1000);
  return v;
}

std::vector<float> twice(std::vector<float> v) {
  for (float& x : v) x *= 2;
  return v;
}

// A worker's context plus one size-1 NCCL world on device 0.
struct SoloWorld {
  mw_context_t* ctx = nullptr;
  mw_world_t* world = nullptr;
  ~SoloWorld() {
    if (world) mw_world_destroy(world);
    if (ctx) mw_context_free(ctx);
  }
};

int openSolo(const std::string& url, const char* name, SoloWorld& s) {
  s.ctx = mwtest::newContext(url);
  MWT_REQUIRE(s.ctx);
  MWT_CHECK(mw_world_create(s.ctx, name, 0, 1, MW_BACKEND_NCCL, 0, kCreateMs, &s.world));
  return 0;
}

// Takes the request by address: it is read only after the call that issued
// it has run (the order in which a call's arguments are evaluated is
// unspecified).
int run(mw_status_t issued, mw_request_t** req) {
  MWT_CHECK(issued);
  MWT_CHECK(mwtest::waitAndFree(*req, kWaitMs));
  return 0;
}

TEST(NcclGpu, SizeOneSelfSendRecv) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    SoloWorld s;
    if (openSolo(redis.url(), "solo-p2p", s)) return 1;
    const size_t n = 1 << 20;
    DeviceFloats a(n), b(n), small(n / 2);
    MWT_REQUIRE(a.ok() && b.ok() && small.ok());
    MWT_REQUIRE(a.put(pattern(n, 1)));
    // Send first, then recv; and the other way round.
    for (bool send_first : {true, false}) {
      MWT_REQUIRE(b.put(std::vector<float>(n, 0)));
      mw_request_t *sr = nullptr, *rr = nullptr;
      if (send_first) {
        MWT_CHECK(mw_send_async(s.world, a.get(), n, MW_FLOAT32, 0, &sr));
        MWT_CHECK(mw_recv_async(s.world, b.get(), n, MW_FLOAT32, 0, &rr));
      } else {
        MWT_CHECK(mw_recv_async(s.world, b.get(), n, MW_FLOAT32, 0, &rr));
        MWT_CHECK(mw_send_async(s.world, a.get(), n, MW_FLOAT32, 0, &sr));
      }
      MWT_CHECK(mwtest::waitAndFree(rr, kWaitMs));
      MWT_CHECK(mwtest::waitAndFree(sr, kWaitMs));
      MWT_REQUIRE(b.take() == pattern(n, 1));
    }
    // Sizes that differ: both fail with a clear error; the world stays usable.
    mw_request_t *sr = nullptr, *rr = nullptr;
    MWT_CHECK(mw_send_async(s.world, a.get(), n, MW_FLOAT32, 0, &sr));
    MWT_CHECK(mw_recv_async(s.world, small.get(), n / 2, MW_FLOAT32, 0, &rr));
    MWT_REQUIRE(mwtest::waitAndFree(sr, kWaitMs) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(mwtest::waitAndFree(rr, kWaitMs) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(mw_world_state(s.world) == MW_WORLD_READY);
    mw_request_t* r = nullptr;
    if (run(mw_allreduce_async(s.world, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
    MWT_REQUIRE(b.take() == pattern(n, 1));
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 180s), 0);
}

TEST(NcclGpu, EveryCollectiveAtSizeOne) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    SoloWorld s;
    if (openSolo(redis.url(), "solo-coll", s)) return 1;
    const size_t n = 4099;
    const std::vector<float> in = pattern(n, 3);
    DeviceFloats src(n), dst(n);
    MWT_REQUIRE(src.ok() && dst.ok());
    mw_request_t* r = nullptr;
    // At size 1 every collective copies (or keeps) this rank's data.
    for (bool in_place : {false, true}) {
      auto reset = [&]() {
        return src.put(in) && dst.put(std::vector<float>(n, -1));
      };
      float* out = in_place ? src.get() : dst.get();
      const DeviceFloats& result = in_place ? src : dst;
      std::fprintf(stderr, "in place: %d\n", in_place);
      MWT_REQUIRE(reset());
      if (run(mw_broadcast_async(s.world, src.get(), n, MW_FLOAT32, 0, &r), &r)) return 1;
      MWT_REQUIRE(src.take() == in);
      for (mw_redop_t op : {MW_SUM, MW_PROD, MW_MIN, MW_MAX, MW_AVG}) {
        MWT_REQUIRE(reset());
        if (run(mw_allreduce_async(s.world, src.get(), out, n, MW_FLOAT32, op, &r), &r)) return 1;
        MWT_REQUIRE(result.take() == in);
        MWT_REQUIRE(reset());
        if (run(mw_reduce_async(s.world, src.get(), out, n, MW_FLOAT32, op, 0, &r), &r)) return 1;
        MWT_REQUIRE(result.take() == in);
      }
      MWT_REQUIRE(reset());
      if (run(mw_allgather_async(s.world, src.get(), out, n, MW_FLOAT32, &r), &r)) return 1;
      MWT_REQUIRE(result.take() == in);
      MWT_REQUIRE(reset());
      if (run(mw_gather_async(s.world, src.get(), out, n, MW_FLOAT32, 0, &r), &r)) return 1;
      MWT_REQUIRE(result.take() == in);
      MWT_REQUIRE(reset());
      if (run(mw_scatter_async(s.world, src.get(), out, n, MW_FLOAT32, 0, &r), &r)) return 1;
      MWT_REQUIRE(result.take() == in);
      MWT_REQUIRE(reset());
      if (run(mw_reduce_scatter_async(s.world, src.get(), out, n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
      MWT_REQUIRE(result.take() == in);
      MWT_REQUIRE(reset());
      if (run(mw_alltoall_async(s.world, src.get(), out, n, MW_FLOAT32, &r), &r)) return 1;
      MWT_REQUIRE(result.take() == in);
    }
    if (run(mw_barrier_async(s.world, &r), &r)) return 1;
    // Half-precision types are native to NCCL: 16-bit patterns pass unchanged.
    for (mw_dtype_t dt : {MW_FLOAT16, MW_BFLOAT16}) {
      MWT_REQUIRE(src.put(in));
      if (run(mw_allreduce_async(s.world, src.get(), dst.get(), n * 2, dt, MW_SUM, &r), &r)) return 1;
      MWT_REQUIRE(dst.take() == in);
    }
    // Count 0 needs no buffers.
    if (run(mw_allreduce_async(s.world, nullptr, nullptr, 0, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 300s), 0);
}

TEST(NcclGpu, HostAndForeignBuffersAreRefused) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    SoloWorld s;
    if (openSolo(redis.url(), "solo-host", s)) return 1;
    std::vector<float> host(1024, 1);
    DeviceFloats dev(1024);
    MWT_REQUIRE(dev.ok());
    mw_request_t* r = nullptr;
    MWT_REQUIRE(mw_allreduce_async(s.world, host.data(), dev.get(), 1024, MW_FLOAT32, MW_SUM, &r) ==
                MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(std::string(mw_last_error()).find("host memory") != std::string::npos);
    MWT_REQUIRE(r == nullptr);
    MWT_REQUIRE(mw_send_async(s.world, host.data(), 1024, MW_FLOAT32, 0, &r) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(mw_world_state(s.world) == MW_WORLD_READY);
    mw_world_t* w = nullptr;
    MWT_REQUIRE(mw_world_create(s.ctx, "bad-device", 0, 1, MW_BACKEND_NCCL, 4096, 1000, &w) ==
                MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(std::string(mw_last_error()).find("4096") != std::string::npos);
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 180s), 0);
}

// Threads of this process, from /proc.
TEST(NcclGpu, EightWorldsInOneProcessAtOnce) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    constexpr int kWorlds = 8;
    std::vector<mw_world_t*> worlds(kWorlds, nullptr);
    std::map<std::string, int> with_one;
    for (int i = 0; i < kWorlds; ++i) {
      MWT_CHECK(mw_world_create(ctx, ("eight-" + std::to_string(i)).c_str(), 0, 1, MW_BACKEND_NCCL, 0, kCreateMs,
                                &worlds[i]));
      if (i == 0) with_one = mwtest::threadsByName();
    }
    const std::map<std::string, int> with_eight = mwtest::threadsByName();
    std::fprintf(stderr, "threads with 1 NCCL world: %s\nthreads with %d NCCL worlds: %s\nours: %d with 1, %d with %d\n",
                 mwtest::describeThreads(with_one).c_str(), kWorlds, mwtest::describeThreads(with_eight).c_str(),
                 mwtest::ourThreads(with_one), mwtest::ourThreads(with_eight), kWorlds);
    MWT_REQUIRE(mwtest::ourThreads(with_one) > 0);
    MWT_REQUIRE(mwtest::ourThreads(with_eight) == mwtest::ourThreads(with_one));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kWorlds; ++i) {
      threads.emplace_back([&, i] {
        auto body = [&]() -> int {
          const size_t n = 1 << 18;
          DeviceFloats a(n), b(n), c(n);
          MWT_REQUIRE(a.ok() && b.ok() && c.ok());
          for (int round = 0; round < 20; ++round) {
            const std::vector<float> in = pattern(n, static_cast<float>(i * 100 + round));
            MWT_REQUIRE(a.put(in));
            mw_request_t *ar = nullptr, *sr = nullptr, *rr = nullptr;
            MWT_CHECK(mw_allreduce_async(worlds[i], a.get(), b.get(), n, MW_FLOAT32, MW_MAX, &ar));
            MWT_CHECK(mw_recv_async(worlds[i], c.get(), n, MW_FLOAT32, 0, &rr));
            MWT_CHECK(mw_send_async(worlds[i], b.get(), n, MW_FLOAT32, 0, &sr));
            MWT_CHECK(mwtest::waitAndFree(ar, kWaitMs));
            MWT_CHECK(mwtest::waitAndFree(sr, kWaitMs));
            MWT_CHECK(mwtest::waitAndFree(rr, kWaitMs));
            MWT_REQUIRE(c.take() == in);
          }
          return 0;
        };
        if (body() != 0) ++failures;
      });
    }
    for (auto& t : threads) t.join();
    for (mw_world_t* w : worlds) MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return failures.load() == 0 ? 0 : 1;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 300s), 0);
}

TEST(NcclGpu, DestroyWhileOperationsAreQueuedIsBounded) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  pid_t pid = mwtest::spawn([&] {
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    const size_t n = 16 << 20;  // 64 MiB per operation
    DeviceFloats a(n), b(n), c(16);
    MWT_REQUIRE(a.ok() && b.ok() && c.ok());
    for (int cycle = 0; cycle < 3; ++cycle) {
      mw_world_t* w = nullptr;
      MWT_CHECK(mw_world_create(ctx, "abort-me", 0, 1, MW_BACKEND_NCCL, 0, kCreateMs, &w));
      std::vector<mw_request_t*> reqs;
      for (int i = 0; i < 64; ++i) {
        mw_request_t* r = nullptr;
        MWT_CHECK(mw_allreduce_async(w, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r));
        reqs.push_back(r);
      }
      mw_request_t* never = nullptr;  // a recv from self nobody sends to
      MWT_CHECK(mw_recv_async(w, c.get(), 16, MW_FLOAT32, 0, &never));
      reqs.push_back(never);
      const auto t0 = Clock::now();
      MWT_CHECK(mw_world_destroy(w));
      const auto took = Clock::now() - t0;
      std::fprintf(stderr, "destroy with 64 queued allreduces took %.1f ms\n",
                   std::chrono::duration<double, std::milli>(took).count());
      MWT_REQUIRE(took < 10s);
      int cancelled = 0;
      for (mw_request_t* r : reqs) {
        mw_status_t st = mw_wait(r, kWaitMs);
        MWT_REQUIRE(st == MW_OK || st == MW_ERR_CANCELLED);
        cancelled += st == MW_ERR_CANCELLED;
        mw_request_free(r);
      }
      MWT_REQUIRE(cancelled >= 1);  // at least the recv nobody sent to
    }
    // The device is fine afterwards.
    SoloWorld s;
    s.ctx = ctx;
    MWT_CHECK(mw_world_create(ctx, "after-abort", 0, 1, MW_BACKEND_NCCL, 0, kCreateMs, &s.world));
    mw_request_t* r = nullptr;
    if (run(mw_allreduce_async(s.world, a.get(), b.get(), 1024, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(pid, 300s), 0);
}

// Two ranks of one world run anywhere with a GPU: on one GPU each rank
// claims its own NCCL host (tests/support/nccl_gpu.h).
int deviceForRank(int rank) { return mwtest::ncclDeviceForRank(rank, 2); }

TEST(NcclGpu, TwoRanksExchange) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) {
    mwtest::ncclPlaceRank(rank, 2);
    const int device = deviceForRank(rank);
    CUDA_CHECK(cudaSetDevice(device));
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "pair", rank, 2, MW_BACKEND_NCCL, device, kCreateMs, &w));
    const size_t n = 1 << 20;
    DeviceFloats a(n), b(n);
    MWT_REQUIRE(a.ok() && b.ok());
    MWT_REQUIRE(a.put(pattern(n, static_cast<float>(rank + 1))));
    mw_request_t* r = nullptr;
    if (run(mw_allreduce_async(w, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
    std::vector<float> want = pattern(n, 1), two = pattern(n, 2);
    for (size_t i = 0; i < n; ++i) want[i] += two[i];
    MWT_REQUIRE(b.take() == want);
    if (rank == 0) {
      if (run(mw_send_async(w, a.get(), n, MW_FLOAT32, 1, &r), &r)) return 1;
    } else {
      if (run(mw_recv_async(w, b.get(), n, MW_FLOAT32, 0, &r), &r)) return 1;
      MWT_REQUIRE(b.take() == pattern(n, 1));
    }
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }, 300s));
}

struct ResizeStage {
  std::atomic<int> formed{0};
  std::atomic<int> done{0};
};

// Every rank gives rank + 1 at each index: the sum is size(size + 1)/2.
int summedOnDevice(mw_world_t* w) {
  const size_t n = 1 << 16;
  const int rank = mw_world_rank(w), size = mw_world_size(w);
  DeviceFloats a(n), b(n);
  MWT_REQUIRE(a.ok() && b.ok());
  MWT_REQUIRE(a.put(std::vector<float>(n, static_cast<float>(rank + 1))));
  mw_request_t* r = nullptr;
  if (run(mw_allreduce_async(w, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
  MWT_REQUIRE(b.take() == std::vector<float>(n, static_cast<float>(size * (size + 1) / 2)));
  return 0;
}

// Three ranks; rank 2 is excluded while alive (MW_SHRINK_DEFAULT on a
// healthy world: ncclCommShrink where the loaded NCCL has it), and the two
// survivors reduce on the shrunk world.
TEST(NcclGpu, ShrinkThreeToTwo) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  mwlab::Shared<ResizeStage> stage;
  EXPECT_TRUE(mwtest::runRanks(3, [&](int rank) {
    mwtest::ncclPlaceRank(rank, 3);
    const int device = mwtest::ncclDeviceForRank(rank, 3);
    CUDA_CHECK(cudaSetDevice(device));
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "shrink3", rank, 3, MW_BACKEND_NCCL, device, kCreateMs, &w));
    if (summedOnDevice(w)) return 1;
    if (rank < 2) {
      const int exclude[] = {2};
      mw_world_t* next = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      MWT_CHECK(mw_world_shrink(w, exclude, 1, MW_SHRINK_DEFAULT, kCreateMs, &next));
      std::printf("shrink 3 -> 2 took %ld ms\n", mwtest::msSince(t0));
      MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
      if (summedOnDevice(next)) return 1;
      MWT_CHECK(mw_world_destroy(w));
      w = next;
    }
    stage->done.fetch_add(1);
    MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 3; }, 60s));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }, 300s));
}

// Two ranks grow to three; the newcomer creates the world with the new size
// and rank 2 (ncclCommGrow where the loaded NCCL has it).
TEST(NcclGpu, GrowTwoToThree) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  mwlab::Shared<ResizeStage> stage;
  EXPECT_TRUE(mwtest::runRanks(3, [&](int rank) {
    mwtest::ncclPlaceRank(rank, 3);
    const int device = mwtest::ncclDeviceForRank(rank, 3);
    CUDA_CHECK(cudaSetDevice(device));
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    if (rank < 2) {
      MWT_CHECK(mw_world_create(ctx, "grow2", rank, 2, MW_BACKEND_NCCL, device, kCreateMs, &w));
      if (summedOnDevice(w)) return 1;
      stage->formed.fetch_add(1);
      mw_world_t* next = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      MWT_CHECK(mw_world_grow(w, 3, kCreateMs, &next));
      std::printf("grow 2 -> 3 took %ld ms\n", mwtest::msSince(t0));
      MWT_CHECK(mw_world_destroy(w));
      w = next;
    } else {
      MWT_REQUIRE(mwtest::eventually([&] { return stage->formed.load() == 2; }, 120s));
      MWT_CHECK(mw_world_create(ctx, "grow2", 2, 3, MW_BACKEND_NCCL, device, kCreateMs, &w));
    }
    MWT_REQUIRE(mw_world_size(w) == 3 && mw_world_rank(w) == rank);
    if (summedOnDevice(w)) return 1;
    stage->done.fetch_add(1);
    MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 3; }, 60s));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }, 300s));
}

struct KillStage {
  std::atomic<int> ready{0};  // workers whose shared world works and whose doomed recv is posted
};

TEST(NcclGpu, KilledPeerBreaksOnlyTheSharedWorld) {
  SKIP_WITHOUT_GPU();
  mwtest::RedisServer redis;
  mwlab::Shared<KillStage> stage;
  mwtest::Workers workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.add([&, rank] {
      mwtest::ncclPlaceRank(rank, 2);
      const int device = deviceForRank(rank);
      CUDA_CHECK(cudaSetDevice(device));
      mw_context_t* ctx = mwtest::newContext(redis.url(), {{"heartbeat_timeout_ms", "2000"}});
      MWT_REQUIRE(ctx);
      mw_world_t *own = nullptr, *shared = nullptr;
      MWT_CHECK(mw_world_create(ctx, ("own-" + std::to_string(rank)).c_str(), 0, 1, MW_BACKEND_NCCL, device,
                                kCreateMs, &own));
      MWT_CHECK(mw_world_create(ctx, "shared", rank, 2, MW_BACKEND_NCCL, device, kCreateMs, &shared));
      const size_t n = 1 << 16;
      DeviceFloats a(n), b(n);
      MWT_REQUIRE(a.ok() && b.ok());
      MWT_REQUIRE(a.put(pattern(n, 1)));
      mw_request_t* r = nullptr;
      if (run(mw_allreduce_async(shared, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
      if (rank == 1) {
        ++stage->ready;
        pause();  // killed here
        return 1;
      }
      mw_request_t* doomed = nullptr;
      MWT_CHECK(mw_recv_async(shared, b.get(), n, MW_FLOAT32, 1, &doomed));
      ++stage->ready;
      const auto t0 = Clock::now();
      mw_status_t st = mw_wait(doomed, kWaitMs);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::fprintf(stderr, "pending recv on the shared world ended with %s after %.1f ms\n",
                   mw_status_string(st), ms);
      MWT_REQUIRE(st == MW_ERR_WORLD_BROKEN);
      mw_request_free(doomed);
      mw_event_t ev;
      MWT_CHECK(mw_next_event(ctx, &ev, 10000));
      MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && std::string(ev.world_name) == "shared");
      // This process's own world keeps working.
      for (int i = 0; i < 20; ++i) {
        if (run(mw_allreduce_async(own, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
      }
      MWT_REQUIRE(b.take() == pattern(n, 1));
      MWT_REQUIRE(mw_world_state(own) == MW_WORLD_READY);
      const auto d0 = Clock::now();
      MWT_CHECK(mw_world_destroy(shared));
      MWT_REQUIRE(Clock::now() - d0 < 10s);
      // The name forms again, with a new process as rank 1.
      MWT_CHECK(mw_world_create(ctx, "shared", 0, 2, MW_BACKEND_NCCL, device, kCreateMs, &shared));
      if (run(mw_allreduce_async(shared, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
      MWT_REQUIRE(b.take() == twice(pattern(n, 1)));
      MWT_CHECK(mw_world_destroy(shared));
      MWT_CHECK(mw_world_destroy(own));
      mw_context_free(ctx);
      return 0;
    });
  }
  const auto until = Clock::now() + 240s;
  while (stage->ready.load() < 2 && Clock::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(stage->ready.load(), 2);
  std::this_thread::sleep_for(100ms);  // rank 0 sits in mw_wait
  ASSERT_EQ(kill(workers.pids()[1], SIGKILL), 0);
  const pid_t replacement = workers.add([&] {
    mwtest::ncclPlaceRank(1, 2);
    const int device = deviceForRank(1);
    CUDA_CHECK(cudaSetDevice(device));
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* shared = nullptr;
    MWT_CHECK(mw_world_create(ctx, "shared", 1, 2, MW_BACKEND_NCCL, device, kCreateMs, &shared));
    const size_t n = 1 << 16;
    DeviceFloats a(n), b(n);
    MWT_REQUIRE(a.ok() && b.ok());
    MWT_REQUIRE(a.put(pattern(n, 1)));
    mw_request_t* r = nullptr;
    if (run(mw_allreduce_async(shared, a.get(), b.get(), n, MW_FLOAT32, MW_SUM, &r), &r)) return 1;
    MWT_REQUIRE(b.take() == twice(pattern(n, 1)));
    MWT_CHECK(mw_world_destroy(shared));
    mw_context_free(ctx);
    return 0;
  });
  EXPECT_EQ(mwtest::waitExit(workers.pids()[0], 120s), 0);
  EXPECT_EQ(mwtest::waitExit(replacement, 120s), 0);
}

#endif  // MW_TEST_HAVE_CUDA

}  // namespace
