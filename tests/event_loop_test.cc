// The C API for event loops and issuers on several threads, on real worker
// processes over a real redis-server: mw_context_fd is readable exactly
// while a completion or event is queued; mw_context_wake interrupts a
// blocked mw_poll / mw_next_event (and is kept when none is blocked);
// mw_submit fixes user_data before any other thread can see the
// completion, and checks the descriptor's size; mw_request_cancel.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using mwtest::msSince;

// Flags the forked workers of one test share (in a mwlab::Shared, mapped
// before forking).
struct Flags {
  std::atomic<int> v[4];
  std::atomic<int>& operator[](int i) { return v[i]; }
};

bool awaitFlag(std::atomic<int>& flag, int want, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = Clock::now() + timeout;
  while (flag.load() < want) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// 1 when readable, 0 when not within `timeout_ms`, -1 on error.
int readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, timeout_ms);
  if (n < 0) return -1;
  return n > 0 && (p.revents & POLLIN) ? 1 : 0;
}

mw_op_t op(mw_op_kind_t kind, const void* send, void* recv, size_t count, mw_dtype_t dt, int peer,
           uint64_t user_data) {
  mw_op_t o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.kind = kind;
  o.sendbuf = send;
  o.recvbuf = recv;
  o.count = count;
  o.dtype = dt;
  o.op = MW_SUM;
  o.peer = peer;
  o.user_data = user_data;
  return o;
}

TEST(ContextFd, ReadableExactlyWhileSomethingIsQueued) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<Flags> shared;
  Flags& flags = *shared;  // [0]: rank 0 wants message n; [1]: rank 0 is done with the world
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "fd", rank, 2));
    int32_t value = 7;
    if (rank == 1) {
      for (int n = 1; n <= 2; ++n) {
        MWT_REQUIRE(awaitFlag(flags[0], n));
        mw_request_t* r = nullptr;
        MWT_CHECK(mw_send_async(m.world, &value, 1, MW_INT32, 0, &r));
        MWT_CHECK(mwtest::waitAndFree(r));
      }
      MWT_REQUIRE(awaitFlag(flags[1], 1));
      mw_world_destroy(m.world);  // rank 0's world breaks: an event
      m.world = nullptr;
      return 0;
    }
    int fd = -1, again = -2;
    MWT_CHECK(mw_context_fd(m.ctx, &fd));
    MWT_CHECK(mw_context_fd(m.ctx, &again));
    MWT_REQUIRE(fd >= 0 && fd == again);
    MWT_REQUIRE(readable(fd, 0) == 0);

    // A completion makes it readable; mw_poll drains it.
    int32_t got = 0;
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &got, 1, MW_INT32, 1, &r));
    MWT_REQUIRE(readable(fd, 100) == 0);
    flags[0] = 1;
    MWT_REQUIRE(readable(fd, 20000) == 1);
    MWT_REQUIRE(readable(fd, 0) == 1);  // level-triggered: stays so until drained
    mw_completion_t c[4];
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 4, 0, &n));
    MWT_REQUIRE(n == 1 && c[0].request == r && c[0].status == MW_OK && got == 7);
    MWT_REQUIRE(readable(fd, 0) == 0);
    mw_request_free(r);

    // A completion reported by mw_wait is not queued: not readable after.
    got = 0;
    MWT_CHECK(mw_recv_async(m.world, &got, 1, MW_INT32, 1, &r));
    flags[0] = 2;
    MWT_CHECK(mwtest::waitAndFree(r));
    MWT_REQUIRE(got == 7);
    MWT_REQUIRE(readable(fd, 0) == 0);

    // An event makes it readable; mw_next_event drains it.
    flags[1] = 1;
    MWT_REQUIRE(readable(fd, 20000) == 1);
    mw_event_t ev;
    MWT_CHECK(mw_next_event(m.ctx, &ev, 0));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    MWT_REQUIRE(readable(fd, 0) == 0);
    return 0;
  }));
}

// A wait that spins drives the engine itself and keeps its fds from the
// engine's thread; a receive it leaves behind must still complete, and
// make the context fd readable, for a caller that no longer spins.
TEST(ContextFd, AReceiveLeftBehindBySpinningWaitsStillCompletes) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<Flags> shared;
  Flags& flags = *shared;  // [0]: rank 0 wants message n; [1]: rank 0 looked (rank 1 stays till then)
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    // Rank 0's waits spin until their message is there (up to 1 s), and
    // its heartbeats, whose work would wake the engine's thread, are 10 s
    // apart.
    mwtest::Settings settings = mwtest::kPatientSettings;
    if (rank == 0) {
      settings.emplace_back("spin_us", "1000000");
      settings.emplace_back("heartbeat_interval_ms", "10000");
    }
    mwtest::Member m(settings);
    MWT_REQUIRE(m.join(url, "left", rank, 2));
    constexpr int kSpinningWaits = 3;
    int32_t value = 0;
    if (rank == 1) {
      for (int n = 1; n <= kSpinningWaits + 1; ++n) {
        MWT_REQUIRE(awaitFlag(flags[0], n));
        value = n;
        mw_request_t* r = nullptr;
        MWT_CHECK(mw_send_async(m.world, &value, 1, MW_INT32, 0, &r));
        MWT_CHECK(mwtest::waitAndFree(r));
      }
      // Its exit would wake rank 0's engine (a pidfd): stay.
      MWT_REQUIRE(awaitFlag(flags[1], 1));
      return 0;
    }
    int fd = -1;
    MWT_CHECK(mw_context_fd(m.ctx, &fd));
    mw_request_t* r = nullptr;
    for (int n = 1; n <= kSpinningWaits; ++n) {
      MWT_CHECK(mw_recv_async(m.world, &value, 1, MW_INT32, 1, &r));
      flags[0] = n;
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_REQUIRE(value == n);
    }
    // No wait spins from here: the engine's own thread must see it.
    MWT_CHECK(mw_recv_async(m.world, &value, 1, MW_INT32, 1, &r));
    flags[0] = kSpinningWaits + 1;
    const auto start = Clock::now();
    const int seen = readable(fd, 20000);
    flags[1] = 1;
    MWT_REQUIRE(seen == 1);
    MWT_REQUIRE(msSince(start) < 5000);
    mw_completion_t c;
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, &c, 1, 0, &n));
    MWT_REQUIRE(n == 1 && c.request == r && c.status == MW_OK && value == kSpinningWaits + 1);
    mw_request_free(r);
    return 0;
  }));
}

TEST(ContextWake, InterruptsBlockedCallsAndIsKeptWhenNoneIsBlocked) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(1, [&](int) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "wake", 0, 1));

    // Blocked calls, forever, on other threads: each returns at the wake.
    std::atomic<int> returned{0};
    size_t polled = 99;
    mw_status_t event_status = MW_OK;
    std::thread poller([&] {
      mw_completion_t c;
      mw_poll(m.ctx, &c, 1, -1, &polled);
      ++returned;
    });
    std::thread eventer([&] {
      mw_event_t ev;
      event_status = mw_next_event(m.ctx, &ev, -1);
      ++returned;
    });
    std::this_thread::sleep_for(200ms);
    MWT_REQUIRE(returned.load() == 0);
    MWT_CHECK(mw_context_wake(m.ctx));
    poller.join();
    eventer.join();
    MWT_REQUIRE(polled == 0 && event_status == MW_ERR_TIMEOUT);

    // With nothing blocked, the wake is kept for the next blocking call of
    // each kind, and for that one only.
    MWT_CHECK(mw_context_wake(m.ctx));
    auto t0 = Clock::now();
    mw_completion_t c;
    size_t n = 99;
    MWT_CHECK(mw_poll(m.ctx, &c, 1, 0, &n));  // a look does not take it
    MWT_CHECK(mw_poll(m.ctx, &c, 1, 10000, &n));
    MWT_REQUIRE(n == 0 && msSince(t0) < 5000);
    mw_event_t ev;
    MWT_REQUIRE(mw_next_event(m.ctx, &ev, 10000) == MW_ERR_TIMEOUT);
    MWT_REQUIRE(msSince(t0) < 5000);
    t0 = Clock::now();
    MWT_CHECK(mw_poll(m.ctx, &c, 1, 300, &n));
    MWT_REQUIRE(n == 0 && msSince(t0) >= 250);

    // Bad input.
    MWT_REQUIRE(mw_context_wake(nullptr) == MW_ERR_INVALID_ARGUMENT);
    int fd = 5;
    MWT_REQUIRE(mw_context_fd(nullptr, &fd) == MW_ERR_INVALID_ARGUMENT && fd == -1);
    MWT_REQUIRE(mw_context_fd(m.ctx, nullptr) == MW_ERR_INVALID_ARGUMENT);
    return 0;
  }));
}

// The completion of a submitted operation may be polled on another thread
// before mw_submit even returns; it carries the user_data all the same.
TEST(Submit, UserDataIsSetBeforeAnyThreadCanPollTheCompletion) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "submit", rank, 2));
    constexpr int kOps = 2000;
    std::vector<int32_t> values(kOps);
    std::atomic<int> collected{0}, wrong{0};
    std::thread poller([&] {
      mw_completion_t c[32];
      while (collected.load() < kOps) {
        size_t n = 0;
        if (mw_poll(m.ctx, c, 32, 1000, &n) != MW_OK) {
          ++wrong;
          return;
        }
        for (size_t i = 0; i < n; ++i) {
          if (c[i].status != MW_OK || (c[i].user_data >> 48) != 0xABCD ||
              (c[i].user_data & 0xFFFFFFFF) >= static_cast<uint64_t>(kOps)) {
            std::fprintf(stderr, "rank %d: completion with user_data %#" PRIx64 ", %s\n", rank, c[i].user_data,
                         mw_status_string(c[i].status));
            ++wrong;
          }
          mw_request_free(c[i].request);
          ++collected;
        }
      }
    });
    for (int k = 0; k < kOps; ++k) {
      values[k] = k;
      mw_op_t o = op(rank == 0 ? MW_OP_SEND : MW_OP_RECV, &values[k], &values[k], 1, MW_INT32, 1 - rank,
                     0xABCD000000000000ull | static_cast<uint64_t>(k));
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_submit(m.world, &o, &r));
    }
    poller.join();
    MWT_REQUIRE(wrong.load() == 0 && collected.load() == kOps);
    if (rank == 1) {
      for (int k = 0; k < kOps; ++k) MWT_REQUIRE(values[k] == k);
    }
    mw_op_t b = op(MW_OP_BARRIER, nullptr, nullptr, 0, MW_UINT8, -1, 0);
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_submit(m.world, &b, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    return 0;
  }));
}

TEST(Submit, DescriptorSizeAndKindAreChecked) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(1, [&](int) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "submit-size", 0, 1));
    int32_t x = 1, y = 0;
    mw_request_t* r = reinterpret_cast<mw_request_t*>(1);

    mw_op_t o = op(MW_OP_ALLREDUCE, &x, &y, 1, MW_INT32, -1, 0);
    o.size = 8;
    MWT_REQUIRE(mw_submit(m.world, &o, &r) == MW_ERR_INVALID_ARGUMENT && r == nullptr);
    MWT_REQUIRE(std::strstr(mw_last_error(), "size 8") != nullptr);
    o.size = size_t{1} << 40;
    MWT_REQUIRE(mw_submit(m.world, &o, &r) == MW_ERR_INVALID_ARGUMENT);

    // A newer caller's larger struct: fine while its new fields are zero.
    struct Newer {
      mw_op_t base;
      uint64_t future_field;
    } newer;
    std::memset(&newer, 0, sizeof newer);
    newer.base = op(MW_OP_ALLREDUCE, &x, &y, 1, MW_INT32, -1, 0);
    newer.base.size = sizeof newer;
    MWT_CHECK(mw_submit(m.world, &newer.base, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    MWT_REQUIRE(y == 1);
    newer.future_field = 3;
    MWT_REQUIRE(mw_submit(m.world, &newer.base, &r) == MW_ERR_UNSUPPORTED);

    o = op(static_cast<mw_op_kind_t>(11), &x, &y, 1, MW_INT32, -1, 0);
    MWT_REQUIRE(mw_submit(m.world, &o, &r) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(std::strstr(mw_last_error(), "kind 11") != nullptr);
    o = op(MW_OP_ALLREDUCE, &x, &y, 1, MW_INT32, -1, 0);
    MWT_REQUIRE(mw_submit(m.world, nullptr, &r) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(mw_submit(m.world, &o, nullptr) == MW_ERR_INVALID_ARGUMENT);
    MWT_REQUIRE(mw_submit(nullptr, &o, &r) == MW_ERR_INVALID_ARGUMENT);
    o.dtype = static_cast<mw_dtype_t>(42);
    MWT_REQUIRE(mw_submit(m.world, &o, &r) == MW_ERR_INVALID_ARGUMENT);
    return 0;
  }));
}

// The header says fields an operation does not use are ignored: members
// that put different values there (a zeroed descriptor against the
// *_async wrappers) still run the same barrier, allreduce and broadcast.
TEST(Submit, FieldsTheOperationDoesNotUseAreIgnored) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "submit-unused", rank, 2));
    int32_t x = rank + 1, sum = 0, b = rank == 0 ? 7 : 0;
    mw_request_t* r = nullptr;
    if (rank == 0) {
      mw_op_t o = op(MW_OP_BARRIER, &x, &sum, 3, static_cast<mw_dtype_t>(42), 1, 0);
      o.op = static_cast<mw_redop_t>(9);
      MWT_CHECK(mw_submit(m.world, &o, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      o = op(MW_OP_ALLREDUCE, &x, &sum, 1, MW_INT32, 1, 0);
      MWT_CHECK(mw_submit(m.world, &o, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      o = op(MW_OP_BROADCAST, nullptr, &b, 1, MW_INT32, 0, 0);
      o.op = MW_MAX;
      MWT_CHECK(mw_submit(m.world, &o, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
    } else {
      MWT_CHECK(mw_barrier_async(m.world, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_CHECK(mw_allreduce_async(m.world, &x, &sum, 1, MW_INT32, MW_SUM, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_CHECK(mw_broadcast_async(m.world, &b, 1, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
    }
    MWT_REQUIRE(sum == 3 && b == 7);
    // Neither leaves before the other is done: leaving breaks the world.
    MWT_CHECK(mw_barrier_async(m.world, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    return 0;
  }));
}

// A finished request is not affected; a pending operation is taken back
// (UCX receives) or breaks its world, and every member hears of it.
TEST(Cancel, FinishedIsUntouchedPendingIsTakenBackOrBreaksTheWorld) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  const bool takes_back = mwtest::hostBackend() == MW_BACKEND_UCX;
  mwlab::Shared<Flags> shared;
  Flags& flags = *shared;  // [0]: rank 0 cancelled
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "cancel", rank, 2));
    int32_t v = 5, got = 0;
    mw_request_t* r = nullptr;
    // Finished: no effect.
    MWT_CHECK(mw_allreduce_async(m.world, &v, &got, 1, MW_INT32, MW_SUM, &r));
    MWT_CHECK(mw_wait(r, 30000));
    MWT_CHECK(mw_request_cancel(r));
    MWT_CHECK(mw_test(r));
    mw_request_free(r);
    MWT_REQUIRE(got == 10);
    MWT_REQUIRE(mw_request_cancel(nullptr) == MW_ERR_INVALID_ARGUMENT);

    if (rank == 0) {
      // A receive nobody sends to.
      MWT_CHECK(mw_recv_async(m.world, &got, 1, MW_INT32, 1, &r));
      MWT_CHECK(mw_request_cancel(r));
      mw_status_t s = mw_wait(r, 20000);
      mw_request_free(r);
      flags[0] = 1;
      if (takes_back) {
        MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_CANCELLED, "cancelled recv"));
        MWT_REQUIRE(mw_world_state(m.world) == MW_WORLD_READY);
      } else {
        MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_WORLD_BROKEN, "cancelled recv"));
        mw_event_t ev;
        MWT_CHECK(mw_next_event(m.ctx, &ev, 5000));
        MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 0);
        return 0;
      }
    } else {
      MWT_REQUIRE(awaitFlag(flags[0], 1));
      if (!takes_back) {
        // The break reaches the other member too.
        mw_event_t ev;
        MWT_CHECK(mw_next_event(m.ctx, &ev, 20000));
        MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 0);
        return 0;
      }
    }
    // The world still works, and the next message goes to the next receive.
    v = 40 + rank;
    if (rank == 1) {
      MWT_CHECK(mw_send_async(m.world, &v, 1, MW_INT32, 0, &r));
    } else {
      MWT_CHECK(mw_recv_async(m.world, &got, 1, MW_INT32, 1, &r));
    }
    MWT_CHECK(mwtest::waitAndFree(r));
    MWT_REQUIRE(rank == 1 || got == 41);
    MWT_CHECK(mw_barrier_async(m.world, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    return 0;
  }));
}

}  // namespace
