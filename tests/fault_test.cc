// Real faults against real processes: kill -9, SIGSTOP, Redis outages, CPU
// starvation, and many kill/re-form cycles. Three processes A, B, C share
// worlds a={A,B}, b={A,C}, c={B,C}, all exchanging checked data.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/traffic.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

constexpr int A = 0, B = 1, C = 2;
constexpr int kWorldA = 0, kWorldB = 1, kWorldC = 2;

struct Board {
  std::atomic<int> stop{0};
  ProcStats procs[3];
};

// The worlds each process drives: rank 0 is the lower process index.
std::vector<TrafficWorld> worldsOf(int proc) {
  switch (proc) {
    case A: return {{"a", kWorldA, 0}, {"b", kWorldB, 0}};
    case B: return {{"a", kWorldA, 1}, {"c", kWorldC, 0}};
    default: return {{"b", kWorldB, 1}, {"c", kWorldC, 1}};
  }
}

class Triangle : public ::testing::Test {
 protected:
  void startAll(const std::vector<std::pair<std::string, std::string>>& settings = {}) {
    for (int p = 0; p < 3; ++p) {
      pids_[p] = workers_.add([this, p, settings] {
        return runTraffic(redis_.url(), worldsOf(p), board_->procs[p], board_->stop, settings);
      });
    }
    ASSERT_TRUE(eventually([&] { return ready() && traffic(50); }, 30s)) << "traffic did not start: " << describe();
  }
  bool ready() {
    for (auto& p : board_->procs) {
      if (!p.ready.load()) return false;
    }
    return true;
  }
  // Every live world has moved at least n messages each way.
  bool traffic(int64_t n) {
    return board_->procs[A].worlds[kWorldA].received >= n && board_->procs[B].worlds[kWorldA].received >= n &&
           board_->procs[A].worlds[kWorldB].received >= n && board_->procs[C].worlds[kWorldB].received >= n &&
           board_->procs[B].worlds[kWorldC].received >= n && board_->procs[C].worlds[kWorldC].received >= n;
  }
  std::string describe() {
    std::string s;
    for (int p = 0; p < 3; ++p) {
      s += "proc " + std::to_string(p) + " ready=" + std::to_string(board_->procs[p].ready.load());
      for (int w = 0; w < 3; ++w) s += " w" + std::to_string(w) + "=" + std::to_string(seen(p, w).received.load());
      s += "; ";
    }
    return s;
  }
  WorldStats& seen(int proc, int world) { return board_->procs[proc].worlds[world]; }
  bool anyBroken() {
    for (auto& p : board_->procs) {
      for (auto& w : p.worlds) {
        if (w.broken_at_ns.load()) return true;
      }
    }
    return false;
  }
  void stopAll(std::initializer_list<int> survivors) {
    board_->stop.store(1);
    for (int p : survivors) EXPECT_EQ(waitExit(pids_[p], 30s), 0) << "process " << p;
  }
  void expectClean(std::initializer_list<int> procs) {
    for (int p : procs) {
      EXPECT_EQ(board_->procs[p].corrupt.load(), 0) << "process " << p;
      EXPECT_EQ(board_->procs[p].errors.load(), 0) << "process " << p;
    }
  }

  RedisServer redis_;
  mwlab::Shared<Board> board_;
  Workers workers_;
  pid_t pids_[3] = {-1, -1, -1};
};

}  // namespace

TEST_F(Triangle, KillNineBreaksOnlyTheDeadMembersWorlds) {
  startAll();
  int64_t killed_at = monotonicNs();
  kill(pids_[C], SIGKILL);
  ASSERT_TRUE(eventually([&] { return seen(A, kWorldB).broken_at_ns && seen(B, kWorldC).broken_at_ns; }, 5s));
  std::fprintf(stderr, "kill -9 detected after %.1f ms (A) and %.1f ms (B)\n",
               (seen(A, kWorldB).broken_at_ns - killed_at) / 1e6, (seen(B, kWorldC).broken_at_ns - killed_at) / 1e6);
  // World a keeps moving, with correct data on both sides.
  int64_t a_before = seen(A, kWorldA).received, b_before = seen(B, kWorldA).received;
  ASSERT_TRUE(eventually([&] {
    return seen(A, kWorldA).received > a_before + 200 && seen(B, kWorldA).received > b_before + 200;
  }, 10s));
  EXPECT_EQ(seen(A, kWorldA).broken_at_ns.load(), 0);
  EXPECT_EQ(seen(B, kWorldA).broken_at_ns.load(), 0);
  ASSERT_TRUE(eventually([&] { return seen(A, kWorldB).blamed != -2 && seen(B, kWorldC).blamed != -2; }, 2s));
  EXPECT_EQ(seen(A, kWorldB).blamed.load(), 1);  // C is rank 1 of b
  EXPECT_EQ(seen(B, kWorldC).blamed.load(), 1);  // and of c
  stopAll({A, B});
  expectClean({A, B});
}

TEST_F(Triangle, SigstopBreaksByHeartbeatAndTheStoppedMemberLearnsIt) {
  startAll();
  int64_t stopped_at = monotonicNs();
  kill(pids_[C], SIGSTOP);
  ASSERT_TRUE(eventually([&] { return seen(A, kWorldB).broken_at_ns && seen(B, kWorldC).broken_at_ns; }, 10s));
  std::fprintf(stderr, "SIGSTOP detected after %.1f ms (A) and %.1f ms (B)\n",
               (seen(A, kWorldB).broken_at_ns - stopped_at) / 1e6, (seen(B, kWorldC).broken_at_ns - stopped_at) / 1e6);
  ASSERT_TRUE(eventually([&] { return seen(A, kWorldB).blamed != -2 && seen(B, kWorldC).blamed != -2; }, 2s));
  EXPECT_EQ(seen(A, kWorldB).blamed.load(), 1);  // C is rank 1 of b
  EXPECT_EQ(seen(B, kWorldC).blamed.load(), 1);  // and of c
  EXPECT_EQ(seen(A, kWorldA).broken_at_ns.load(), 0);

  kill(pids_[C], SIGCONT);
  ASSERT_TRUE(eventually([&] { return seen(C, kWorldB).broken_at_ns && seen(C, kWorldC).broken_at_ns; }, 10s))
      << "the resumed member did not learn its worlds broke";
  // C re-forms both worlds with its old partners, on new epochs.
  for (int w : {kWorldB, kWorldC}) {
    for (int p : {A, B, C}) seen(p, w).reform.store(1);
  }
  ASSERT_TRUE(eventually([&] {
    return seen(A, kWorldB).reformed && seen(C, kWorldB).reformed && seen(B, kWorldC).reformed &&
           seen(C, kWorldC).reformed;
  }, 20s));
  EXPECT_EQ(seen(A, kWorldA).broken_at_ns.load(), 0);
  stopAll({A, B, C});
  expectClean({A, B, C});
}

TEST_F(Triangle, RedisOutageBreaksNothing) {
  startAll();
  redis_.stop();
  int64_t a0 = seen(A, kWorldA).received, b0 = seen(A, kWorldB).received, c0 = seen(B, kWorldC).received;
  // Data keeps flowing while Redis is gone.
  EXPECT_TRUE(eventually([&] {
    return seen(A, kWorldA).received > a0 + 100 && seen(A, kWorldB).received > b0 + 100 &&
           seen(B, kWorldC).received > c0 + 100;
  }, 3s));
  std::this_thread::sleep_for(3s);
  for (auto& p : board_->procs) EXPECT_GE(p.store_down.load(), 1);
  redis_.start();
  ASSERT_TRUE(eventually([&] {
    for (auto& p : board_->procs) {
      if (p.store_up.load() < 1) return false;
    }
    return true;
  }, 10s));
  // Heartbeats resume: each process has its key back.
  ASSERT_TRUE(eventually([&] {
    redisContext* c = redisConnectUnix(redis_.socketPath().c_str());
    if (!c || c->err) return false;
    auto* r = static_cast<redisReply*>(redisCommand(c, "KEYS mw:hb:*"));
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 3;
    freeReplyObject(r);
    redisFree(c);
    return ok;
  }, 5s));
  // Nothing broke, during the outage or in the grace after it.
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(anyBroken());
  EXPECT_TRUE(traffic(seen(A, kWorldA).received > 0 ? 1 : 0));
  stopAll({A, B, C});
  expectClean({A, B, C});
}

TEST_F(Triangle, SaturatedCpuBreaksNothing) {
  startAll();
  Workers burners;
  for (long i = 0; i < sysconf(_SC_NPROCESSORS_ONLN); ++i) {
    burners.add([] {
      volatile uint64_t x = 0;
      auto end = std::chrono::steady_clock::now() + 10s;
      while (std::chrono::steady_clock::now() < end) {
        for (int k = 0; k < 100000; ++k) x = x + k;
      }
      return 0;
    });
  }
  int64_t a0 = seen(A, kWorldA).received;
  EXPECT_TRUE(burners.join(60s));
  EXPECT_GT(seen(A, kWorldA).received.load(), a0);
  std::this_thread::sleep_for(1s);
  EXPECT_FALSE(anyBroken());
  stopAll({A, B, C});
  expectClean({A, B, C});
}

// Heartbeats every 50 ms, a timeout of 200 ms: Redis paused for 3 s (every
// member's rounds fail or wait, and every heartbeat key expires meanwhile)
// breaks nothing; a member stopped afterwards still breaks its worlds, and
// only those.
TEST_F(Triangle, FastHeartbeatsRideOutARedisPauseAndStillCatchAStoppedMember) {
  startAll({{"heartbeat_interval_ms", "50"}, {"heartbeat_timeout_ms", "200"}});
  {
    redis_.pause();
    struct Resume {
      RedisServer& r;
      ~Resume() { r.resume(); }
    } resume{redis_};
    const int64_t a0 = seen(A, kWorldA).received;
    std::this_thread::sleep_for(3s);
    EXPECT_GT(seen(A, kWorldA).received.load(), a0 + 100) << "data stopped while Redis was paused";
  }
  // Well past the timeout after every member is back on Redis.
  ASSERT_TRUE(eventually([&] {
    for (auto& p : board_->procs) {
      if (p.store_up.load() < 1) return false;
    }
    return true;
  }, 10s)) << "a member never saw Redis again";
  std::this_thread::sleep_for(2s);
  EXPECT_FALSE(anyBroken()) << describe();
  for (auto& p : board_->procs) EXPECT_GE(p.store_down.load(), 1) << "Redis was not unreachable for every member";

  kill(pids_[C], SIGSTOP);
  EXPECT_TRUE(eventually([&] { return seen(A, kWorldB).broken_at_ns && seen(B, kWorldC).broken_at_ns; }, 10s))
      << "the stopped member's worlds did not break";
  EXPECT_EQ(seen(A, kWorldA).broken_at_ns.load(), 0);
  EXPECT_EQ(seen(B, kWorldA).broken_at_ns.load(), 0);
  kill(pids_[C], SIGKILL);
  stopAll({A, B});
  expectClean({A, B});
}

// Create -> kill the peer -> detect -> destroy -> re-create, many times, with
// no growth in the survivor's fds, threads or memory.
TEST(FaultCycles, KillDetectDestroyRecreateDoesNotLeak) {
  RedisServer redis;
  const int kCycles = getenv("MW_FAULT_CYCLES") ? atoi(getenv("MW_FAULT_CYCLES")) : 500;
  constexpr int kWarmup = 20;
  int formed[2], cycled[2];
  ASSERT_EQ(pipe(formed), 0);
  ASSERT_EQ(pipe(cycled), 0);
  Workers survivor;
  survivor.add([&] {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    int fds0 = 0, threads0 = 0;
    long rss0 = 0;
    for (int i = 0; i < kCycles; ++i) {
      if (i == kWarmup) {
        fds0 = openFds();
        threads0 = threadCount();
        rss0 = rssKiB();
      }
      mw_world_t* w;
      MWT_CHECK(mw_world_create(ctx, "cycle", 0, 2, mwtest::hostBackend(), 0, 20000, &w));
      char one = 1;
      MWT_REQUIRE(write(formed[1], &one, 1) == 1);
      // The peer is killed now; a recv it will never answer must fail, at
      // once if the break is already known, else when it is detected.
      int v = 0;
      mw_request_t* r = nullptr;
      mw_status_t s = mw_recv_async(w, &v, 1, MW_INT32, 1, &r);
      if (s == MW_OK) s = waitAndFree(r, 10000);
      MWT_REQUIRE(expectStatus(s, MW_ERR_WORLD_BROKEN, "recv from killed peer"));
      mw_event_t ev;
      MWT_CHECK(mw_next_event(ctx, &ev, 5000));
      MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 1);
      MWT_CHECK(mw_world_destroy(w));
      MWT_REQUIRE(write(cycled[1], &one, 1) == 1);
    }
    int fds1 = settledFds(fds0 + kLateClosedFds), threads1 = threadCount();
    long rss1 = rssKiB();
    std::fprintf(stderr, "after %d cycles: fds %d -> %d, threads %d -> %d, rss %ld -> %ld KiB\n", kCycles - kWarmup,
                 fds0, fds1, threads0, threads1, rss0, rss1);
    if (fds1 > fds0 + kLateClosedFds) std::fprintf(stderr, "open: %s\n", describeFds().c_str());
    MWT_REQUIRE(fds1 <= fds0 + kLateClosedFds);
    MWT_REQUIRE(threads1 == threads0);
    MWT_REQUIRE(rss1 - rss0 < rssGrowthLimitKiB(4096));
    mw_context_free(ctx);
    return 0;
  });
  // Only the survivor writes; a survivor that dies must end our reads.
  close(formed[1]);
  close(cycled[1]);
  for (int i = 0; i < kCycles; ++i) {
    pid_t peer = spawn([&] {
      mw_context_t* ctx = newContext(redis.url());
      MWT_REQUIRE(ctx);
      mw_world_t* w;
      // The survivor starts the new epoch; until its break notice lands a
      // replacement may find the old incarnation still held.
      mw_status_t s;
      while ((s = mw_world_create(ctx, "cycle", 1, 2, mwtest::hostBackend(), 0, 20000, &w)) == MW_ERR_ALREADY_EXISTS) {
        std::this_thread::sleep_for(10ms);
      }
      MWT_CHECK(s);
      pause();  // until killed
      return 0;
    });
    char byte;
    bool ok = read(formed[0], &byte, 1) == 1;
    kill(peer, SIGKILL);
    waitpid(peer, nullptr, 0);
    ok = ok && read(cycled[0], &byte, 1) == 1;
    if (!ok) {
      EXPECT_TRUE(survivor.join(1s));  // reports how the survivor ended
      FAIL() << "survivor stopped in cycle " << i;
    }
  }
  EXPECT_TRUE(survivor.join(60s));
  close(formed[0]);
  close(cycled[0]);
}
