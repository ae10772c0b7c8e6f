// mw_world_create_with on real worker processes over a real redis-server:
// a world made from MW_WORLD_PARAMS_INIT works, its op_timeout_ms overrides
// the context's either way, a struct from a caller built against an older
// (smaller) or newer (larger) header is read at its own size, and every bad
// struct is refused with a message naming what is wrong.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kOpTimeoutMs = 300;

using mwtest::msSince;

mw_world_params_t paramsFor(const char* name, int rank, int size) {
  mw_world_params_t p = MW_WORLD_PARAMS_INIT;
  p.name = name;
  p.rank = rank;
  p.world_size = size;
  p.backend = mwtest::hostBackend();
  p.timeout_ms = 30000;
  return p;
}

// An allreduce of the ranks over `w` of `size` members.
int sumOfRanks(mw_world_t* w, int rank, int size) {
  int32_t x = rank, sum = -1;
  mw_request_t* r = nullptr;
  MWT_CHECK(mw_allreduce_async(w, &x, &sum, 1, MW_INT32, MW_SUM, &r));
  MWT_CHECK(mwtest::waitAndFree(r));
  MWT_REQUIRE(sum == size * (size - 1) / 2);
  return 0;
}

TEST(WorldParams, InitMacroFillsSizeMagicVersionAndDefaults) {
  mw_world_params_t p = MW_WORLD_PARAMS_INIT;
  EXPECT_EQ(p.size, sizeof(mw_world_params_t));
  EXPECT_EQ(p.magic, MW_WORLD_PARAMS_MAGIC);
  EXPECT_EQ(p.version, static_cast<uint32_t>(MW_VERSION_CODE));
  EXPECT_EQ(p.name, nullptr);
  EXPECT_EQ(p.backend, MW_BACKEND_UCX);
  EXPECT_EQ(p.timeout_ms, -1);
  EXPECT_EQ(p.op_timeout_ms, 0);
  EXPECT_EQ(p.path_failover, MW_PATH_FAILOVER_DEFAULT);
  EXPECT_EQ(p.same_host_path, MW_SAME_HOST_PATH_DEFAULT);
}

TEST(WorldParams, WorldCreatedWithParamsWorks) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(3, [&](int rank) -> int {
    mw_context_t* ctx = mwtest::newContext(url, mwtest::kPatientSettings);
    MWT_REQUIRE(ctx);
    mw_world_params_t p = paramsFor("params", rank, 3);
    p.path_failover = MW_PATH_FAILOVER_OFF;
    p.same_host_path = MW_SAME_HOST_PATH_OFF;
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create_with(ctx, &p, &w));
    MWT_REQUIRE(std::strcmp(mw_world_name(w), "params") == 0);
    MWT_REQUIRE(mw_world_rank(w) == rank && mw_world_size(w) == 3);
    MWT_REQUIRE(sumOfRanks(w, rank, 3) == 0);
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }));
}

// The context has no limit; the world's own op_timeout_ms breaks it.
TEST(WorldParams, WorldOpTimeoutAppliesWhereTheContextHasNone) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mw_context_t* ctx = mwtest::newContext(url, mwtest::kPatientSettings);
    MWT_REQUIRE(ctx);
    mw_world_params_t p = paramsFor("own-limit", rank, 2);
    p.op_timeout_ms = kOpTimeoutMs;
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create_with(ctx, &p, &w));
    if (rank == 0) {
      int32_t never = 0;
      mw_request_t* r = nullptr;
      const auto t0 = Clock::now();
      MWT_CHECK(mw_recv_async(w, &never, 1, MW_INT32, 1, &r));
      mw_status_t s = mw_wait(r, 10000);
      MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_WORLD_BROKEN, "recv past the world's op_timeout_ms"));
      MWT_REQUIRE(std::strstr(mw_last_error(), "op_timeout_ms=300") != nullptr);
      MWT_REQUIRE(msSince(t0) >= kOpTimeoutMs - 50);
      mw_request_free(r);
    }
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 10000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }));
}

// The context breaks operations past 300 ms; a world with op_timeout_ms -1
// has no limit, and a world left at 0 keeps the context's.
TEST(WorldParams, WorldOpTimeoutOverridesTheContexts) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Settings settings = mwtest::kPatientSettings;
    settings.push_back({"op_timeout_ms", std::to_string(kOpTimeoutMs)});
    mw_context_t* ctx = mwtest::newContext(url, settings);
    MWT_REQUIRE(ctx);
    mw_world_params_t p = paramsFor("no-limit", rank, 2);
    p.op_timeout_ms = -1;
    mw_world_t* unlimited = nullptr;
    MWT_CHECK(mw_world_create_with(ctx, &p, &unlimited));
    mw_world_params_t q = paramsFor("context-limit", rank, 2);
    mw_world_t* limited = nullptr;
    MWT_CHECK(mw_world_create_with(ctx, &q, &limited));
    // A message three limits late still arrives on the unlimited world.
    int32_t v = rank == 1 ? 42 : 0;
    mw_request_t* r = nullptr;
    if (rank == 0) {
      MWT_CHECK(mw_recv_async(unlimited, &v, 1, MW_INT32, 1, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_REQUIRE(v == 42);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * kOpTimeoutMs));
      MWT_CHECK(mw_send_async(unlimited, &v, 1, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
    }
    MWT_REQUIRE(mw_world_state(unlimited) == MW_WORLD_READY);
    // The same wait breaks the world that kept the context's limit.
    if (rank == 0) {
      MWT_CHECK(mw_recv_async(limited, &v, 1, MW_INT32, 1, &r));
      mw_status_t s = mw_wait(r, 10000);
      mw_request_free(r);
      MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_WORLD_BROKEN, "recv past the context's op_timeout_ms"));
    }
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 10000));
    if (ev.type != MW_EVENT_WORLD_BROKEN || ev.world != limited) {
      std::fprintf(stderr, "rank %d: event %d of world '%s': %s\n", rank, static_cast<int>(ev.type), ev.world_name,
                   ev.detail);
      return 1;
    }
    MWT_REQUIRE(mw_world_state(unlimited) == MW_WORLD_READY);
    // Neither leaves before both heard of the break: leaving breaks the
    // unlimited world too.
    MWT_CHECK(mw_barrier_async(unlimited, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    MWT_CHECK(mw_world_destroy(limited));
    MWT_CHECK(mw_world_destroy(unlimited));
    mw_context_free(ctx);
    return 0;
  }));
}

// A caller built against the first header passes the first version's size:
// the fields it does not know take their defaults, whatever lies past its
// struct in memory. One built against a newer header passes a larger size
// with zero past the fields this library knows.
TEST(WorldParams, OlderSmallerAndNewerLargerStructsAreReadAtTheirSize) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mw_context_t* ctx = mwtest::newContext(url, mwtest::kPatientSettings);
    MWT_REQUIRE(ctx);
    mw_world_params_t older = paramsFor("older", rank, 2);
    older.size = offsetof(mw_world_params_t, op_timeout_ms);
    // Not the caller's: values that would be refused if they were read.
    older.op_timeout_ms = -7;
    std::memset(&older.path_failover, 0x5a, sizeof older.path_failover);
    older.same_host_path = MW_SAME_HOST_PATH_AUTO;
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create_with(ctx, &older, &w));
    MWT_REQUIRE(sumOfRanks(w, rank, 2) == 0);
    MWT_CHECK(mw_world_destroy(w));

    struct {
      mw_world_params_t p;
      uint64_t later[4];
    } newer{};
    newer.p = paramsFor("newer", rank, 2);
    newer.p.size = sizeof newer;
    MWT_CHECK(mw_world_create_with(ctx, &newer.p, &w));
    MWT_REQUIRE(sumOfRanks(w, rank, 2) == 0);
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }));
}

struct Refusal {
  const char* what;
  mw_status_t status;
  const char* message;  // a part of mw_last_error()
};

void expectRefused(mw_context_t* ctx, const mw_world_params_t* p, const Refusal& want) {
  SCOPED_TRACE(want.what);
  mw_world_t* w = reinterpret_cast<mw_world_t*>(0x1);
  EXPECT_EQ(mw_world_create_with(ctx, p, &w), want.status) << mw_last_error();
  EXPECT_NE(std::strstr(mw_last_error(), want.message), nullptr) << mw_last_error();
  EXPECT_EQ(w, nullptr);
}

TEST(WorldParams, BadParamsAreRefusedNamingWhatIsWrong) {
  mwtest::RedisServer redis;
  mw_context_t* ctx = mwtest::newContext(redis.url(), {{"path_failover", "off"}});
  ASSERT_NE(ctx, nullptr);
  const mw_world_params_t good = paramsFor("bad-input", 0, 1);
  mw_world_t* w = nullptr;
  EXPECT_EQ(mw_world_create_with(ctx, nullptr, &w), MW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(mw_last_error(), "params is NULL"), nullptr) << mw_last_error();
  EXPECT_EQ(mw_world_create_with(nullptr, &good, &w), MW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(mw_last_error(), "ctx is NULL"), nullptr) << mw_last_error();
  EXPECT_EQ(mw_world_create_with(ctx, &good, nullptr), MW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(mw_last_error(), "out is NULL"), nullptr) << mw_last_error();

  mw_world_params_t p = good;
  p.size = 8;
  expectRefused(ctx, &p, {"too small", MW_ERR_INVALID_ARGUMENT, "mw_world_params_t size 8 is not"});
  p = good;
  p.size = 1 << 20;
  expectRefused(ctx, &p, {"absurdly large", MW_ERR_INVALID_ARGUMENT, "mw_world_params_t size 1048576"});
  p = good;
  p.magic = 0xcafebeef;
  expectRefused(ctx, &p, {"magic", MW_ERR_INVALID_ARGUMENT, "magic 3405692655"});
  p = good;
  p.version = 0;
  expectRefused(ctx, &p, {"version", MW_ERR_INVALID_ARGUMENT, "not made from MW_WORLD_PARAMS_INIT"});
  struct {
    mw_world_params_t p;
    unsigned char later[8];
  } newer{};
  newer.p = good;
  newer.p.size = sizeof newer;
  newer.later[3] = 1;
  expectRefused(ctx, &newer.p,
                {"trailing byte", MW_ERR_UNSUPPORTED,
                 ("sets byte " + std::to_string(sizeof(mw_world_params_t) + 3)).c_str()});
  p = good;
  p.name = nullptr;
  expectRefused(ctx, &p, {"name", MW_ERR_INVALID_ARGUMENT, "name is NULL"});
  p = good;
  p.name = "no spaces";
  expectRefused(ctx, &p, {"bad name", MW_ERR_INVALID_ARGUMENT, "world name 'no spaces'"});
  p = good;
  p.rank = 1;
  expectRefused(ctx, &p, {"rank", MW_ERR_INVALID_ARGUMENT, "rank 1 is outside [0, 1)"});
  p = good;
  p.world_size = 0;
  p.rank = 0;
  expectRefused(ctx, &p, {"world size", MW_ERR_INVALID_ARGUMENT, "world size 0"});
  p = good;
  std::memset(&p.backend, 0, sizeof p.backend);
  expectRefused(ctx, &p, {"backend", MW_ERR_INVALID_ARGUMENT, "backend 0"});
  p = good;
  p.timeout_ms = -2;
  expectRefused(ctx, &p, {"timeout", MW_ERR_INVALID_ARGUMENT, "timeout_ms -2"});
  p = good;
  p.op_timeout_ms = -2;
  expectRefused(ctx, &p, {"op timeout", MW_ERR_INVALID_ARGUMENT, "op_timeout_ms -2"});
  p = good;
  std::memset(&p.path_failover, 0, sizeof p.path_failover);
  reinterpret_cast<unsigned char*>(&p.path_failover)[0] = 7;
  expectRefused(ctx, &p, {"path failover value", MW_ERR_INVALID_ARGUMENT, "path_failover 7"});
  p = good;
  p.path_failover = MW_PATH_FAILOVER_ON;
  expectRefused(ctx, &p, {"failover the context has off", MW_ERR_INVALID_ARGUMENT,
                          "MW_PATH_FAILOVER_ON (1): this context's path_failover config is off"});
  p = good;
  std::memset(&p.same_host_path, 0, sizeof p.same_host_path);
  reinterpret_cast<unsigned char*>(&p.same_host_path)[0] = 9;
  expectRefused(ctx, &p, {"same-host value", MW_ERR_INVALID_ARGUMENT, "same_host_path 9"});
  mw_context_free(ctx);
}

TEST(WorldParams, FailoverOnIsRefusedForGlooWorlds) {
  mwtest::RedisServer redis;
  mw_context_t* ctx = mwtest::newContext(redis.url());
  ASSERT_NE(ctx, nullptr);
  mw_world_params_t p = paramsFor("gloo-failover", 0, 1);
  p.backend = MW_BACKEND_GLOO;
  p.path_failover = MW_PATH_FAILOVER_ON;
  expectRefused(ctx, &p, {"gloo", MW_ERR_INVALID_ARGUMENT, "Gloo worlds have one path"});
  mw_context_free(ctx);
}

}  // namespace
