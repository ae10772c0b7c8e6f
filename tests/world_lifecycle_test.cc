// Forming worlds over Redis: epochs, duplicate ranks, size mismatches,
// timeouts, TTLs on every key, and Redis being unreachable.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/redis_client.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

int createAndBarrier(const std::string& url, const char* name, int rank, int size, uint64_t* epoch = nullptr) {
  mw_context_t* ctx = newContext(url);
  MWT_REQUIRE(ctx);
  mw_world_t* w = nullptr;
  MWT_CHECK(mw_world_create(ctx, name, rank, size, mwtest::hostBackend(), 0, 20000, &w));
  mw_request_t* req;
  MWT_CHECK(mw_barrier_async(w, &req));
  MWT_CHECK(waitAndFree(req));
  if (epoch) *epoch = mw_world_epoch(w);
  MWT_CHECK(mw_world_destroy(w));
  mw_context_free(ctx);
  return 0;
}

// Every key under the namespace has a TTL: Redis never accumulates garbage.
void expectAllKeysExpire(const RedisServer& redis) {
  redisContext* c = redisConnectUnix(redis.socketPath().c_str());
  ASSERT_TRUE(c && !c->err);
  auto* keys = static_cast<redisReply*>(redisCommand(c, "KEYS mw:*"));
  ASSERT_TRUE(keys && keys->type == REDIS_REPLY_ARRAY);
  EXPECT_GT(keys->elements, 0u);
  for (size_t i = 0; i < keys->elements; ++i) {
    auto* ttl = static_cast<redisReply*>(redisCommand(c, "PTTL %s", keys->element[i]->str));
    EXPECT_GT(ttl->integer, 0) << keys->element[i]->str << " has no TTL";
    freeReplyObject(ttl);
  }
  freeReplyObject(keys);
  redisFree(c);
}

// The epoch of `world`'s current incarnation, as its record in Redis says.
uint64_t epochInRedis(const RedisServer& redis, const std::string& world) {
  mwlab::RedisClient admin(redis.socketPath());
  return std::strtoull(admin.text({"HGET", "mw:world:{" + world + "}", "epoch"}).c_str(), nullptr, 10);
}

}  // namespace

TEST(WorldLifecycle, FormsAndEveryKeyHasTtl) {
  RedisServer redis;
  EXPECT_TRUE(runRanks(3, [&](int rank) { return createAndBarrier(redis.url(), "ttl-world", rank, 3); }));
  expectAllKeysExpire(redis);
}

// The first incarnation of a name is numbered from its creator's clock in
// milliseconds, each later one the next number.
TEST(WorldLifecycle, EachIncarnationGetsANewEpoch) {
  RedisServer redis;
  const uint64_t now_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  uint64_t first = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(runRanks(2, [&](int rank) {
      uint64_t epoch = 0;
      if (createAndBarrier(redis.url(), "epochs", rank, 2, &epoch) != 0) return 1;
      MWT_REQUIRE(i == 0 ? epoch >= now_ms - 60000 : epoch == first + i);
      return 0;
    }));
    if (i == 0) first = epochInRedis(redis, "epochs");
  }
}

// A world's record lost while the world runs, as in a failover to a
// replica that never had it: the world breaks (a member is killed) and its
// break marker stays; the name formed again must get a number never used,
// or the old marker breaks the new incarnation at its first heartbeat tick.
TEST(WorldLifecycle, ARecordLostWhileTheWorldRunsNeverBringsBackItsEpoch) {
  RedisServer redis;
  mwlab::RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  struct Board {
    std::atomic<uint64_t> first{0}, second{0};
    std::atomic<int> marker_seen{0};
  };
  mwlab::Shared<Board> board;
  auto member = [&](int rank, bool again) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "lost", rank, 2, hostBackend(), 0, 20000, &w));
    if (!again) {
      board->first = mw_world_epoch(w);
      if (rank == 1) pause();  // until killed
      mw_event_t ev;
      MWT_CHECK(mw_next_event(ctx, &ev, 10000));
      MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 1);
      MWT_CHECK(mw_world_destroy(w));
      MWT_REQUIRE(eventually([&] { return board->marker_seen.load() == 1; }, 10s));
      MWT_CHECK(mw_world_create(ctx, "lost", rank, 2, hostBackend(), 0, 20000, &w));
    }
    board->second = mw_world_epoch(w);
    // Ten heartbeat intervals: every tick reads the incarnation's marker.
    // The state is checked before the barrier, after which a member may
    // leave.
    std::this_thread::sleep_for(1s);
    MWT_REQUIRE(mw_world_state(w) == MW_WORLD_READY);
    mw_request_t* req;
    MWT_CHECK(mw_barrier_async(w, &req));
    MWT_CHECK(waitAndFree(req));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  };
  Workers survivor;
  survivor.add([&] { return member(0, false); });
  const pid_t victim = spawn([&] { return member(1, false); });
  ASSERT_TRUE(eventually([&] { return board->first.load() != 0; }, 20s));
  const std::string first = std::to_string(board->first.load());
  ASSERT_EQ(admin.text({"DEL", "mw:world:{lost}"}), "1");
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  ASSERT_TRUE(eventually([&] { return admin.text({"EXISTS", "mw:world:{lost}:" + first + ":broken"}) == "1"; }, 10s))
      << "the survivor wrote no break marker";
  board->marker_seen = 1;
  Workers replacement;
  replacement.add([&] { return member(1, true); });
  EXPECT_TRUE(survivor.join(60s));
  EXPECT_TRUE(replacement.join(60s));
  EXPECT_GT(board->second.load(), board->first.load());
}

TEST(WorldLifecycle, RankClaimedTwiceIsAlreadyExists) {
  RedisServer redis;
  Workers w;
  // The first claimer of rank 0 waits for rank 1; a second claimer of rank 0
  // must be refused while the first is alive.
  w.add([&] { return createAndBarrier(redis.url(), "dup", 0, 2); });
  std::this_thread::sleep_for(300ms);  // let the first claim land
  pid_t second = spawn([&] {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* world = nullptr;
    mw_status_t s = mw_world_create(ctx, "dup", 0, 2, mwtest::hostBackend(), 0, 5000, &world);
    MWT_REQUIRE(expectStatus(s, MW_ERR_ALREADY_EXISTS, "second claim of rank 0"));
    MWT_REQUIRE(std::string(mw_last_error()).find("rank 0") != std::string::npos);
    mw_context_free(ctx);
    return 0;
  });
  ASSERT_EQ(waitExit(second, 30s), 0);
  w.add([&] { return createAndBarrier(redis.url(), "dup", 1, 2); });
  EXPECT_TRUE(w.join());
}

TEST(WorldLifecycle, SizeMismatchFailsEveryWaitingMember) {
  RedisServer redis;
  auto expectMismatch = [&](int rank, int size) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* world = nullptr;
    auto start = std::chrono::steady_clock::now();
    mw_status_t s = mw_world_create(ctx, "mismatch", rank, size, mwtest::hostBackend(), 0, 20000, &world);
    MWT_REQUIRE(expectStatus(s, MW_ERR_INVALID_ARGUMENT, "size mismatch"));
    MWT_REQUIRE(std::string(mw_last_error()).find("size") != std::string::npos);
    // Reported at rendezvous, not by running into the 20 s timeout.
    MWT_REQUIRE(std::chrono::steady_clock::now() - start < 10s);
    mw_context_free(ctx);
    return 0;
  };
  Workers w;
  w.add([&] { return expectMismatch(0, 3); });
  std::this_thread::sleep_for(300ms);
  w.add([&] { return expectMismatch(1, 2); });
  EXPECT_TRUE(w.join());
  // The name is usable again right away.
  EXPECT_TRUE(runRanks(2, [&](int rank) { return createAndBarrier(redis.url(), "mismatch", rank, 2); }));
}

TEST(WorldLifecycle, TimeoutWithdrawsTheClaim) {
  RedisServer redis;
  EXPECT_TRUE(runRanks(1, [&](int) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* world = nullptr;
    auto start = std::chrono::steady_clock::now();
    mw_status_t s = mw_world_create(ctx, "lonely", 0, 2, mwtest::hostBackend(), 0, 300, &world);
    auto took = std::chrono::steady_clock::now() - start;
    MWT_REQUIRE(expectStatus(s, MW_ERR_TIMEOUT, "create without peer"));
    MWT_REQUIRE(took >= 250ms && took < 3s);
    // The same rank can be claimed again at once: the claim was withdrawn.
    s = mw_world_create(ctx, "lonely", 0, 2, mwtest::hostBackend(), 0, 300, &world);
    MWT_REQUIRE(expectStatus(s, MW_ERR_TIMEOUT, "second create without peer"));
    mw_context_free(ctx);
    return 0;
  }));
  EXPECT_TRUE(runRanks(2, [&](int rank) { return createAndBarrier(redis.url(), "lonely", rank, 2); }));
}

TEST(WorldLifecycle, UnreachableRedisIsStoreError) {
  RedisServer redis;
  EXPECT_TRUE(runRanks(1, [&](int) {
    mw_context_t* ctx = newContext(redis.url(), {{"heartbeat_interval_ms", "50"}, {"heartbeat_timeout_ms", "500"}});
    MWT_REQUIRE(ctx);
    kill(redis.pid(), SIGKILL);
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 5000));
    MWT_REQUIRE(ev.type == MW_EVENT_STORE_DOWN);
    mw_world_t* world = nullptr;
    auto start = std::chrono::steady_clock::now();
    mw_status_t s = mw_world_create(ctx, "nostore", 0, 1, mwtest::hostBackend(), 0, 2000, &world);
    MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "create while redis is down"));
    MWT_REQUIRE(std::chrono::steady_clock::now() - start < 2500ms);
    mw_context_free(ctx);
    return 0;
  }));
}

TEST(WorldLifecycle, PasswordAndDatabaseInUrl) {
  RedisServer redis({"--requirepass", "s3cret"});
  std::string url = "unix://:s3cret@" + redis.socketPath() + "?db=3";
  EXPECT_TRUE(runRanks(2, [&](int rank) { return createAndBarrier(url, "authed", rank, 2); }));
  EXPECT_TRUE(runRanks(1, [&](int) {
    mw_config_t* cfg;
    MWT_CHECK(mw_config_new(&cfg));
    MWT_CHECK(mw_config_set(cfg, "redis_url", ("unix://:wrong@" + redis.socketPath()).c_str()));
    mw_context_t* ctx = nullptr;
    mw_status_t s = mw_context_new(cfg, &ctx);
    mw_config_free(cfg);
    MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "wrong password"));
    MWT_REQUIRE(std::string(mw_last_error()).find("wrong") == std::string::npos);
    return 0;
  }));
}
