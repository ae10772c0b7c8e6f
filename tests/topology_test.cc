// Many worlds per process: overlapping pairwise worlds among three
// processes, 32 worlds shared by two processes, 32 size-1 worlds in one
// process, all exchanging checked data at the same time through async ops
// and mw_poll; 64 worlds in one process with no more threads than one
// (UCX); and 200 create/destroy cycles of one world name without any growth
// in file descriptors, threads or memory.
//
// The parent process never creates a context: all multiworld work happens in
// forked workers.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kWaitMs = 30000;
constexpr auto kGroupTimeout = 180s;
constexpr auto kExchangeDeadline = 150s;

// Generous liveness settings: the machine is small and shared, and the
// sanitizer build is slow; these tests are about results and resources.
const std::vector<std::pair<std::string, std::string>> kSettings = {
    {"heartbeat_timeout_ms", "30000"}, {"store_timeout_ms", "10000"}};

// RSS growth allowed over 180 create/destroy cycles (relaxed under the
// sanitizers, see rssGrowthLimitKiB). File descriptors and threads stay exact.
constexpr long kRssGrowthLimitKiB = mwtest::rssGrowthLimitKiB(2 * 1024);

// ------------------------------------------------------------ exchange engine

// One world this process is a member of. `id` is unique among all worlds of
// the test, so each world carries distinguishable data.
struct Link {
  mw_world_t* world = nullptr;
  int id = 0;
  int rank = 0;
  int size = 0;
  int peer() const { return size == 1 ? rank : 1 - rank; }
};

int32_t value(int world_id, int src, int msg, size_t j) {
  uint32_t h = static_cast<uint32_t>(world_id) * 0x9E3779B1u ^ static_cast<uint32_t>(src) * 0x85EBCA77u ^
               static_cast<uint32_t>(msg) * 0xC2B2AE3Du ^ static_cast<uint32_t>(j) * 0x27D4EB2Fu;
  h ^= h >> 15;
  return static_cast<int32_t>(h & 0x000fffffu);  // small: sums never overflow
}

size_t msgLen(int msg) { return 4 + static_cast<size_t>(msg * 7 % 61); }
constexpr size_t kReduceLen = 33;

struct Op {
  std::vector<int32_t> send, recv, want;
  mw_request_t* req = nullptr;
  bool done = false;
};

// Every link: `msgs` checked messages to its peer and `msgs` from it (to and
// from itself for size-1 worlds), plus an allreduce after every
// `reduce_every` messages. All links are driven at once: at most `window`
// requests in flight per link, all collected through mw_poll.
int exchange(mw_context_t* ctx, const std::vector<Link>& links, int msgs, int reduce_every, int window,
             const char* who) {
  const int n_reduce = msgs / reduce_every;
  const size_t per_link = static_cast<size_t>(2 * msgs + n_reduce);
  std::vector<std::vector<Op>> ops(links.size(), std::vector<Op>(per_link));
  std::vector<int> next(links.size(), 0), in_flight(links.size(), 0);
  const size_t total = links.size() * per_link;
  size_t completed = 0;
  int failures = 0;
  auto tag = [](size_t link, size_t op) { return (static_cast<uint64_t>(link) << 32) | op; };
  auto issued = [&](mw_status_t s, size_t l, size_t k, const char* what) {
    if (s == MW_OK) {
      mw_request_set_user_data(ops[l][k].req, tag(l, k));
      ++in_flight[l];
      return true;
    }
    std::fprintf(stderr, "%s: %s on world %d -> %s (%s)\n", who, what, links[l].id, mw_status_string(s),
                 mw_last_error());
    return false;
  };
  const auto deadline = Clock::now() + kExchangeDeadline;
  std::vector<mw_completion_t> out(64);
  while (completed < total) {
    for (size_t l = 0; l < links.size(); ++l) {
      const Link& L = links[l];
      while (in_flight[l] < window && next[l] < msgs) {
        const int i = next[l]++;
        const size_t n = msgLen(i);
        Op& s = ops[l][2 * static_cast<size_t>(i)];
        s.send.resize(n);
        for (size_t j = 0; j < n; ++j) s.send[j] = value(L.id, L.rank, i, j);
        if (!issued(mw_send_async(L.world, s.send.data(), n, MW_INT32, L.peer(), &s.req), l, 2 * i, "send")) {
          return 1;
        }
        Op& r = ops[l][2 * static_cast<size_t>(i) + 1];
        r.recv.assign(n, -1);
        r.want.resize(n);
        for (size_t j = 0; j < n; ++j) r.want[j] = value(L.id, L.peer(), i, j);
        if (!issued(mw_recv_async(L.world, r.recv.data(), n, MW_INT32, L.peer(), &r.req), l, 2 * i + 1, "recv")) {
          return 1;
        }
        if ((i + 1) % reduce_every == 0) {
          const int a = (i + 1) / reduce_every - 1;
          const size_t k = 2 * static_cast<size_t>(msgs) + static_cast<size_t>(a);
          Op& c = ops[l][k];
          c.send.resize(kReduceLen);
          c.recv.assign(kReduceLen, -1);
          c.want.assign(kReduceLen, 0);
          for (size_t j = 0; j < kReduceLen; ++j) {
            c.send[j] = value(L.id, L.rank, 100000 + a, j);
            for (int m = 0; m < L.size; ++m) c.want[j] += value(L.id, m, 100000 + a, j);
          }
          if (!issued(mw_allreduce_async(L.world, c.send.data(), c.recv.data(), kReduceLen, MW_INT32, MW_SUM, &c.req),
                      l, k, "allreduce")) {
            return 1;
          }
        }
      }
    }
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "%s: only %zu of %zu completions after %lld s\n", who, completed, total,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kExchangeDeadline).count()));
      return 1;
    }
    size_t n = 0;
    MWT_CHECK(mw_poll(ctx, out.data(), out.size(), 1000, &n));
    for (size_t i = 0; i < n; ++i) {
      const mw_completion_t& c = out[i];
      const size_t l = static_cast<size_t>(c.user_data >> 32), k = static_cast<size_t>(c.user_data & 0xffffffffu);
      if (l >= links.size() || k >= per_link || ops[l][k].req != c.request) {
        std::fprintf(stderr, "%s: unknown completion user_data %#" PRIx64 " request %p\n", who, c.user_data,
                     static_cast<void*>(c.request));
        return 1;
      }
      Op& op = ops[l][k];
      if (op.done) {
        std::fprintf(stderr, "%s: world %d op %zu delivered twice\n", who, links[l].id, k);
        return 1;
      }
      op.done = true;
      ++completed;
      --in_flight[l];
      if (c.status != MW_OK || c.world != links[l].world) {
        std::fprintf(stderr, "%s: world %d op %zu: %s, world %p (want %p)\n", who, links[l].id, k,
                     mw_status_string(c.status), static_cast<void*>(c.world), static_cast<void*>(links[l].world));
        ++failures;
      }
      if (op.recv != op.want) {
        if (failures++ < 10) {
          std::fprintf(stderr, "%s: world %d op %zu (%s %zu): wrong data\n", who, links[l].id, k,
                       k >= 2 * static_cast<size_t>(msgs) ? "allreduce" : "message", k / 2);
        }
      }
      mw_request_free(op.req);
      op.req = nullptr;
      op.send.clear();
      op.recv.clear();
      op.want.clear();
    }
  }
  size_t extra = 0;
  MWT_CHECK(mw_poll(ctx, out.data(), out.size(), 0, &extra));
  MWT_REQUIRE(extra == 0);
  return failures ? 1 : 0;
}

// Every member waits for a barrier on each of its worlds, so nobody destroys
// a world while a peer still uses it.
int barrierAll(const std::vector<Link>& links) {
  std::vector<mw_request_t*> reqs(links.size());
  for (size_t l = 0; l < links.size(); ++l) MWT_CHECK(mw_barrier_async(links[l].world, &reqs[l]));
  for (mw_request_t* r : reqs) MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
  return 0;
}

struct Process {
  mw_context_t* ctx = nullptr;
  std::vector<Link> links;

  ~Process() {
    for (Link& l : links) {
      mw_status_t s = mw_world_destroy(l.world);
      if (s != MW_OK) std::fprintf(stderr, "mw_world_destroy -> %s (%s)\n", mw_status_string(s), mw_last_error());
    }
    mw_context_free(ctx);
  }

  // Creates (collectively, so in the same order everywhere) a world.
  bool join(const std::string& name, int id, int rank, int size) {
    Link l;
    mw_status_t s = mw_world_create(ctx, name.c_str(), rank, size, mwtest::hostBackend(), 0, 60000, &l.world);
    if (s != MW_OK) {
      std::fprintf(stderr, "pid %d: mw_world_create(%s, rank %d) -> %s (%s)\n", getpid(), name.c_str(), rank,
                   mw_status_string(s), mw_last_error());
      return false;
    }
    l.id = id;
    l.rank = rank;
    l.size = size;
    if (mw_world_rank(l.world) != rank || mw_world_size(l.world) != size) {
      std::fprintf(stderr, "world %s: rank %d size %d, want %d %d\n", name.c_str(), mw_world_rank(l.world),
                   mw_world_size(l.world), rank, size);
      mw_world_destroy(l.world);
      return false;
    }
    links.push_back(l);
    return true;
  }
};

// ------------------------------------------------------------ workers

// Process p of three; world k of {0,1}, {0,2}, {1,2}.
int triangleWorker(const std::string& url, int p) {
  static const int kMembers[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  static const char* kNames[3] = {"tri-01", "tri-02", "tri-12"};
  Process proc;
  proc.ctx = mwtest::newContext(url, kSettings);
  MWT_REQUIRE(proc.ctx);
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < 2; ++r) {
      if (kMembers[k][r] == p) MWT_REQUIRE(proc.join(kNames[k], k, r, 2));
    }
  }
  MWT_REQUIRE(proc.links.size() == 2);
  const std::string who = "process " + std::to_string(p);
  const auto t0 = Clock::now();
  if (exchange(proc.ctx, proc.links, 500, 50, 48, who.c_str()) != 0) return 1;
  std::fprintf(stderr, "%s: 2 worlds x 500 messages each way + 10 allreduces in %lld ms\n", who.c_str(),
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  return barrierAll(proc.links);
}

// Two processes sharing `n_worlds` two-rank worlds; the rank of process p in
// world k alternates with k.
int manyPairsWorker(const std::string& url, int p, int n_worlds) {
  Process proc;
  proc.ctx = mwtest::newContext(url, kSettings);
  MWT_REQUIRE(proc.ctx);
  for (int k = 0; k < n_worlds; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "pair-%02d", k);
    MWT_REQUIRE(proc.join(name, k, (p + k) % 2, 2));
  }
  const std::string who = "pair process " + std::to_string(p);
  const auto t0 = Clock::now();
  if (exchange(proc.ctx, proc.links, 250, 50, 16, who.c_str()) != 0) return 1;
  std::fprintf(stderr, "%s: %d worlds x 250 messages each way + 5 allreduces in %lld ms\n", who.c_str(), n_worlds,
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  return barrierAll(proc.links);
}

// One process alone in `n_worlds` size-1 worlds, sending to itself.
int soloWorker(const std::string& url, int n_worlds) {
  Process proc;
  proc.ctx = mwtest::newContext(url, kSettings);
  MWT_REQUIRE(proc.ctx);
  for (int k = 0; k < n_worlds; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "solo-%02d", k);
    MWT_REQUIRE(proc.join(name, 100 + k, 0, 1));
  }
  const auto t0 = Clock::now();
  if (exchange(proc.ctx, proc.links, 250, 50, 16, "solo process") != 0) return 1;
  std::fprintf(stderr, "solo process: %d size-1 worlds x 250 self messages + 5 allreduces in %lld ms\n", n_worlds,
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  return barrierAll(proc.links);
}

// 200 cycles of create / allreduce / destroy on one name.
int cyclesWorker(const std::string& url, int rank) {
  constexpr int kCycles = 200, kWarmup = 20;
  mw_context_t* ctx = mwtest::newContext(url, kSettings);
  MWT_REQUIRE(ctx);
  int fds_warm = -1, threads_warm = -1;
  long rss_warm = -1;
  const auto t0 = Clock::now();
  for (int cycle = 1; cycle <= kCycles; ++cycle) {
    mw_world_t* w = nullptr;
    mw_status_t s = mw_world_create(ctx, "cycle", rank, 2, mwtest::hostBackend(), 0, 20000, &w);
    if (s != MW_OK) {
      std::fprintf(stderr, "rank %d cycle %d: mw_world_create -> %s (%s)\n", rank, cycle, mw_status_string(s),
                   mw_last_error());
      return 1;
    }
    int64_t in[4], res[4];
    for (int j = 0; j < 4; ++j) {
      in[j] = static_cast<int64_t>(cycle) * 1000 + rank * 10 + j;
      res[j] = -1;
    }
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_allreduce_async(w, in, res, 4, MW_INT64, MW_SUM, &r));
    s = mwtest::waitAndFree(r, kWaitMs);
    if (s != MW_OK) {
      std::fprintf(stderr, "rank %d cycle %d: allreduce -> %s (%s)\n", rank, cycle, mw_status_string(s),
                   mw_last_error());
      return 1;
    }
    for (int j = 0; j < 4; ++j) MWT_REQUIRE(res[j] == static_cast<int64_t>(cycle) * 2000 + 10 + 2 * j);
    // Destroying is not collective: rank 1 leaves only once rank 0 said its
    // allreduce is done. Rank 1's receive may then see the world break as
    // rank 0 leaves, which says the same.
    int32_t done = 1;
    mw_request_t* note = nullptr;
    if (rank == 0) {
      MWT_CHECK(mw_send_async(w, &done, 1, MW_INT32, 1, &note));
      MWT_CHECK(mwtest::waitAndFree(note, kWaitMs));
    } else {
      MWT_CHECK(mw_recv_async(w, &done, 1, MW_INT32, 0, &note));
      s = mwtest::waitAndFree(note, kWaitMs);
      MWT_REQUIRE(s == MW_OK || s == MW_ERR_WORLD_BROKEN);
    }
    MWT_CHECK(mw_world_destroy(w));
    if (rank == 0 && cycle == kWarmup) {
      fds_warm = mwtest::openFds();
      threads_warm = mwtest::threadCount();
      rss_warm = mwtest::rssKiB();
    }
  }
  const long took = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
  int failures = 0;
  if (rank == 0) {
    const int fds = mwtest::settledFds(fds_warm + mwtest::kLateClosedFds), threads = mwtest::threadCount();
    const long rss = mwtest::rssKiB();
    std::fprintf(stderr,
                 "%d create/allreduce/destroy cycles in %ld ms; after cycle %d / %d: fds %d / %d, threads %d / %d, "
                 "RSS %ld / %ld KiB (growth %ld KiB, limit %ld)\n",
                 kCycles, took, kWarmup, kCycles, fds_warm, fds, threads_warm, threads, rss_warm, rss, rss - rss_warm,
                 kRssGrowthLimitKiB);
    if (fds > fds_warm + mwtest::kLateClosedFds) {
      std::fprintf(stderr, "open file descriptors grew from %d to %d: %s\n", fds_warm, fds, mwtest::describeFds().c_str());
      ++failures;
    }
    if (threads != threads_warm) {
      std::fprintf(stderr, "threads grew from %d to %d\n", threads_warm, threads);
      ++failures;
    }
    if (rss - rss_warm >= kRssGrowthLimitKiB) {
      std::fprintf(stderr, "RSS grew by %ld KiB\n", rss - rss_warm);
      ++failures;
    }
  }
  mw_context_free(ctx);
  return failures ? 1 : 0;
}

// 256 two-rank worlds between two processes, all moving data: the threads
// of each process with 256 worlds open, against its threads with one.
int threadsWorker(const std::string& url, int rank) {
  constexpr int kWorlds = 256, kMaxThreads = 8;
  mw_context_t* ctx = mwtest::newContext(url, kSettings);
  MWT_REQUIRE(ctx);
  std::vector<mw_world_t*> worlds(kWorlds, nullptr);
  int with_one = -1;
  for (int i = 0; i < kWorlds; ++i) {
    const std::string name = "threads-" + std::to_string(i);
    MWT_CHECK(mw_world_create(ctx, name.c_str(), rank, 2, mwtest::hostBackend(), 0, 30000, &worlds[i]));
    if (i == 0) with_one = mwtest::threadCount();
  }
  // Every world carries a message each way, so nothing is started lazily.
  std::vector<int32_t> out(kWorlds), in(kWorlds, -1);
  std::vector<mw_request_t*> reqs;
  for (int i = 0; i < kWorlds; ++i) {
    out[i] = i * 2 + rank;
    mw_request_t *s = nullptr, *r = nullptr;
    MWT_CHECK(mw_recv_async(worlds[i], &in[i], 1, MW_INT32, 1 - rank, &r));
    MWT_CHECK(mw_send_async(worlds[i], &out[i], 1, MW_INT32, 1 - rank, &s));
    reqs.push_back(s);
    reqs.push_back(r);
  }
  for (mw_request_t* r : reqs) MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
  for (int i = 0; i < kWorlds; ++i) MWT_REQUIRE(in[i] == i * 2 + 1 - rank);
  const int with_all = mwtest::threadCount();
  std::fprintf(stderr, "rank %d (%s): %d threads with 1 world, %d with %d worlds\n", rank, mwtest::hostBackendName(),
               with_one, with_all, kWorlds);
  mw_request_t* b = nullptr;
  MWT_CHECK(mw_barrier_async(worlds[0], &b));
  MWT_CHECK(mwtest::waitAndFree(b, kWaitMs));
  for (mw_world_t* w : worlds) MWT_CHECK(mw_world_destroy(w));
  mw_context_free(ctx);
  MWT_REQUIRE(with_all == with_one);
  MWT_REQUIRE(with_all <= kMaxThreads);
  return 0;
}

// ------------------------------------------------------------ tests

TEST(Topology, ThreeProcessesInThreeOverlappingPairWorlds) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(3, [&](int p) { return triangleWorker(redis.url(), p); }, kGroupTimeout));
}

TEST(Topology, TwoProcessesShareThirtyTwoWorlds) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int p) { return manyPairsWorker(redis.url(), p, 32); }, kGroupTimeout));
}

TEST(Topology, OneProcessAloneInThirtyTwoWorlds) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(1, [&](int) { return soloWorker(redis.url(), 32); }, kGroupTimeout));
}

TEST(Topology, ThreadsDoNotGrowWithTwoHundredFiftySixWorlds) {
  if (mwtest::hostBackend() == MW_BACKEND_GLOO) {
    GTEST_SKIP() << "Gloo is a blocking library: its worlds run a thread per world and per receiving peer";
  }
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int p) { return threadsWorker(redis.url(), p); }, kGroupTimeout));
}

TEST(Topology, CreateDestroyCyclesDoNotGrow) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return cyclesWorker(redis.url(), rank); }, kGroupTimeout));
}

}  // namespace
