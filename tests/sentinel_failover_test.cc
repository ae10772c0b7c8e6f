// Redis Sentinel failover under load (issue 19), and shrinks through one
// (issue 48): a master, a replica and three sentinels, all real processes
// on loopback ports; workers in overlapping worlds stream checked data
// while the master is killed with SIGKILL. Nothing breaks that should not,
// every store event is seen, and world creation and shrinks come back on
// the new master.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/traffic.h"
#include "tools/lab/redis_client.h"
#include "tools/lab/ports.h"
#include "tools/lab/sentinel_group.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace mwlab;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

double msSince(int64_t from_ns) { return static_cast<double>(monotonicNs() - from_ns) / 1e6; }

// Three processes, each pair sharing one two-rank world: ab, bc and ca
// (indices 0, 1, 2 in every process's stats).
const std::vector<TrafficWorld> kRing[3] = {
    {{"ab", 0, 0}, {"ca", 2, 1}},
    {{"ab", 0, 1}, {"bc", 1, 0}},
    {{"bc", 1, 1}, {"ca", 2, 0}},
};

struct LateCreate {
  std::atomic<int64_t> formed_at_ns{0};  // the world formed and carried a checked message
  std::atomic<int> attempts{0};
};

struct Board {
  std::atomic<int> stop{0};
  ProcStats procs[3];
  LateCreate late[2];
};

// A world that two processes create after the master was killed, retrying
// while creation fails with MW_ERR_STORE (the failover is not over); any
// other failure fails the worker.
int createAfterFailover(const std::string& url, int rank, LateCreate& out) {
  mw_context_t* ctx = nullptr;
  // The context itself may start while no master is known yet.
  while (!(ctx = newContext(url))) {
    out.attempts.fetch_add(1);
    std::this_thread::sleep_for(20ms);
  }
  mw_world_t* w = nullptr;
  for (;;) {
    out.attempts.fetch_add(1);
    mw_status_t s = mw_world_create(ctx, "after", rank, 2, hostBackend(), 0, 5000, &w);
    if (s == MW_OK) break;
    MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "create during the failover"));
    std::this_thread::sleep_for(20ms);
  }
  uint64_t mine = 0xA11CE000u + rank, theirs = 0;
  mw_request_t *sreq, *rreq;
  MWT_CHECK(mw_recv_async(w, &theirs, 1, MW_UINT64, 1 - rank, &rreq));
  MWT_CHECK(mw_send_async(w, &mine, 1, MW_UINT64, 1 - rank, &sreq));
  MWT_CHECK(mwtest::waitAndFree(sreq, 10000));
  MWT_CHECK(mwtest::waitAndFree(rreq, 10000));
  MWT_REQUIRE(theirs == 0xA11CE000u + static_cast<uint64_t>(1 - rank));
  out.formed_at_ns.store(monotonicNs());
  mw_world_destroy(w);
  mw_context_free(ctx);
  return 0;
}

// Starts the ring and waits until every world carries traffic.
void startRing(SentinelGroup& group, Board& board, Workers& workers, pid_t pids[3]) {
  for (int p = 0; p < 3; ++p) {
    pids[p] = workers.add([&, p] { return runTraffic(group.url(), kRing[p], board.procs[p], board.stop); });
  }
  ASSERT_TRUE(eventually(
      [&] {
        for (int p = 0; p < 3; ++p) {
          for (const auto& w : kRing[p]) {
            if (board.procs[p].worlds[w.index].received.load() < 50) return false;
          }
        }
        return true;
      },
      60s));
}

int64_t received(Board& board, int p, int world) { return board.procs[p].worlds[world].received.load(); }

}  // namespace

// Issue 19, test 1: kill -9 the master while three workers stream checked
// data through three overlapping worlds. Sentinel promotes the replica,
// no world breaks, no payload is corrupt, every worker sees STORE_DOWN and
// STORE_UP, and a new world forms on the new master.
TEST(SentinelFailover, KilledMasterBreaksNoWorldAndWorldsFormAgain) {
  SentinelGroup group;
  Shared<Board> board;
  Workers workers;
  pid_t pids[3];
  startRing(group, *board, workers, pids);

  const int64_t killed_at = monotonicNs();
  const int old_master = group.killMaster();
  Workers late;
  for (int r = 0; r < 2; ++r) late.add([&, r] { return createAfterFailover(group.url(), r, board->late[r]); });
  ASSERT_TRUE(group.waitForNewMaster(old_master, 30s)) << "sentinel promoted no replica";
  const double promoted_ms = msSince(killed_at);
  ASSERT_TRUE(eventually(
      [&] {
        for (auto& p : board->procs)
          if (p.store_up.load() == 0) return false;
        return true;
      },
      20s))
      << "a worker saw no STORE_UP";
  const double store_up_ms = msSince(killed_at);
  EXPECT_TRUE(late.join(30s)) << "a world could not form on the new master";

  // Every member has had well over a heartbeat timeout on the new master
  // to be judged falsely; traffic kept flowing meanwhile.
  int64_t before[3][3];
  for (int p = 0; p < 3; ++p)
    for (const auto& w : kRing[p]) before[p][w.index] = received(*board, p, w.index);
  std::this_thread::sleep_for(3s);
  // Judged before the workers stop: one that leaves breaks its worlds for
  // the others.
  for (int p = 0; p < 3; ++p) {
    const ProcStats& s = board->procs[p];
    for (const auto& w : kRing[p]) {
      EXPECT_EQ(s.worlds[w.index].broken_at_ns.load(), 0) << "world " << w.name << " broke in worker " << p;
      EXPECT_GT(received(*board, p, w.index), before[p][w.index]) << "world " << w.name << " stopped in worker " << p;
    }
  }
  board->stop.store(1);
  EXPECT_TRUE(workers.join(30s));

  for (int p = 0; p < 3; ++p) {
    const ProcStats& s = board->procs[p];
    EXPECT_GE(s.store_down.load(), 1) << "worker " << p << " saw no STORE_DOWN";
    EXPECT_GE(s.store_up.load(), 1) << "worker " << p << " saw no STORE_UP";
    EXPECT_EQ(s.corrupt.load(), 0) << "worker " << p;
    EXPECT_EQ(s.errors.load(), 0) << "worker " << p;
  }
  double formed_ms = 0;
  for (auto& l : board->late) formed_ms = std::max(formed_ms, static_cast<double>(l.formed_at_ns.load() - killed_at) / 1e6);
  std::printf("failover (%s): replica promoted %.0f ms after the kill, STORE_UP in every worker by %.0f ms, "
              "a new world formed %.0f ms after the kill (down-after-milliseconds %d)\n",
              hostBackendName(), promoted_ms, store_up_ms, formed_ms, group.options().down_after_ms);
}

// Issue 19, test 2: as test 1, with a member also killed during the
// failover window: its two worlds break, in both survivors, blaming it;
// the world between the survivors does not.
TEST(SentinelFailover, MemberKilledDuringFailoverBreaksOnlyItsWorlds) {
  SentinelGroup group;
  Shared<Board> board;
  Workers workers;
  pid_t pids[3];
  startRing(group, *board, workers, pids);

  const int old_master = group.killMaster();
  std::this_thread::sleep_for(300ms);
  kill(pids[2], SIGKILL);  // C: rank 1 of bc, rank 0 of ca
  ASSERT_TRUE(group.waitForNewMaster(old_master, 30s));
  ASSERT_TRUE(eventually([&] { return board->procs[0].store_up.load() > 0 && board->procs[1].store_up.load() > 0; },
                         20s));
  std::this_thread::sleep_for(3s);
  const int64_t ab_before = received(*board, 0, 0);
  std::this_thread::sleep_for(500ms);
  const ProcStats& a = board->procs[0];
  const ProcStats& b = board->procs[1];
  // Judged before A and B stop: one that leaves breaks ab for the other.
  const int64_t ab_broken[2] = {a.worlds[0].broken_at_ns.load(), b.worlds[0].broken_at_ns.load()};
  board->stop.store(1);
  workers.join(30s);  // C's exit status is SIGKILL's

  EXPECT_NE(a.worlds[2].broken_at_ns.load(), 0) << "ca did not break in A";
  EXPECT_EQ(a.worlds[2].blamed.load(), 0) << "A blamed the wrong rank of ca";
  EXPECT_NE(b.worlds[1].broken_at_ns.load(), 0) << "bc did not break in B";
  EXPECT_EQ(b.worlds[1].blamed.load(), 1) << "B blamed the wrong rank of bc";
  EXPECT_EQ(ab_broken[0], 0) << "ab broke in A";
  EXPECT_EQ(ab_broken[1], 0) << "ab broke in B";
  EXPECT_GT(received(*board, 0, 0), ab_before) << "ab stopped";
  for (const ProcStats* s : {&a, &b}) {
    EXPECT_EQ(s->corrupt.load(), 0);
    EXPECT_EQ(s->errors.load(), 0);
    EXPECT_GE(s->store_down.load(), 1);
  }
}

namespace {

constexpr int kRaceTimeoutMs = 4000;

struct RaceStats {
  std::atomic<int> limit{1 << 30};  // set by the parent: the first world index not to create
  std::atomic<int> formed[2];       // worlds formed and checked, per rank
  std::atomic<int> store_failures{0};
  std::atomic<int> broken_after_create{0};
  std::atomic<int> other_failures{0};
  std::atomic<int64_t> slowest_attempt_ms{0};
};

// Creates race-0, race-1, ... with its peer, one checked message each, and
// destroys it; a create that fails with MW_ERR_STORE is tried again, as is
// a world that breaks before its message went through (a peer that gave up
// joining it).
int raceWorlds(const std::string& url, int rank, RaceStats& st) {
  mw_context_t* ctx = newContext(url);
  MWT_REQUIRE(ctx);
  for (int i = 0; i < st.limit.load(); ++i) {
    const std::string name = "race-" + std::to_string(i);
    for (bool done = false; !done;) {
      mw_world_t* w = nullptr;
      const int64_t start = monotonicNs();
      mw_status_t s = mw_world_create(ctx, name.c_str(), rank, 2, hostBackend(), 0, kRaceTimeoutMs, &w);
      const int64_t took = (monotonicNs() - start) / 1000000;
      int64_t prev = st.slowest_attempt_ms.load();
      while (took > prev && !st.slowest_attempt_ms.compare_exchange_weak(prev, took)) {
      }
      if (s == MW_ERR_STORE) {
        st.store_failures.fetch_add(1);
        std::this_thread::sleep_for(20ms);
        continue;
      }
      if (s != MW_OK) {
        std::fprintf(stderr, "rank %d %s: %s (%s)\n", rank, name.c_str(), mw_status_string(s), mw_last_error());
        st.other_failures.fetch_add(1);
        mw_context_free(ctx);
        return 1;
      }
      uint64_t mine = static_cast<uint64_t>(i) * 2 + rank, theirs = ~0ULL;
      mw_request_t *sreq, *rreq;
      MWT_CHECK(mw_recv_async(w, &theirs, 1, MW_UINT64, 1 - rank, &rreq));
      MWT_CHECK(mw_send_async(w, &mine, 1, MW_UINT64, 1 - rank, &sreq));
      mw_status_t rs = waitAndFree(rreq, 10000), ss = waitAndFree(sreq, 10000);
      if (rs == MW_OK && ss == MW_OK) {
        MWT_REQUIRE(theirs == static_cast<uint64_t>(i) * 2 + static_cast<uint64_t>(1 - rank));
        st.formed[rank].fetch_add(1);
        done = true;
      } else if (rs == MW_ERR_WORLD_BROKEN || ss == MW_ERR_WORLD_BROKEN) {
        st.broken_after_create.fetch_add(1);
      } else {
        std::fprintf(stderr, "rank %d %s: exchange %s / %s\n", rank, name.c_str(), mw_status_string(rs),
                     mw_status_string(ss));
        st.other_failures.fetch_add(1);
        mw_context_free(ctx);
        return 1;
      }
      mw_world_destroy(w);
    }
  }
  mw_context_free(ctx);
  return 0;
}

}  // namespace

// Issue 19, test 3: two processes create world after world while the
// master is killed. Every create completes or fails with MW_ERR_STORE
// within its timeout, never another error, never a hang; every world that
// completes carries its checked message (or reports the break of a peer
// that gave up), and creation goes on on the new master.
TEST(SentinelFailover, CreateRacingFailoverCompletesOrFailsWithStoreInTime) {
  SentinelGroup group;
  Shared<RaceStats> st;
  Workers workers;
  for (int r = 0; r < 2; ++r) workers.add([&, r] { return raceWorlds(group.url(), r, *st); });
  auto formed = [&] { return std::min(st->formed[0].load(), st->formed[1].load()); };
  ASSERT_TRUE(eventually([&] { return formed() >= 5; }, 30s));

  const int old_master = group.killMaster();
  ASSERT_TRUE(group.waitForNewMaster(old_master, 30s));
  const int at_switch = formed();
  EXPECT_TRUE(eventually([&] { return formed() >= at_switch + 5; }, 30s)) << "creation did not resume";
  st->limit.store(std::max(st->formed[0].load(), st->formed[1].load()) + 1);
  EXPECT_TRUE(workers.join(60s));

  std::printf("race (%s): %d worlds formed, %d creates failed with MW_ERR_STORE, %d worlds broke right after "
              "creation, slowest create %lld ms (timeout %d ms)\n",
              hostBackendName(), formed(), st->store_failures.load(), st->broken_after_create.load(),
              static_cast<long long>(st->slowest_attempt_ms.load()), kRaceTimeoutMs);
  EXPECT_EQ(st->other_failures.load(), 0);
  EXPECT_LE(st->slowest_attempt_ms.load(), kRaceTimeoutMs + 1000);
}

namespace {

// Expects mw_context_new on `url` to fail with `want`, its message holding
// every one of `needles`.
int expectContextFails(const std::string& url, mw_status_t want, const std::vector<std::string>& needles) {
  mw_config_t* cfg = nullptr;
  MWT_CHECK(mw_config_new(&cfg));
  mw_status_t s = mw_config_set(cfg, "redis_url", url.c_str());
  std::string err = mw_last_error();
  mw_context_t* ctx = nullptr;
  if (s == MW_OK) {
    s = mw_context_new(cfg, &ctx);
    err = mw_last_error();
  }
  mw_config_free(cfg);
  if (ctx) mw_context_free(ctx);
  std::fprintf(stderr, "%s -> %s: %s\n", url.c_str(), mw_status_string(s), err.c_str());
  MWT_REQUIRE(s == want);
  for (const auto& n : needles) MWT_REQUIRE(contains(err, n));
  return 0;
}

}  // namespace

// Issue 19, test 4: bad sentinel URLs each fail with a message naming the
// problem.
TEST(SentinelFailover, BadSentinelUrlsFailNamingTheProblem) {
  SentinelGroup group;
  const std::vector<int> ports = group.sentinelPorts();
  const std::string some = "127.0.0.1:" + std::to_string(ports[0]);
  const int p1 = freeLoopbackPort(), p2 = freeLoopbackPort();  // sentinels never started
  EXPECT_TRUE(runRanks(1, [&](int) {
    MWT_REQUIRE(expectContextFails("redis+sentinel://" + some, MW_ERR_INVALID_ARGUMENT, {"no master name"}) == 0);
    MWT_REQUIRE(expectContextFails("redis+sentinel://" + some + "/", MW_ERR_INVALID_ARGUMENT, {"no master name"}) ==
                0);
    MWT_REQUIRE(expectContextFails("redis+sentinel://" + some + "/bad*name", MW_ERR_INVALID_ARGUMENT,
                                   {"master name"}) == 0);
    MWT_REQUIRE(expectContextFails("redis+sentinel://" + some + ",/m", MW_ERR_INVALID_ARGUMENT,
                                   {"empty sentinel address"}) == 0);
    const std::string a = "127.0.0.1:" + std::to_string(p1), b = "127.0.0.1:" + std::to_string(p2);
    MWT_REQUIRE(expectContextFails("redis+sentinel://" + a + "," + b + "/mwmaster", MW_ERR_STORE,
                                   {"sentinel " + a, "sentinel " + b, "refused"}) == 0);
    MWT_REQUIRE(expectContextFails(group.url("nosuchmaster"), MW_ERR_STORE,
                                   {"knows no master named 'nosuchmaster'", "sentinel " + some}) == 0);
    return 0;
  }));
}

// Credentials, a database and a namespace work as with a plain URL: the
// password is the master's, the world's keys land in the URL's database
// under the namespace; a wrong password fails with MW_ERR_STORE.
TEST(SentinelFailover, CredentialsDatabaseAndNamespace) {
  SentinelGroup::Options opt;
  opt.password = "s3cret-pw";
  SentinelGroup group(opt);
  const std::string url = group.url(SentinelGroup::kMasterName, 3);
  EXPECT_TRUE(runRanks(2, [&](int rank) {
    mw_context_t* ctx = newContext(url, {{"namespace", "tenant"}});
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "secured", rank, 2, hostBackend(), 0, 20000, &w));
    int32_t v = rank + 1, sum = 0;
    mw_request_t* req;
    MWT_CHECK(mw_allreduce_async(w, &v, &sum, 1, MW_INT32, MW_SUM, &req));
    MWT_CHECK(waitAndFree(req));
    MWT_REQUIRE(sum == 3);
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }));
  RedisClient admin(group.masterPort(), opt.password);
  ASSERT_TRUE(admin.ok());
  ASSERT_EQ(admin.text({"SELECT", "3"}), "OK");
  EXPECT_NE(admin.text({"EXISTS", "tenant:world:{secured}"}), "0");
  ASSERT_EQ(admin.text({"SELECT", "0"}), "OK");
  EXPECT_EQ(admin.text({"EXISTS", "tenant:world:{secured}"}), "0");

  std::string wrong = url;
  wrong.replace(wrong.find(opt.password), opt.password.size(), "wrong-pw");
  EXPECT_TRUE(runRanks(1, [&](int) { return expectContextFails(wrong, MW_ERR_STORE, {"AUTH failed"}); }));
}

namespace {

// A world's record on the current master.
std::string metaOnMaster(const SentinelGroup& group, const std::string& world, const std::string& field) {
  RedisClient admin(group.masterPort(), "");
  return admin.text({"HGET", "mw:world:{" + world + "}", field});
}

// An allreduce every member checks (rank r gives r + 1 at each index, times
// the index plus one); 0, or 1 after saying what went wrong.
int checkedSum(mw_world_t* w, const char* what) {
  const int size = mw_world_size(w), rank = mw_world_rank(w);
  std::vector<int64_t> in(32), out(32, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = (rank + 1) * static_cast<int64_t>(i + 1);
  mw_request_t* req = nullptr;
  MWT_CHECK(mw_allreduce_async(w, in.data(), out.data(), in.size(), MW_INT64, MW_SUM, &req));
  MWT_CHECK(waitAndFree(req, 20000));
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != static_cast<int64_t>(size) * (size + 1) / 2 * static_cast<int64_t>(i + 1)) {
      std::fprintf(stderr, "%s: rank %d of %d: [%zu] = %lld\n", what, rank, size, i, static_cast<long long>(out[i]));
      return 1;
    }
  }
  return 0;
}

struct ShrinkBoard {
  std::atomic<int> formed{0};
  std::atomic<int> shrunk{0};
  std::atomic<int> done{0};
  std::atomic<int> store_failures{0};
  std::atomic<uint64_t> epoch[2] = {};
};

}  // namespace

// Issue 48: a member is killed while Sentinel fails the master over. The
// survivors shrink the world with no list of their own: while no master is
// known the shrink fails with MW_ERR_STORE and changes nothing; once the
// replica is promoted it succeeds, excluding exactly the member that died,
// and every result of the shrunk world is right. The survivors' other
// world never breaks and loses nothing.
TEST(SentinelFailover, AShrinkThroughAFailoverSucceedsAndLosesNothing) {
  SentinelGroup group;
  Shared<ShrinkBoard> board;
  auto member = [&](int rank) {
    mw_context_t* ctx = newContext(group.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    mw_world_t* pair = nullptr;
    MWT_CHECK(mw_world_create(ctx, "elastic", rank, 3, hostBackend(), 0, 20000, &w));
    if (rank < 2) MWT_CHECK(mw_world_create(ctx, "pair", rank, 2, hostBackend(), 0, 20000, &pair));
    MWT_REQUIRE(checkedSum(w, "before") == 0);
    const uint64_t epoch = mw_world_epoch(w);
    board->formed++;
    if (rank == 2) pause();  // until killed
    // The pair keeps reducing until the elastic world's break arrives.
    int sums = 0;
    for (;;) {
      MWT_REQUIRE(checkedSum(pair, "pair during the failover") == 0);
      ++sums;
      mw_event_t ev;
      if (mw_next_event(ctx, &ev, 10) == MW_OK && ev.type == MW_EVENT_WORLD_BROKEN) {
        MWT_REQUIRE(ev.world == w && ev.peer_rank == 2);
        break;
      }
    }
    mw_world_t* next = nullptr;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      const mw_status_t s = mw_world_shrink(w, nullptr, 0, MW_SHRINK_ABORT, 5000, &next);
      if (s == MW_OK) break;
      MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "shrink during the failover"));
      MWT_REQUIRE(next == nullptr && mw_world_state(w) == MW_WORLD_BROKEN);
      MWT_REQUIRE(std::chrono::steady_clock::now() < give_up);
      board->store_failures++;
      MWT_REQUIRE(checkedSum(pair, "pair while the shrink waits") == 0);
      std::this_thread::sleep_for(50ms);
    }
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    MWT_REQUIRE(mw_world_epoch(next) > epoch && mw_world_state(w) == MW_WORLD_RETIRED);
    board->epoch[rank] = mw_world_epoch(next);
    for (int i = 0; i < 20; ++i) MWT_REQUIRE(checkedSum(next, "shrunk") == 0);
    MWT_REQUIRE(checkedSum(pair, "pair after the shrink") == 0);
    MWT_REQUIRE(mw_world_state(pair) == MW_WORLD_READY);
    std::fprintf(stderr, "rank %d: %d checked sums on the pair during the failover\n", rank, sums);
    board->shrunk++;
    board->done++;
    MWT_REQUIRE(eventually([&] { return board->done.load() == 2; }, 30s));
    MWT_CHECK(mw_world_destroy(w));
    MWT_CHECK(mw_world_destroy(next));
    MWT_CHECK(mw_world_destroy(pair));
    mw_context_free(ctx);
    return 0;
  };
  Workers survivors;
  for (int r = 0; r < 2; ++r) survivors.add([&, r] { return member(r); });
  const pid_t victim = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 3; }, 60s));

  const int old_master = group.killMaster();
  std::this_thread::sleep_for(300ms);
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  ASSERT_TRUE(group.waitForNewMaster(old_master, 30s)) << "sentinel promoted no replica";
  EXPECT_TRUE(survivors.join(90s));
  EXPECT_EQ(board->shrunk.load(), 2);
  EXPECT_EQ(board->epoch[0].load(), board->epoch[1].load());
  EXPECT_EQ(metaOnMaster(group, "elastic", "how"), "shrunk");
  EXPECT_EQ(metaOnMaster(group, "elastic", "excluded"), "2");
  std::printf("shrink through a failover (%s): %d shrinks refused with MW_ERR_STORE before the replica took over\n",
              hostBackendName(), board->store_failures.load());
}

// Issue 48: the master dies while a shrink is under way: one survivor has
// claimed its place in it on the old master, the other calls only once the
// master is gone. Each shrink ends (formed, or MW_ERR_STORE changing
// nothing) and the survivors, calling again, form the shrunk world on the
// new master, excluding exactly the member killed before.
TEST(SentinelFailover, AShrinkUnderWayWhenTheMasterDiesFormsOnTheNewOne) {
  SentinelGroup group;
  Shared<ShrinkBoard> board;
  auto member = [&](int rank) {
    mw_context_t* ctx = newContext(group.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "underway", rank, 3, hostBackend(), 0, 20000, &w));
    MWT_REQUIRE(checkedSum(w, "before") == 0);
    board->formed++;
    if (rank == 2) pause();  // until killed
    mw_event_t ev;
    do {
      MWT_CHECK(mw_next_event(ctx, &ev, 20000));
    } while (ev.type != MW_EVENT_WORLD_BROKEN);
    MWT_REQUIRE(ev.world == w && ev.peer_rank == 2);
    // Rank 1 calls once the master is dead.
    if (rank == 1) MWT_REQUIRE(eventually([&] { return board->shrunk.load() == -1; }, 30s));
    mw_world_t* next = nullptr;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    for (int attempt = 0;; ++attempt) {
      if (rank == 0 && attempt == 0) board->done = 1;  // it calls now
      const mw_status_t s = mw_world_shrink(w, nullptr, 0, MW_SHRINK_ABORT, 8000, &next);
      if (s == MW_OK) break;
      std::fprintf(stderr, "rank %d: shrink -> %s (%s)\n", rank, mw_status_string(s), mw_last_error());
      MWT_REQUIRE(s == MW_ERR_STORE);
      MWT_REQUIRE(next == nullptr && mw_world_state(w) == MW_WORLD_BROKEN);
      MWT_REQUIRE(std::chrono::steady_clock::now() < give_up);
      board->store_failures++;
      std::this_thread::sleep_for(50ms);
    }
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    board->epoch[rank] = mw_world_epoch(next);
    for (int i = 0; i < 20; ++i) MWT_REQUIRE(checkedSum(next, "shrunk") == 0);
    board->done++;
    MWT_REQUIRE(eventually([&] { return board->done.load() == 3; }, 30s));
    MWT_CHECK(mw_world_destroy(w));
    MWT_CHECK(mw_world_destroy(next));
    mw_context_free(ctx);
    return 0;
  };
  Workers survivors;
  for (int r = 0; r < 2; ++r) survivors.add([&, r] { return member(r); });
  const pid_t victim = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 3; }, 60s));
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  // Rank 0's claim is on the master (and, replicated, on its replica).
  ASSERT_TRUE(eventually([&] { return board->done.load() == 1; }, 30s));
  ASSERT_TRUE(eventually([&] { return metaOnMaster(group, "underway", "how") == "shrunk"; }, 10s));
  const int old_master = group.killMaster();
  board->shrunk = -1;
  ASSERT_TRUE(group.waitForNewMaster(old_master, 30s)) << "sentinel promoted no replica";
  EXPECT_TRUE(survivors.join(90s));
  EXPECT_EQ(board->epoch[0].load(), board->epoch[1].load());
  EXPECT_EQ(metaOnMaster(group, "underway", "how"), "shrunk");
  EXPECT_EQ(metaOnMaster(group, "underway", "excluded"), "2");
  std::printf("shrink under way at the failover (%s): %d calls refused with MW_ERR_STORE\n", hostBackendName(),
              board->store_failures.load());
}
