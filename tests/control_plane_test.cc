// The control plane against a hostile or careless Redis: no caller and no
// value in Redis can freeze the shared Redis, make a world ready early, or
// break a healthy world. Real redis-server, real processes; Redis is
// written directly, as an operator, a failover or an attacker would.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_pinger.h"
#include "tests/support/redis_server.h"
#include "tests/support/traffic.h"
#include "tools/lab/redis_client.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace mwlab;
using namespace std::chrono_literals;

namespace {

// Redis answering a PING later than this is frozen for everyone.
constexpr int64_t kPingLimitUs = 50000;

std::string metaKey(const std::string& world) { return "mw:world:{" + world + "}"; }
std::string epochKey(const std::string& world, const std::string& epoch, const std::string& suffix) {
  return metaKey(world) + ":" + epoch + ":" + suffix;
}
std::string epochKey(const std::string& world, int epoch, const std::string& suffix) {
  return epochKey(world, std::to_string(epoch), suffix);
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Stops the pinger, reports what it saw, and checks Redis never froze.
void expectRedisStayedResponsive(Workers& pinger, PingStats& ping, const char* during) {
  ping.stop.store(1);
  EXPECT_TRUE(pinger.join(10s));
  std::printf("worst PING round trip during %s: %.2f ms over %lld PINGs\n", during, ping.worst_us.load() / 1000.0,
              static_cast<long long>(ping.pings.load()));
  EXPECT_GT(ping.pings.load(), 0);
  EXPECT_EQ(ping.failures.load(), 0);
  EXPECT_LE(ping.worst_us.load(), kPingLimitUs) << "Redis froze during " << during;
}

}  // namespace

// Issue 14, test 1: rank 0 asks for 3,000,000 members (allowed by a raised
// max_world_size), rank 1 for 2. The mismatch fails both at once, without
// the rendezvous doing work in Redis in proportion to either size.
TEST(ControlPlane, HugeSizeMismatchKeepsRedisResponsive) {
  RedisServer redis;
  Shared<PingStats> ping;
  Workers pinger;
  startPinger(pinger, redis.socketPath(), *ping);
  auto expectMismatch = [&](int rank, int size) {
    mw_context_t* ctx = newContext(redis.url(), {{"max_world_size", "4000000"}});
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    auto start = std::chrono::steady_clock::now();
    mw_status_t s = mw_world_create(ctx, "huge", rank, size, hostBackend(), 0, 20000, &w);
    MWT_REQUIRE(expectStatus(s, MW_ERR_INVALID_ARGUMENT, "mismatched create"));
    const std::string err = mw_last_error();
    std::fprintf(stderr, "rank %d: %s\n", rank, err.c_str());
    MWT_REQUIRE(contains(err, "size 3000000") && contains(err, "size 2 "));
    MWT_REQUIRE(std::chrono::steady_clock::now() - start < 10s);
    mw_context_free(ctx);
    return 0;
  };
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  Workers ranks;
  ranks.add([&] { return expectMismatch(0, 3000000); });
  ASSERT_TRUE(eventually([&] { return admin.text({"HGET", metaKey("huge"), "state"}) == "forming"; }, 10s));
  ranks.add([&] { return expectMismatch(1, 2); });
  EXPECT_TRUE(ranks.join(30s));
  expectRedisStayedResponsive(pinger, *ping, "a size mismatch of 3000000 vs 2");
  // One token released both, not one per member.
  EXPECT_EQ(admin.text({"LLEN", epochKey("huge", admin.text({"HGET", metaKey("huge"), "epoch"}), "go")}), "1");
  EXPECT_EQ(admin.text({"HGET", metaKey("huge"), "state"}), "failed");
}

// Issue 14, test 2: world records whose values are not what the library
// writes. Creation fails at once with MW_ERR_STORE naming the key, the
// message stays small, and Redis stays responsive.
TEST(ControlPlane, CorruptWorldRecordsFailCleanly) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  struct Case {
    std::string name;
    std::vector<std::vector<std::string>> setup;  // commands that plant the bad record
    std::string needle;                           // what the error must name besides the key
    std::string key;                              // the key it must name
  };
  const std::string big(10 * 1024 * 1024, '7');
  auto forming = [](const std::string& w, const std::string& field, const std::string& value) {
    std::vector<std::string> hset = {"HSET", metaKey(w), "epoch", "1", "size", "2", "state", "forming", "joined", "0"};
    for (size_t i = 2; i < hset.size(); i += 2) {
      if (hset[i] == field) hset[i + 1] = value;
    }
    return hset;
  };
  std::vector<Case> cases;
  for (const std::string& v : {std::string("inf"), std::string("-1"), std::string("1e30"), std::string("nan"),
                               std::string("0x2"), std::string(" 2"), std::string("0"), big}) {
    std::string w = "size" + std::to_string(cases.size());
    cases.push_back({w, {forming(w, "size", v)}, "size", metaKey(w)});
  }
  for (const std::string& v : {std::string("inf"), std::string("1e30"), std::string("-5"), big}) {
    std::string w = "epoch" + std::to_string(cases.size());
    cases.push_back({w, {forming(w, "epoch", v)}, "epoch", metaKey(w)});
  }
  cases.push_back({"joined", {forming("joined", "joined", "inf")}, "joined", metaKey("joined")});
  cases.push_back({"typestr", {{"SET", metaKey("typestr"), "2"}}, "string", metaKey("typestr")});
  cases.push_back({"typelist", {{"RPUSH", metaKey("typelist"), "size", "2"}}, "list", metaKey("typelist")});
  cases.push_back({"members", {forming("members", "size", "2"), {"SET", epochKey("members", 1, "members"), "x"}},
                   "string", epochKey("members", 1, "members")});
  cases.push_back({"gotype", {forming("gotype", "size", "2"), {"ZADD", epochKey("gotype", 1, "go"), "1", "ok"}},
                   "zset", epochKey("gotype", 1, "go")});
  cases.push_back({"token", {forming("token", "size", "2"), {"RPUSH", epochKey("token", 1, "go"), big.substr(0, 100000)}},
                   "not a rendezvous token", epochKey("token", 1, "go")});
  cases.push_back({"nomembers", {forming("nomembers", "size", "2"), {"RPUSH", epochKey("nomembers", 1, "go"), "ok"}},
                   "rank 1", epochKey("nomembers", 1, "members")});
  for (const auto& c : cases) {
    for (const auto& cmd : c.setup) {
      auto r = admin.cmd(cmd);
      ASSERT_TRUE(r && r->type != REDIS_REPLY_ERROR) << c.name << ": " << cmd[0];
    }
  }

  Shared<PingStats> ping;
  Workers pinger;
  startPinger(pinger, redis.socketPath(), *ping);
  EXPECT_TRUE(runRanks(1, [&](int) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    int failed = 0;
    for (const auto& c : cases) {
      mw_world_t* w = nullptr;
      auto start = std::chrono::steady_clock::now();
      mw_status_t s = mw_world_create(ctx, c.name.c_str(), 0, 2, hostBackend(), 0, 5000, &w);
      const std::string err = mw_last_error();
      bool ok = s == MW_ERR_STORE && contains(err, c.key) && contains(err, c.needle) && err.size() < 2048 &&
                std::chrono::steady_clock::now() - start < 2s;
      if (!ok) {
        std::fprintf(stderr, "case %s: %s (%zu bytes): %.300s\n", c.name.c_str(), mw_status_string(s), err.size(),
                     err.c_str());
        ++failed;
      }
    }
    // The process is unharmed: a clean world still forms.
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "clean", 0, 1, hostBackend(), 0, 5000, &w));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return failed;
  }));
  expectRedisStayedResponsive(pinger, *ping, "creates over corrupt world records");
}

// Issue 14, test 3: a heartbeat key that vanishes (a failover, an eviction,
// an operator's DEL) does not break a healthy world; a member that really
// stops still breaks it within heartbeat_timeout_ms plus an interval.
TEST(ControlPlane, LostHeartbeatKeysBreakNothingButAStoppedMemberBreaks) {
  constexpr int kIntervalMs = 100, kTimeoutMs = 1000;
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  struct Board {
    std::atomic<int> stop{0};
    ProcStats procs[2];
  };
  Shared<Board> board;
  Workers workers;
  pid_t pids[2];
  for (int p = 0; p < 2; ++p) {
    pids[p] = workers.add([&, p] {
      return runTraffic(redis.url(), {{"hb", 0, p}}, board->procs[p], board->stop,
                        {{"heartbeat_interval_ms", std::to_string(kIntervalMs)},
                         {"heartbeat_timeout_ms", std::to_string(kTimeoutMs)}});
    });
  }
  auto received = [&](int p) { return board->procs[p].worlds[0].received.load(); };
  auto broken = [&](int p) { return board->procs[p].worlds[0].broken_at_ns.load(); };
  ASSERT_TRUE(eventually([&] { return received(0) > 50 && received(1) > 50; }, 30s));
  auto deleteHeartbeats = [&] {
    auto keys = admin.cmd({"KEYS", "mw:hb:*"});
    for (size_t i = 0; keys && i < keys->elements; ++i) admin.cmd({"DEL", keys->element[i]->str});
  };

  deleteHeartbeats();
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kTimeoutMs));
  EXPECT_EQ(broken(0), 0) << "one deleted heartbeat key broke the world";
  EXPECT_EQ(broken(1), 0) << "one deleted heartbeat key broke the world";

  for (auto end = std::chrono::steady_clock::now() + 500ms; std::chrono::steady_clock::now() < end;) {
    deleteHeartbeats();
    std::this_thread::sleep_for(2ms);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kTimeoutMs));
  EXPECT_EQ(broken(0), 0) << "heartbeat keys deleted for 0.5 s broke the world";
  EXPECT_EQ(broken(1), 0) << "heartbeat keys deleted for 0.5 s broke the world";
  int64_t before = received(0);
  EXPECT_TRUE(eventually([&] { return received(0) > before + 50; }, 5s)) << "traffic stopped";

  int64_t stopped_at = monotonicNs();
  kill(pids[1], SIGSTOP);
  ASSERT_TRUE(eventually([&] { return broken(0) != 0; }, 10s));
  double detect_ms = (broken(0) - stopped_at) / 1e6;
  std::printf("SIGSTOPped member detected after %.1f ms (heartbeat_timeout_ms=%d, interval %d ms)\n", detect_ms,
              kTimeoutMs, kIntervalMs);
  // Scheduling and delivery of the break to the traffic loop get a little on top.
  EXPECT_LE(detect_ms, kTimeoutMs + kIntervalMs + 150);
  // The verdict, recorded in the world's record, says what was observed.
  std::string detail;
  EXPECT_TRUE(eventually([&] {
    detail = admin.text({"HGET", metaKey("hb"), "detail"});
    return contains(detail, "sent no new heartbeat for") && contains(detail, "by this member's clock");
  }, 5s)) << detail;
  std::printf("verdict: %s\n", detail.c_str());
  kill(pids[1], SIGCONT);
  board->stop.store(1);
  EXPECT_TRUE(workers.join(30s));
}

// Issue 14, test 4: fields in the member list that are not rank claims made
// by the rendezvous do not count toward readiness.
TEST(ControlPlane, StrayMemberFieldsDoNotMakeAWorldReady) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  struct Board {
    std::atomic<int64_t> formed_at_ns[3]{};
  };
  Shared<Board> board;
  auto member = [&](int rank) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "strays", rank, 3, hostBackend(), 0, 30000, &w));
    board->formed_at_ns[rank].store(monotonicNs());
    mw_request_t* req;
    MWT_CHECK(mw_barrier_async(w, &req));
    MWT_CHECK(waitAndFree(req));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  };
  auto joined = [&] { return admin.text({"HGET", metaKey("strays"), "joined"}); };
  Workers workers;
  workers.add([&] { return member(0); });
  ASSERT_TRUE(eventually([&] { return joined() == "1"; }, 10s));
  const std::string members = epochKey("strays", 1, "members");
  for (const char* field : {"x", "-1", "3", "01", "1.0", " 2", "2 ", "", "99999999999"}) {
    ASSERT_EQ(admin.text({"HSET", members, field, "ffffffffffffffff"}), "1") << field;
  }
  workers.add([&] { return member(1); });
  ASSERT_TRUE(eventually([&] { return joined() == "2"; }, 10s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(board->formed_at_ns[0].load(), 0) << "stray fields made the world ready with rank 2 missing";
  EXPECT_EQ(board->formed_at_ns[1].load(), 0) << "stray fields made the world ready with rank 2 missing";
  EXPECT_EQ(admin.text({"HGET", metaKey("strays"), "state"}), "forming");
  workers.add([&] { return member(2); });
  EXPECT_TRUE(workers.join(60s));
}

// A transport address in Redis that is not one: creation fails with
// MW_ERR_STORE naming where it was read, before the transport parses it,
// and the process lives on.
TEST(ControlPlane, MalformedTransportAddressesFailCleanly) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  // Gloo's address is 136 bytes: a sockaddr_storage and a sequence number;
  // UCX's record starts with a magic.
  const std::vector<std::string> blobs = {"", "x", std::string(135, 'a'), std::string(137, '\xff'),
                                          std::string(100000, '\0'), std::string(136, '\xff')};
  // Where the host backend's rendezvous reads rank 1's address, after the
  // incarnation's epoch (which the worker does not know).
  const std::string address_suffix = hostBackend() == MW_BACKEND_UCX ? ":u:" : ":g:1";
  struct Board {
    std::atomic<int> failed{0};
  };
  Shared<Board> board;
  Workers workers;
  workers.add([&] {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    for (size_t i = 0; i < blobs.size(); ++i) {
      mw_world_t* w = nullptr;
      std::string name = "addr" + std::to_string(i);
      mw_status_t s = mw_world_create(ctx, name.c_str(), 0, 2, hostBackend(), 0, 5000, &w);
      std::fprintf(stderr, "blob %zu: %s: %.200s\n", i, mw_status_string(s), mw_last_error());
      MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "create over a malformed address"));
      MWT_REQUIRE(contains(mw_last_error(), metaKey(name) + ":") && contains(mw_last_error(), address_suffix));
      board->failed.fetch_add(1);
    }
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "clean", 0, 1, hostBackend(), 0, 5000, &w));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  });
  // This test plays rank 1: a claim with a live heartbeat, then a bad address.
  for (size_t i = 0; i < blobs.size(); ++i) {
    const std::string name = "addr" + std::to_string(i);
    ASSERT_TRUE(eventually([&] { return admin.text({"HGET", metaKey(name), "joined"}) == "1"; }, 10s)) << name;
    const std::string epoch = admin.text({"HGET", metaKey(name), "epoch"});
    ASSERT_EQ(admin.text({"SET", "mw:hb:fake", "1 host 1 1", "PX", "60000"}), "OK");
    ASSERT_EQ(admin.text({"EVAL",
                          "redis.call('HSET', KEYS[1], '1', 'fake') "
                          "redis.call('HSET', KEYS[2], 'joined', '2', 'state', 'ready') "
                          "return redis.call('RPUSH', KEYS[3], 'ok')",
                          "3", epochKey(name, epoch, "members"), metaKey(name), epochKey(name, epoch, "go")}),
              "1");
    const std::string addr = epochKey(name, epoch, hostBackend() == MW_BACKEND_UCX ? "u:1" : "g:1");
    ASSERT_EQ(admin.text({"SET", addr, blobs[i]}), "OK");
    admin.cmd({"RPUSH", addr + ":sig", "1"});
    ASSERT_TRUE(eventually([&] { return board->failed.load() == static_cast<int>(i) + 1; }, 10s)) << name;
  }
  EXPECT_TRUE(workers.join(30s));
}

namespace {

// Writes, as an operator (or a lost master's replica) would leave it, a
// forming epoch 1 of `name` with `size` ranks in which `rank` is claimed by
// a member that is not running: no heartbeat, no transport.
void plantAbsentClaim(RedisClient& admin, const std::string& name, int size, int rank) {
  ASSERT_EQ(admin.text({"HSET", metaKey(name), "epoch", "1", "size", std::to_string(size), "state", "forming",
                        "created_ms", "0", "joined", "1"}),
            "5");
  ASSERT_EQ(admin.text({"HSET", epochKey(name, 1, "members"), std::to_string(rank), "absent-member"}), "1");
  for (const auto& key : {metaKey(name), epochKey(name, 1, "members")}) {
    ASSERT_EQ(admin.text({"PEXPIRE", key, "60000"}), "1");
  }
}

// Where the host backend publishes rank `rank`'s transport address, after
// the incarnation's prefix.
std::string addressSuffix(int rank) {
  return (hostBackend() == MW_BACKEND_UCX ? "u:" : "g:") + std::to_string(rank);
}

struct CreateResult {
  std::atomic<int> status{1};  // 1 until the create returned
  std::atomic<int64_t> epoch{0};
  std::atomic<int64_t> took_ms{0};
  char error[512] = {0};
};

// Creates `name` as `rank` of `size`, records how it went in `out`, and on
// success runs one allreduce over the world before destroying it.
int createAndRecord(const std::string& url, const std::string& name, int rank, int size, int timeout_ms,
                    CreateResult& out) {
  mw_context_t* ctx = newContext(url);
  MWT_REQUIRE(ctx);
  mw_world_t* w = nullptr;
  const int64_t start = monotonicNs();
  mw_status_t s = mw_world_create(ctx, name.c_str(), rank, size, hostBackend(), 0, timeout_ms, &w);
  out.took_ms.store((monotonicNs() - start) / 1000000);
  std::snprintf(out.error, sizeof out.error, "%s", mw_last_error());
  std::fprintf(stderr, "rank %d %s: %s (%s)\n", rank, name.c_str(), mw_status_string(s), out.error);
  if (s == MW_OK) {
    out.epoch.store(static_cast<int64_t>(mw_world_epoch(w)));
    int32_t v = rank + 1, sum = 0;
    mw_request_t* req;
    MWT_CHECK(mw_allreduce_async(w, &v, &sum, 1, MW_INT32, MW_SUM, &req));
    MWT_CHECK(waitAndFree(req));
    MWT_REQUIRE(sum == size * (size + 1) / 2);
    MWT_CHECK(mw_world_destroy(w));
  }
  out.status.store(s);
  mw_context_free(ctx);
  return 0;
}

}  // namespace

// A member waiting in the exchange of transport addresses for a peer that
// is not coming to that incarnation (its claim was left behind, as by a
// member whose master failed over) follows the peer to the newer epoch the
// peer starts, within the same create, instead of timing out.
TEST(ControlPlane, MemberInTheExchangeFollowsTheWorldToANewerEpoch) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  constexpr int kTimeoutMs = 20000;
  plantAbsentClaim(admin, "moved", 2, 1);
  struct Board {
    CreateResult ranks[2];
  };
  Shared<Board> board;
  Workers workers;
  workers.add([&] { return createAndRecord(redis.url(), "moved", 0, 2, kTimeoutMs, board->ranks[0]); });
  // Rank 0 completed epoch 1 with the absent claim, published its address
  // and waits for rank 1's.
  ASSERT_TRUE(eventually([&] { return admin.text({"EXISTS", epochKey("moved", 1, addressSuffix(0))}) == "1"; },
                         10s));
  EXPECT_TRUE(eventually([&] {
    return admin.text({"SISMEMBER", epochKey("moved", 1, "waits"), addressSuffix(1) + ":sig"}) == "1";
  }, 5s)) << "rank 0 does not wait for rank 1's address under epoch 1";
  const int64_t rank1_start = monotonicNs();
  workers.add([&] { return createAndRecord(redis.url(), "moved", 1, 2, kTimeoutMs, board->ranks[1]); });
  EXPECT_TRUE(workers.join(60s));
  for (int r = 0; r < 2; ++r) {
    const CreateResult& res = board->ranks[r];
    EXPECT_EQ(res.status.load(), MW_OK) << "rank " << r << ": " << res.error;
    EXPECT_EQ(res.epoch.load(), 2) << "rank " << r;
  }
  // Rank 0 was released by rank 1's join, not by its own timeout.
  const int64_t since_rank1_ms = (monotonicNs() - rank1_start) / 1000000;
  EXPECT_LT(since_rank1_ms, kTimeoutMs / 2);
  EXPECT_LT(board->ranks[0].took_ms.load(), kTimeoutMs);
}

// A member that gives up while the others wait in the exchange of
// transport addresses fails their creates at once, naming why, instead of
// leaving them to wait out their timeouts.
TEST(ControlPlane, MemberGivingUpInTheExchangeFailsTheOthersAtOnce) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  constexpr int kPatientMs = 30000, kImpatientMs = 1500;
  // Rank 2 never comes: ranks 0 and 1 form epoch 1 with its claim and wait
  // for its address; rank 1 gives up first.
  plantAbsentClaim(admin, "quit", 3, 2);
  struct Board {
    CreateResult ranks[2];
  };
  Shared<Board> board;
  Workers workers;
  workers.add([&] { return createAndRecord(redis.url(), "quit", 0, 3, kPatientMs, board->ranks[0]); });
  workers.add([&] { return createAndRecord(redis.url(), "quit", 1, 3, kImpatientMs, board->ranks[1]); });
  EXPECT_TRUE(workers.join(60s));
  const CreateResult& patient = board->ranks[0];
  const CreateResult& impatient = board->ranks[1];
  EXPECT_EQ(impatient.status.load(), MW_ERR_TIMEOUT) << impatient.error;
  EXPECT_EQ(patient.status.load(), MW_ERR_WORLD_BROKEN) << patient.error;
  EXPECT_TRUE(contains(patient.error, "rank 1 gave up joining")) << patient.error;
  EXPECT_LT(patient.took_ms.load(), kPatientMs / 3) << patient.error;
  EXPECT_EQ(admin.text({"HGET", metaKey("quit"), "state"}), "broken");
}
