// Gloo worlds under faults whose outcome depends on how Gloo's TCP pairs
// connect and deliver: which member a break names, and what a receive
// returns once an earlier message is lost. Real worker processes over a
// real redis-server; the steps are ordered by stopping processes, not by
// timing.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using mwtest::eventually;

mw_context_t* glooContext(const std::string& url) { return mwtest::newContext(url, mwtest::kPatientSettings); }

mw_status_t createGlooWorld(mw_context_t* ctx, const char* name, int rank, int size, mw_world_t** out) {
  mw_status_t s = mw_world_create(ctx, name, rank, size, MW_BACKEND_GLOO, 0, 30000, out);
  if (s != MW_OK) std::fprintf(stderr, "rank %d: create %s: %s (%s)\n", rank, name, mw_status_string(s), mw_last_error());
  return s;
}

struct OrderBoard {
  std::atomic<int> posted{0}, go{0}, sent{0};
  std::atomic<int> big_status{1}, small_status{1};
};

}  // namespace

// A large message's payload follows its header only once the receiver asks
// for it, so a later small message can arrive whole while the earlier
// payload never does: the sender posts both and dies before the stopped
// receiver asks. Each receive must then fail; the later one must not
// succeed past the lost one.
TEST(GlooFaults, ReceiveAfterALostMessageFails) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<OrderBoard> board;
  constexpr size_t kBig = 256 << 10, kSmall = 1 << 10;  // a payload that follows its header, one inside it
  mwtest::Workers workers;
  const pid_t sender = workers.add([&]() -> int {
    mw_context_t* ctx = glooContext(url);
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(createGlooWorld(ctx, "order", 0, 2, &w));
    MWT_REQUIRE(eventually([&] { return board->go.load() != 0; }, 30s));
    std::vector<uint8_t> big(kBig, 1), small(kSmall, 2);
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_send_async(w, big.data(), big.size(), MW_UINT8, 1, &r));
    MWT_CHECK(mw_send_async(w, small.data(), small.size(), MW_UINT8, 1, &r));
    board->sent.store(1);
    for (;;) pause();  // killed here
  });
  const pid_t receiver = workers.add([&]() -> int {
    mw_context_t* ctx = glooContext(url);
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(createGlooWorld(ctx, "order", 1, 2, &w));
    std::vector<uint8_t> big(kBig), small(kSmall);
    mw_request_t *rb = nullptr, *rs = nullptr;
    MWT_CHECK(mw_recv_async(w, big.data(), big.size(), MW_UINT8, 0, &rb));
    MWT_CHECK(mw_recv_async(w, small.data(), small.size(), MW_UINT8, 0, &rs));
    board->posted.store(1);
    board->big_status.store(mwtest::waitAndFree(rb, 20000));
    board->small_status.store(mwtest::waitAndFree(rs, 20000));
    mw_world_destroy(w);
    mw_context_free(ctx);
    return 0;
  });
  ASSERT_TRUE(eventually([&] { return board->posted.load() != 0; }, 30s));
  // The receiver's requests for both headers are on their way; stopped, it
  // cannot ask for the large payload, while the sender's headers still
  // reach its socket.
  ASSERT_TRUE(mwtest::stopProcess(receiver));
  board->go.store(1);
  ASSERT_TRUE(eventually([&] { return board->sent.load() != 0; }, 30s));
  std::this_thread::sleep_for(500ms);  // Gloo's thread writes both headers
  kill(sender, SIGKILL);
  EXPECT_EQ(mwtest::waitExit(sender, 10s), 128 + SIGKILL);
  kill(receiver, SIGCONT);
  EXPECT_EQ(mwtest::waitExit(receiver, 60s), 0);
  EXPECT_EQ(board->big_status.load(), MW_ERR_WORLD_BROKEN) << mw_status_string(mw_status_t(board->big_status.load()));
  EXPECT_EQ(board->small_status.load(), MW_ERR_WORLD_BROKEN)
      << "the later message completed with " << mw_status_string(mw_status_t(board->small_status.load()))
      << " although the one before it never came";
}

namespace {

constexpr int kRounds = 8;

struct LeaveBoard {
  std::atomic<int> formed[3] = {}, closed[3] = {};
  std::atomic<int> leave{0}, next{0};
  std::atomic<int> blamed[kRounds];
  LeaveBoard() {
    for (auto& b : blamed) b.store(-100);
  }
};

}  // namespace

// A member's connection closes under a world of three: the break names it,
// however the TCP connection between them came about (an error of a side
// that accepted it before Gloo's connect call carries the peer's ephemeral
// port, not its listening address; rank 2 connects its pair to rank 0
// first, rank 0 connects to rank 1 first, so it happens when rank 2 is the
// side that listens). Rank 1 is stopped meanwhile, so that rank 2 learns
// only from its own connection to rank 0.
TEST(GlooFaults, ThreeMemberWorldNamesTheMemberWhoseConnectionClosed) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<LeaveBoard> board;
  mwtest::Workers workers;
  pid_t pids[3];
  for (int rank = 0; rank < 3; ++rank) {
    pids[rank] = workers.add([&, rank]() -> int {
      mw_context_t* ctx = glooContext(url);
      MWT_REQUIRE(ctx);
      for (int r = 0; r < kRounds; ++r) {
        mw_world_t* w = nullptr;
        MWT_CHECK(createGlooWorld(ctx, "tri", rank, 3, &w));
        board->formed[rank].store(r + 1);
        if (rank == 0) {
          MWT_REQUIRE(eventually([&] { return board->leave.load() == r + 1; }, 30s));
        } else {
          const int peer = mwtest::nextBreakPeer(ctx);
          if (rank == 2) board->blamed[r].store(peer);
        }
        MWT_CHECK(mw_world_destroy(w));
        board->closed[rank].store(r + 1);
        MWT_REQUIRE(eventually([&] { return board->next.load() == r + 1; }, 30s));
      }
      mw_context_free(ctx);
      return 0;
    });
  }
  for (int r = 0; r < kRounds; ++r) {
    auto all = [&](std::atomic<int>* v) {
      return eventually([&] { return v[0].load() == r + 1 && v[1].load() == r + 1 && v[2].load() == r + 1; }, 30s);
    };
    ASSERT_TRUE(all(board->formed)) << "round " << r;
    ASSERT_TRUE(mwtest::stopProcess(pids[1]));
    board->leave.store(r + 1);
    EXPECT_TRUE(eventually([&] { return board->blamed[r].load() != -100; }, 25s)) << "round " << r;
    kill(pids[1], SIGCONT);
    ASSERT_TRUE(all(board->closed)) << "round " << r;
    board->next.store(r + 1);
  }
  EXPECT_TRUE(workers.join(30s));
  for (int r = 0; r < kRounds; ++r) EXPECT_EQ(board->blamed[r].load(), 0) << "round " << r;
}

namespace {

struct CascadeBoard {
  std::atomic<int> formed{0}, resumed{0};
  std::atomic<int> blamed[3] = {};
  CascadeBoard() {
    for (auto& b : blamed) b.store(-100);
  }
};

}  // namespace

// A member that breaks a world of three because of another closes its
// connections; the third member, which sees that connection close before
// it hears anything else, must blame the member the first one broke for,
// not the first one. Rank 2 is stopped; only rank 1 judges heartbeats
// quickly enough to notice, and it announces the break in Redis only
// after its connections are closed.
TEST(GlooFaults, BreakNamesTheMemberAtFaultNotTheOneThatClosedFirst) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<CascadeBoard> board;
  mwtest::Workers workers;
  pid_t pids[3];
  for (int rank = 0; rank < 3; ++rank) {
    pids[rank] = workers.add([&, rank]() -> int {
      mwtest::Settings settings = mwtest::kPatientSettings;
      if (rank == 1) settings = {{"heartbeat_timeout_ms", "1000"}, {"heartbeat_interval_ms", "100"}};
      mw_context_t* ctx = mwtest::newContext(url, settings);
      MWT_REQUIRE(ctx);
      mw_world_t* w = nullptr;
      MWT_CHECK(createGlooWorld(ctx, "cascade", rank, 3, &w));
      board->formed.fetch_add(1);
      if (rank == 2) {
        MWT_REQUIRE(eventually([&] { return board->resumed.load() != 0; }, 60s));
      } else {
        board->blamed[rank].store(mwtest::nextBreakPeer(ctx));
      }
      mw_world_destroy(w);
      mw_context_free(ctx);
      return 0;
    });
  }
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 3; }, 30s));
  ASSERT_TRUE(mwtest::stopProcess(pids[2]));
  EXPECT_TRUE(eventually([&] { return board->blamed[0].load() != -100 && board->blamed[1].load() != -100; }, 25s));
  board->resumed.store(1);
  kill(pids[2], SIGCONT);
  EXPECT_TRUE(workers.join(30s));
  EXPECT_EQ(board->blamed[1].load(), 2);
  EXPECT_EQ(board->blamed[0].load(), 2) << "rank 0 blamed the member that broke the world first";
}

namespace {

struct StoppedBoard {
  std::atomic<int> stopped{0};
  // Rank 0's threads over the count before the world, once the world is
  // gone (-100: not judged yet).
  std::atomic<int> lingering{-100};
};

}  // namespace

// Rank 0 broadcasts 256 MiB to rank 1, which is stopped (SIGSTOP) once its
// receive is posted: Gloo writes until the socket is full and waits. Rank 0
// breaks the world at the heartbeat timeout and destroys it, and no thread
// of the world may stay behind, blocked in Gloo: a failed pair does not
// wake an unbound buffer whose send it is still writing, so the abort must
// (gloo_abortable.h).
TEST(GlooFaults, ASendToAStoppedMemberLeavesNoLaneBlockedBehind) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<StoppedBoard> board;
  mwtest::Workers workers;
  pid_t pids[2];
  for (int rank = 0; rank < 2; ++rank) {
    pids[rank] = workers.add([&, rank]() -> int {
      mwtest::Settings settings = {{"heartbeat_timeout_ms", "1000"}, {"heartbeat_interval_ms", "100"}};
      mw_context_t* ctx = mwtest::newContext(url, settings);
      MWT_REQUIRE(ctx);
      const int before = mwtest::threadCount();
      mw_world_t* w = nullptr;
      MWT_CHECK(createGlooWorld(ctx, "stopped", rank, 2, &w));
      std::vector<char> data(size_t{256} << 20, static_cast<char>(rank));
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_broadcast_async(w, data.data(), data.size(), MW_UINT8, 0, &r));
      if (rank == 1) {
        // Its receive is posted: the driver stops it mid-transfer.
        board->stopped.store(1);
        MWT_REQUIRE(eventually([&] { return board->lingering.load() != -100; }, 60s));
        mw_wait(r, 10000);
        mw_request_free(r);
        mw_world_destroy(w);
        mw_context_free(ctx);
        return 0;
      }
      MWT_REQUIRE(mw_wait(r, 30000) == MW_ERR_WORLD_BROKEN);
      mw_request_free(r);
      mw_world_destroy(w);
      // The world's lanes end with it; one blocked in Gloo would not.
      eventually([&] { return mwtest::threadCount() <= before; }, 10s);
      board->lingering.store(mwtest::threadCount() - before);
      mw_context_free(ctx);
      return 0;
    });
  }
  ASSERT_TRUE(eventually([&] { return board->stopped.load() != 0; }, 60s));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(mwtest::stopProcess(pids[1]));
  EXPECT_TRUE(eventually([&] { return board->lingering.load() != -100; }, 60s));
  kill(pids[1], SIGCONT);
  EXPECT_TRUE(workers.join(60s));
  EXPECT_LE(board->lingering.load(), 0) << "rank 0 kept a thread of the destroyed world";
}
