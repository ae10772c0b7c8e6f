// Flow control of the UCX backend (core/backends/ucx/ucx_send_pacing.h): a
// sender whose receiver posts nothing gets only a bounded number of sends
// ahead, and everything arrives, in order, once the receiver takes it; a
// send that waits for its match never holds up a program that sends and
// then receives on both sides.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

constexpr int kMessages = 200;
constexpr int kWords = 16;  // 64 bytes: an eager message
// SendPacing::kMaxMarkers * kEvery, and the marker itself.
constexpr int kMostAhead = 2 * 64 + 1;

TEST(SendPacing, ASenderGetsOnlyBoundedlyAheadOfAReceiverThatTakesNothing) {
  if (mwtest::hostBackend() != MW_BACKEND_UCX) {
    GTEST_SKIP() << "pacing by matched markers is the UCX backend's";
  }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);  // rank 0 tells rank 1 when a send got stuck
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  const bool ok = mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "pacing", rank, 2));
    int32_t buf[kWords];
    if (rank == 0) {
      close(ready[0]);
      int stuck = -1;
      for (int i = 0; i < kMessages; ++i) {
        for (int32_t& w : buf) w = i;
        mw_request_t* r = nullptr;
        MWT_CHECK(mw_send_async(m.world, buf, kWords, MW_INT32, 1, &r));
        if (stuck < 0) {
          const mw_status_t s = mw_wait(r, 500);
          if (s == MW_ERR_TIMEOUT) {
            stuck = i;
            MWT_REQUIRE(write(ready[1], "x", 1) == 1);
            MWT_CHECK(mwtest::waitAndFree(r));  // taken once rank 1 receives
            continue;
          }
          MWT_CHECK(s);
          mw_request_free(r);
          continue;
        }
        MWT_CHECK(mwtest::waitAndFree(r));
      }
      close(ready[1]);
      MWT_REQUIRE(stuck >= 0 && stuck < kMostAhead);
      return 0;
    }
    close(ready[1]);
    char x;
    MWT_REQUIRE(read(ready[0], &x, 1) == 1);
    close(ready[0]);
    for (int i = 0; i < kMessages; ++i) {
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_recv_async(m.world, buf, kWords, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      for (int32_t w : buf) MWT_REQUIRE(w == i);
    }
    return 0;
  });
  close(ready[0]);
  close(ready[1]);
  EXPECT_TRUE(ok);
}

// Both ranks send and then receive, waiting for each in turn: a marker the
// caller waited for would hold both in their sends once their runs ended
// together (as UCX's rendezvous would for large messages).
TEST(SendPacing, SmallSendsThenReceivesOnBothSidesNeverWait) {
  if (mwtest::hostBackend() != MW_BACKEND_UCX) {
    GTEST_SKIP() << "on Gloo every send waits for its receive: both ranks would wait in their first send";
  }
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "exchange", rank, 2));
    int32_t out[kWords], in[kWords];
    for (int i = 0; i < 4 * 64 + 10; ++i) {
      for (int32_t& w : out) w = i * 2 + rank;
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_send_async(m.world, out, kWords, MW_INT32, 1 - rank, &r));
      MWT_CHECK(mwtest::waitAndFree(r, 10000));
      MWT_CHECK(mw_recv_async(m.world, in, kWords, MW_INT32, 1 - rank, &r));
      MWT_CHECK(mwtest::waitAndFree(r, 10000));
      for (int32_t w : in) MWT_REQUIRE(w == i * 2 + 1 - rank);
    }
    return 0;
  }));
}

}  // namespace
