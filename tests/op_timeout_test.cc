// op_timeout_ms on real worker processes over a real redis-server: an
// operation that runs longer breaks its world on every member, whether it
// waits for a message that never comes or for members that disagree on a
// collective's shape; operations that finish in time are untouched.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kTimeoutMs = 300;

using mwtest::msSince;

// Settings under which an operation that runs past kTimeoutMs breaks its
// world.
mwtest::Settings timeoutSettings() {
  mwtest::Settings s = mwtest::kPatientSettings;
  s.push_back({"op_timeout_ms", std::to_string(kTimeoutMs)});
  return s;
}

// Waits for the world's break event (up to 10 s): the time it took.
long awaitBreak(mw_context_t* ctx, Clock::time_point since) {
  mw_event_t ev;
  if (mw_next_event(ctx, &ev, 10000) != MW_OK || ev.type != MW_EVENT_WORLD_BROKEN) return -1;
  return msSince(since);
}

TEST(OpTimeout, ReceiveThatNeverMatchesBreaksTheWorldOnEveryMember) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m(timeoutSettings());
    MWT_REQUIRE(m.join(url, "late", rank, 2));
    // In time: untouched.
    int32_t x = rank, sum = -1;
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_allreduce_async(m.world, &x, &sum, 1, MW_INT32, MW_SUM, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    MWT_REQUIRE(sum == 1);
    const auto t0 = Clock::now();
    if (rank == 0) {
      int32_t never = 0;
      MWT_CHECK(mw_recv_async(m.world, &never, 1, MW_INT32, 1, &r));
      mw_status_t s = mw_wait(r, 10000);
      MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_WORLD_BROKEN, "recv past op_timeout_ms"));
      MWT_REQUIRE(std::strstr(mw_last_error(), "op_timeout_ms") != nullptr);
      mw_request_free(r);
      MWT_REQUIRE(msSince(t0) >= kTimeoutMs - 50);
    }
    // Rank 1 only hears of it.
    const long took = awaitBreak(m.ctx, t0);
    MWT_REQUIRE(took >= 0 && took < 10000);
    MWT_REQUIRE(mw_world_state(m.world) == MW_WORLD_BROKEN);
    return 0;
  }));
}

TEST(OpTimeout, MembersThatDisagreeOnACollectiveBreakAtTheTimeout) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m(timeoutSettings());
    MWT_REQUIRE(m.join(url, "disagree", rank, 2));
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
    mw_request_t* r = nullptr;
    const auto t0 = Clock::now();
    MWT_CHECK(mw_allreduce_async(m.world, in, out, rank == 0 ? 4 : 8, MW_INT32, MW_SUM, &r));
    mw_status_t s = mw_wait(r, 10000);
    mw_request_free(r);
    MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_WORLD_BROKEN, "mismatched allreduce"));
    MWT_REQUIRE(msSince(t0) >= kTimeoutMs - 50);
    return 0;
  }));
}

}  // namespace
