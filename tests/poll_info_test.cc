// mw_poll_info on real worker processes over a real redis-server: each
// completion's kind and received bytes, the caller's element size as the
// array's stride (an older caller's mw_completion_t array, a newer caller's
// larger elements zeroed past the known fields), and a bad element size
// refused before a completion is taken.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

constexpr int kWaitMs = 30000;

// Rank 1 sends five int32 to rank 0; rank 0 issues a receive (user_data 7)
// and a barrier (user_data 9), waits until both completed, and hands its
// context to `check`, which polls them.
bool withTwoCompletions(const char* name, int (*check)(mw_context_t* ctx)) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  return mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, name, rank, 2));
    int32_t data[5] = {1, 2, 3, 4, 5};
    mw_request_t* barrier = nullptr;
    if (rank == 1) {
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_send_async(m.world, data, 5, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_CHECK(mw_barrier_async(m.world, &barrier));
      MWT_CHECK(mwtest::waitAndFree(barrier));
      return 0;
    }
    int32_t got[5] = {0};
    mw_op_t op{};
    op.size = sizeof op;
    op.kind = MW_OP_RECV;
    op.recvbuf = got;
    op.count = 5;
    op.dtype = MW_INT32;
    op.peer = 1;
    op.user_data = 7;
    mw_request_t* recv = nullptr;
    MWT_CHECK(mw_submit(m.world, &op, &recv));
    op = mw_op_t{};
    op.size = sizeof op;
    op.kind = MW_OP_BARRIER;
    op.user_data = 9;
    MWT_CHECK(mw_submit(m.world, &op, &barrier));
    // Finished, yet still queued for polling: mw_test would report them.
    const int rc = check(m.ctx);
    MWT_REQUIRE(got[4] == 5);
    mw_request_free(recv);
    mw_request_free(barrier);
    return rc;
  });
}

// Polls until `want` completions arrived (each call may return fewer).
template <typename Elem>
int pollAll(mw_context_t* ctx, Elem* out, size_t want) {
  size_t have = 0;
  while (have < want) {
    size_t n = 0;
    MWT_CHECK(mw_poll_info(ctx, reinterpret_cast<mw_completion_info_t*>(out + have), sizeof(Elem), want - have,
                           kWaitMs, &n));
    MWT_REQUIRE(n > 0);
    have += n;
  }
  return 0;
}

TEST(PollInfo, KindAndReceivedBytesOfEachCompletion) {
  ASSERT_TRUE(withTwoCompletions("poll-info", [](mw_context_t* ctx) -> int {
    mw_completion_info_t c[2];
    std::memset(c, 0x5a, sizeof c);
    MWT_REQUIRE(pollAll(ctx, c, 2) == 0);
    for (const auto& e : c) {
      MWT_REQUIRE(e.status == MW_OK && e.world != nullptr && e.request != nullptr);
      if (e.user_data == 7) {
        MWT_REQUIRE(e.kind == MW_OP_RECV && e.bytes == 5 * sizeof(int32_t));
      } else {
        MWT_REQUIRE(e.user_data == 9 && e.kind == MW_OP_BARRIER && e.bytes == 0);
      }
    }
    MWT_REQUIRE(c[0].user_data != c[1].user_data);
    return 0;
  }));
}

// A caller built against a header before mw_completion_info_t grew past
// mw_completion_t's fields.
TEST(PollInfo, OlderCallersMwCompletionArrayGetsItsFields) {
  ASSERT_TRUE(withTwoCompletions("poll-older", [](mw_context_t* ctx) -> int {
    mw_completion_t c[3];
    std::memset(c, 0x5a, sizeof c);
    MWT_REQUIRE(pollAll(ctx, c, 2) == 0);
    MWT_REQUIRE(c[0].user_data + c[1].user_data == 16);
    MWT_REQUIRE(c[0].status == MW_OK && c[1].status == MW_OK);
    // Untouched past the two elements.
    const auto* tail = reinterpret_cast<const unsigned char*>(&c[2]);
    for (size_t i = 0; i < sizeof c[2]; ++i) MWT_REQUIRE(tail[i] == 0x5a);
    return 0;
  }));
}

// A caller built against a header with fields this library does not know.
TEST(PollInfo, NewerCallersLargerElementsAreZeroPastTheKnownFields) {
  ASSERT_TRUE(withTwoCompletions("poll-newer", [](mw_context_t* ctx) -> int {
    struct Newer {
      mw_completion_info_t info;
      unsigned char later[24];
    } c[2];
    std::memset(c, 0x5a, sizeof c);
    MWT_REQUIRE(pollAll(ctx, c, 2) == 0);
    for (const auto& e : c) {
      MWT_REQUIRE(e.info.status == MW_OK && (e.info.user_data == 7 || e.info.user_data == 9));
      MWT_REQUIRE(e.info.bytes == (e.info.user_data == 7 ? 5 * sizeof(int32_t) : 0));
      for (unsigned char b : e.later) MWT_REQUIRE(b == 0);
    }
    return 0;
  }));
}

TEST(PollInfo, BadElementSizeIsRefusedAndTakesNothing) {
  ASSERT_TRUE(withTwoCompletions("poll-bad", [](mw_context_t* ctx) -> int {
    mw_completion_info_t c[2];
    size_t n = 99;
    MWT_REQUIRE(mwtest::expectStatus(mw_poll_info(ctx, c, 8, 2, kWaitMs, &n), MW_ERR_INVALID_ARGUMENT, "size 8"));
    MWT_REQUIRE(n == 0);
    MWT_REQUIRE(std::strstr(mw_last_error(), "mw_completion_info_t size 8 is not") != nullptr);
    MWT_REQUIRE(mwtest::expectStatus(mw_poll_info(ctx, c, 1 << 20, 2, kWaitMs, &n), MW_ERR_INVALID_ARGUMENT,
                                     "size 2^20"));
    MWT_REQUIRE(mwtest::expectStatus(mw_poll_info(ctx, nullptr, sizeof c[0], 2, 0, &n), MW_ERR_INVALID_ARGUMENT,
                                     "NULL out"));
    MWT_REQUIRE(pollAll(ctx, c, 2) == 0);
    return 0;
  }));
}

// A receive that failed received nothing.
TEST(PollInfo, FailedReceiveReportsNoBytes) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "poll-mismatch", rank, 2));
    int32_t data[4] = {1, 2, 3, 4};
    mw_request_t* r = nullptr;
    if (rank == 1) {
      MWT_CHECK(mw_send_async(m.world, data, 4, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
    } else {
      MWT_CHECK(mw_recv_async(m.world, data, 2, MW_INT32, 1, &r));
      mw_completion_info_t c;
      MWT_REQUIRE(pollAll(m.ctx, &c, 1) == 0);
      MWT_REQUIRE(c.request == r && c.kind == MW_OP_RECV);
      MWT_REQUIRE(mwtest::expectStatus(c.status, MW_ERR_INVALID_ARGUMENT, "recv smaller than the send"));
      MWT_REQUIRE(c.bytes == 0);
      mw_request_free(r);
    }
    // Neither leaves before the other is done: leaving breaks the world.
    MWT_CHECK(mw_barrier_async(m.world, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    return 0;
  }));
}

}  // namespace
