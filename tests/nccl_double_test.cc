// NCCL worlds on the engine, run on the host-memory plugin double
// (tests/support/nccl_plugin_double.cc) so that the core's side of them is
// tested where there is no GPU: formation over UCX and Redis, the threads,
// a killed member, a member that leaves, op_timeout_ms, and how the
// communicator ends (finalized when healthy, aborted when broken). NCCL
// itself runs only on a GPU: nccl_test, nccl_ops_test and the GPU kit.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kCreateMs = 30000;

// The plugin is found once per process, on first use: before any test.
const bool kDoubleChosen = [] {
  setenv("MW_NCCL_PLUGIN", MW_NCCL_DOUBLE_PATH, 1);
  return true;
}();

// The teardown steps the double logged for `pid` ("abort", "finalized", ...).
std::vector<std::string> stepsOf(const std::string& log, pid_t pid) {
  std::vector<std::string> steps;
  std::ifstream in(log);
  int p = 0, rank = 0;
  std::string step;
  while (in >> p >> rank >> step) {
    if (p == pid) steps.push_back(step);
  }
  return steps;
}

class NcclDouble : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kDoubleChosen);
    log_ = "/tmp/mw-nccl-double-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".log";
    std::remove(log_.c_str());
    setenv("MW_NCCL_DOUBLE_LOG", log_.c_str(), 1);
  }
  void TearDown() override { std::remove(log_.c_str()); }
  std::string log_;
  mwtest::RedisServer redis_;
};

struct Stage {
  std::atomic<int> ready{0};
  std::atomic<int> reduced{0};  // members whose allreduce finished
  std::atomic<int> done{0};
  std::atomic<int64_t> leaving_ns{0};  // steady clock: one clock for every process
};

int64_t nowNs() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

TEST_F(NcclDouble, EightWorldsKeepOurThreadsAndAHealthyDestroyFinalizes) {
  pid_t pid = mwtest::spawn([&] {
    MWT_REQUIRE(mw_backend_available(MW_BACKEND_NCCL) == 1);
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    std::vector<mw_world_t*> worlds(8, nullptr);
    std::map<std::string, int> with_one;
    for (size_t i = 0; i < worlds.size(); ++i) {
      MWT_CHECK(mw_world_create(ctx, ("eight-" + std::to_string(i)).c_str(), 0, 1, MW_BACKEND_NCCL, 0, kCreateMs,
                                &worlds[i]));
      if (i == 0) with_one = mwtest::threadsByName();
    }
    const std::map<std::string, int> with_eight = mwtest::threadsByName();
    std::fprintf(stderr, "threads with 1 NCCL world: %s\nthreads with 8: %s\n",
                 mwtest::describeThreads(with_one).c_str(), mwtest::describeThreads(with_eight).c_str());
    MWT_REQUIRE(mwtest::ourThreads(with_eight) == mwtest::ourThreads(with_one));
    MWT_REQUIRE(with_eight.count("mw:ncclpoll") == 1 && with_eight.count("mw:ncclabort") == 1);
    for (size_t i = 0; i < worlds.size(); ++i) {
      float in[4] = {1, 2, 3, static_cast<float>(i)}, out[4] = {};
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_allreduce_async(worlds[i], in, out, 4, MW_FLOAT32, MW_SUM, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      MWT_REQUIRE(out[3] == static_cast<float>(i));
      mw_request_t *s = nullptr, *q = nullptr;
      MWT_CHECK(mw_recv_async(worlds[i], out, 4, MW_FLOAT32, 0, &q));
      MWT_CHECK(mw_send_async(worlds[i], in, 4, MW_FLOAT32, 0, &s));
      MWT_CHECK(mwtest::waitAndFree(s));
      MWT_CHECK(mwtest::waitAndFree(q));
    }
    for (mw_world_t* w : worlds) MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  });
  ASSERT_EQ(mwtest::waitExit(pid, 120s), 0);
  const std::vector<std::string> steps = stepsOf(log_, pid);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), "finalized"), 8);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), "abort"), 0);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), "free"), 8);
}

// Rank 1 is killed while rank 0 waits for it: the control endpoints break
// the world at once although the communicator would wait forever; the
// communicator is aborted, not finalized, and the world forms again with a
// new rank 1.
TEST_F(NcclDouble, KilledMemberBreaksTheWorldAtOnceAndItFormsAgain) {
  mwlab::Shared<Stage> stage;
  mwtest::Workers workers;
  workers.add([&] {
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "pair", 0, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    float buf[16] = {};
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_recv_async(w, buf, 16, MW_FLOAT32, 1, &r));
    ++stage->ready;
    const auto t0 = Clock::now();
    const mw_status_t st = mw_wait(r, 20000);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::fprintf(stderr, "pending recv ended with %s after %.1f ms\n", mw_status_string(st), ms);
    MWT_REQUIRE(st == MW_ERR_WORLD_BROKEN);
    mw_request_free(r);
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 10000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && std::string(ev.world_name) == "pair" && ev.peer_rank == 1);
    MWT_CHECK(mw_world_destroy(w));
    // The name forms again, with whoever takes rank 1 now.
    MWT_CHECK(mw_world_create(ctx, "pair", 0, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    float in[2] = {5, 6}, out[2] = {};
    MWT_CHECK(mw_allreduce_async(w, in, out, 2, MW_FLOAT32, MW_SUM, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    // The double's collectives finish at once: rank 1 issues its own
    // before this one leaves, which would break its world.
    MWT_REQUIRE(mwtest::eventually([&] { return stage->reduced.load() == 1; }, 30s));
    // Ahead of rank 1: a world whose peer left first is broken, and is
    // aborted, not finalized.
    MWT_CHECK(mw_world_destroy(w));
    ++stage->done;
    mw_context_free(ctx);
    return 0;
  });
  const pid_t doomed = workers.add([&] {
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "pair", 1, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    ++stage->ready;
    pause();  // killed here
    return 1;
  });
  ASSERT_TRUE(mwtest::eventually([&] { return stage->ready.load() == 2; }, 60s));
  std::this_thread::sleep_for(100ms);  // rank 0 sits in mw_wait
  ASSERT_EQ(kill(doomed, SIGKILL), 0);
  workers.add([&] {
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "pair", 1, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    float in[2] = {5, 6}, out[2] = {};
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_allreduce_async(w, in, out, 2, MW_FLOAT32, MW_SUM, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    ++stage->reduced;
    MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 1; }, 30s));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  });
  const pid_t rank0 = workers.pids()[0];
  EXPECT_EQ(mwtest::waitExit(rank0, 90s), 0);
  EXPECT_EQ(mwtest::waitExit(workers.pids()[2], 90s), 0);
  const std::vector<std::string> steps = stepsOf(log_, rank0);
  // The broken world's communicator is aborted; the one formed again ends
  // healthy and is finalized.
  EXPECT_EQ(steps, (std::vector<std::string>{"abort", "free", "finalized", "free"}));
}

// Rank 0 leaves with a receive of rank 1 still pending: rank 1 hears the
// goodbye (no announce of a failure), gives what runs a grace, then the
// pending receive fails naming why; nothing blames rank 0 for dying.
TEST_F(NcclDouble, AMemberThatLeavesBreaksTheWorldAfterAGraceForWhatRuns) {
  mwlab::Shared<Stage> stage;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) {
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "leave", rank, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    float buf[8] = {};
    if (rank == 0) {
      mw_request_t* s = nullptr;
      MWT_CHECK(mw_send_async(w, buf, 8, MW_FLOAT32, 1, &s));
      MWT_CHECK(mwtest::waitAndFree(s));
      MWT_REQUIRE(mwtest::eventually([&] { return stage->ready.load() == 1; }, 30s));
      stage->leaving_ns = nowNs();
      MWT_CHECK(mw_world_destroy(w));
      MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 1; }, 30s));
      mw_context_free(ctx);
      return 0;
    }
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_recv_async(w, buf, 8, MW_FLOAT32, 0, &r));  // never finishes on the double
    ++stage->ready;
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 20000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 0);
    std::fprintf(stderr, "break: %s\n", ev.detail);
    MWT_REQUIRE(std::string(ev.detail).find("left the world") != std::string::npos);
    const mw_status_t st = mw_wait(r, 20000);
    const double ms = static_cast<double>(nowNs() - stage->leaving_ns.load()) / 1e6;
    std::fprintf(stderr, "pending recv ended with %s %.0f ms after rank 0 began to leave\n", mw_status_string(st),
                 ms);
    MWT_REQUIRE(st == MW_ERR_WORLD_BROKEN);
    MWT_REQUIRE(ms >= 1000);  // the grace: 1 s without an operation finishing, after the goodbye
    mw_request_free(r);
    MWT_CHECK(mw_world_destroy(w));
    ++stage->done;
    mw_context_free(ctx);
    return 0;
  }));
}

TEST_F(NcclDouble, AnOperationPastOpTimeoutBreaksTheWorldNamingTheLimit) {
  mwlab::Shared<Stage> stage;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) {
    mw_context_t* ctx = mwtest::newContext(redis_.url(), {{"op_timeout_ms", "300"}});
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "slow", rank, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    float buf[8] = {};
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_recv_async(w, buf, 8, MW_FLOAT32, 1 - rank, &r));  // never finishes on the double
    const mw_status_t st = mw_wait(r, 20000);
    MWT_REQUIRE(st == MW_ERR_WORLD_BROKEN);
    mw_request_free(r);
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 10000));
    std::fprintf(stderr, "rank %d: %s\n", rank, ev.detail);
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    if (std::string(ev.detail).find("op_timeout_ms=300") != std::string::npos) ++stage->done;
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  }));
  // Whoever timed out first names the limit; the other may hear of the
  // break through its endpoints closing before the notice arrives.
  EXPECT_GE(stage->done.load(), 1);
}

// Destroyed with a receive pending that the double never flushes: the
// finalization gives up after its grace and the communicator is aborted;
// destroy stays bounded and the request completes cancelled.
TEST_F(NcclDouble, DestroyWithUnflushedWorkFallsBackToAbort) {
  mwlab::Shared<Stage> stage;
  std::vector<pid_t> pids;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) {
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "unflushed", rank, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    if (rank == 0) {
      float buf[8] = {};
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_recv_async(w, buf, 8, MW_FLOAT32, 1, &r));
      const auto t0 = Clock::now();
      MWT_CHECK(mw_world_destroy(w));
      const auto took = Clock::now() - t0;
      std::fprintf(stderr, "destroy took %.0f ms\n", std::chrono::duration<double, std::milli>(took).count());
      MWT_REQUIRE(took < 10s);
      MWT_REQUIRE(mwtest::waitAndFree(r, 10000) == MW_ERR_CANCELLED);
      const std::vector<std::string> steps = stepsOf(log_, getpid());
      MWT_REQUIRE((steps == std::vector<std::string>{"finalize-timeout", "abort", "free"}));
      ++stage->done;
    } else {
      MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 1; }, 30s));
      MWT_CHECK(mw_world_destroy(w));
    }
    mw_context_free(ctx);
    return 0;
  }));
}

}  // namespace

// ---- shrink and grow --------------------------------------------------------

struct ResizeStage {
  std::atomic<int> formed{0};
  std::atomic<int> resized{0};
  std::atomic<int> done{0};
};

int countOf(const std::vector<std::string>& steps, const char* step) {
  return static_cast<int>(std::count(steps.begin(), steps.end(), step));
}

// A healthy world shrinks around a live member that calls nothing: the
// survivors' communicator shrinks through the plugin's ncclCommShrink
// (NCCL_SHRINK_DEFAULT), and the excluded member hears it was excluded.
TEST_F(NcclDouble, AShrinkOfAHealthyWorldShrinksItsCommunicator) {
  mwlab::Shared<ResizeStage> stage;
  std::vector<pid_t> pids;
  mwtest::Workers workers;
  for (int rank = 0; rank < 3; ++rank) {
    pids.push_back(workers.add([&, rank] {
      mw_context_t* ctx = mwtest::newContext(redis_.url());
      MWT_REQUIRE(ctx);
      mw_world_t* w = nullptr;
      MWT_CHECK(mw_world_create(ctx, "trio", rank, 3, MW_BACKEND_NCCL, 0, kCreateMs, &w));
      if (rank == 2) {
        mw_event_t ev;
        MWT_CHECK(mw_next_event(ctx, &ev, 30000));
        if (!(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 2 &&
              std::string(ev.detail).find("excluded") != std::string::npos)) {
          std::fprintf(stderr, "rank 2: event %d blaming %d: %s\n", static_cast<int>(ev.type), ev.peer_rank,
                       ev.detail);
          return 1;
        }
        MWT_CHECK(mw_world_destroy(w));
      } else {
        const int exclude[] = {2};
        mw_world_t* next = nullptr;
        MWT_CHECK(mw_world_shrink(w, exclude, 1, MW_SHRINK_DEFAULT, kCreateMs, &next));
        MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
        float in[2] = {1, 2}, out[2] = {};
        mw_request_t* r = nullptr;
        MWT_CHECK(mw_allreduce_async(next, in, out, 2, MW_FLOAT32, MW_SUM, &r));
        MWT_CHECK(mwtest::waitAndFree(r));
        MWT_CHECK(mw_world_destroy(w));
        ++stage->resized;
        MWT_REQUIRE(mwtest::eventually([&] { return stage->resized.load() == 2; }, 30s));
        MWT_CHECK(mw_world_destroy(next));
      }
      mw_context_free(ctx);
      return 0;
    }));
  }
  ASSERT_TRUE(workers.join(120s));
  for (int rank : {0, 1}) {
    const auto steps = stepsOf(log_, pids[static_cast<size_t>(rank)]);
    EXPECT_EQ(countOf(steps, "shrink"), 1) << "rank " << rank;
    EXPECT_EQ(countOf(steps, "shrink-abort"), 0) << "rank " << rank;
  }
}

// MW_SHRINK_ABORT cancels a pending operation (a receive the double never
// finishes) and shrinks with NCCL_SHRINK_ABORT; where one member's NCCL
// lacks ncclCommShrink, every member forms a new communicator instead.
TEST_F(NcclDouble, AbortCancelsAndShrinksWithAbortUnlessANcclLacksShrink) {
  for (bool one_without : {false, true}) {
    mwlab::Shared<ResizeStage> stage;
    std::vector<pid_t> pids;
    mwtest::Workers workers;
    const std::string name = one_without ? "fresh-trio" : "abort-trio";
    for (int rank = 0; rank < 3; ++rank) {
      pids.push_back(workers.add([&, rank] {
        if (one_without && rank == 1) setenv("MW_NCCL_DOUBLE_NO_RESIZE", "1", 1);
        mw_context_t* ctx = mwtest::newContext(redis_.url());
        MWT_REQUIRE(ctx);
        mw_world_t* w = nullptr;
        MWT_CHECK(mw_world_create(ctx, name.c_str(), rank, 3, MW_BACKEND_NCCL, 0, kCreateMs, &w));
        if (rank == 2) {
          MWT_REQUIRE(mwtest::eventually([&] { return stage->resized.load() == 2; }, 60s));
          MWT_CHECK(mw_world_destroy(w));
          mw_context_free(ctx);
          return 0;
        }
        float buf[4] = {};
        mw_request_t* pending = nullptr;
        if (rank == 0) MWT_CHECK(mw_recv_async(w, buf, 4, MW_FLOAT32, 1, &pending));
        const int exclude[] = {2};
        mw_world_t* next = nullptr;
        MWT_CHECK(mw_world_shrink(w, exclude, 1, rank == 0 ? MW_SHRINK_ABORT : MW_SHRINK_DEFAULT, kCreateMs, &next));
        if (pending) MWT_REQUIRE(mwtest::waitAndFree(pending) == MW_ERR_CANCELLED);
        MWT_REQUIRE(mw_world_size(next) == 2);
        MWT_CHECK(mw_world_destroy(w));
        ++stage->resized;
        MWT_REQUIRE(mwtest::eventually([&] { return stage->resized.load() == 2; }, 30s));
        MWT_CHECK(mw_world_destroy(next));
        mw_context_free(ctx);
        return 0;
      }));
    }
    ASSERT_TRUE(workers.join(120s));
    const auto first = stepsOf(log_, pids[0]), second = stepsOf(log_, pids[1]);
    EXPECT_EQ(countOf(first, "shrink-abort"), one_without ? 0 : 1);
    EXPECT_EQ(countOf(second, "shrink"), one_without ? 0 : 1);
  }
}

// A member is killed; the survivors shrink with no list (the break's). The
// broken world's communicator was aborted at the break, so a new one forms;
// freeing the aborted parent hangs here (as it can in NCCL), and neither
// the shrink nor the destroy of the retired world waits for it.
TEST_F(NcclDouble, AKilledMembersWorldShrinksAndItsAbortedParentHoldsNoCaller) {
  mwlab::Shared<ResizeStage> stage;
  mwtest::Workers survivors;
  auto member = [&](int rank) {
    setenv("MW_NCCL_DOUBLE_FREE_MS", "20000", 1);
    mw_context_t* ctx = mwtest::newContext(redis_.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "doomed-trio", rank, 3, MW_BACKEND_NCCL, 0, kCreateMs, &w));
    ++stage->formed;
    if (rank == 2) pause();  // killed here
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 30000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.peer_rank == 2);
    const auto t0 = Clock::now();
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_shrink(w, nullptr, 0, MW_SHRINK_ABORT, kCreateMs, &next));
    const auto t1 = Clock::now();
    MWT_CHECK(mw_world_destroy(w));
    const auto t2 = Clock::now();
    std::fprintf(stderr, "rank %d: shrink %.0f ms, destroy of the retired world %.0f ms\n", rank,
                 std::chrono::duration<double, std::milli>(t1 - t0).count(),
                 std::chrono::duration<double, std::milli>(t2 - t1).count());
    MWT_REQUIRE(t2 - t0 < 15s);
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    float in[2] = {1, 2}, out[2] = {};
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_allreduce_async(next, in, out, 2, MW_FLOAT32, MW_SUM, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    ++stage->resized;
    MWT_REQUIRE(mwtest::eventually([&] { return stage->resized.load() == 2; }, 30s));
    MWT_CHECK(mw_world_destroy(next));
    // The context goes without waiting for the parent's free either.
    mw_context_free(ctx);
    return 0;
  };
  survivors.add([&] { return member(0); });
  survivors.add([&] { return member(1); });
  mwtest::Workers doomed;
  const pid_t victim = doomed.add([&] { return member(2); });
  ASSERT_TRUE(mwtest::eventually([&] { return stage->formed.load() == 3; }, 60s));
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_TRUE(survivors.join(120s));
}

// Two members grow to three; the newcomer creates the world with the new
// size: everyone's communicator comes from the plugin's ncclCommGrow.
TEST_F(NcclDouble, AGrowJoinsTheNewcomerThroughNcclCommGrow) {
  mwlab::Shared<ResizeStage> stage;
  std::vector<pid_t> pids;
  mwtest::Workers workers;
  for (int rank = 0; rank < 3; ++rank) {
    pids.push_back(workers.add([&, rank] {
      mw_context_t* ctx = mwtest::newContext(redis_.url());
      MWT_REQUIRE(ctx);
      mw_world_t* w = nullptr;
      if (rank < 2) {
        MWT_CHECK(mw_world_create(ctx, "duo", rank, 2, MW_BACKEND_NCCL, 0, kCreateMs, &w));
        ++stage->formed;
        mw_world_t* next = nullptr;
        MWT_CHECK(mw_world_grow(w, 3, kCreateMs, &next));
        MWT_CHECK(mw_world_destroy(w));
        w = next;
      } else {
        MWT_REQUIRE(mwtest::eventually([&] { return stage->formed.load() == 2; }, 60s));
        MWT_CHECK(mw_world_create(ctx, "duo", 2, 3, MW_BACKEND_NCCL, 0, kCreateMs, &w));
      }
      MWT_REQUIRE(mw_world_size(w) == 3 && mw_world_rank(w) == rank);
      float in[2] = {1, 2}, out[2] = {};
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_allreduce_async(w, in, out, 2, MW_FLOAT32, MW_SUM, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
      ++stage->done;
      MWT_REQUIRE(mwtest::eventually([&] { return stage->done.load() == 3; }, 30s));
      MWT_CHECK(mw_world_destroy(w));
      mw_context_free(ctx);
      return 0;
    }));
  }
  ASSERT_TRUE(workers.join(120s));
  for (pid_t pid : pids) EXPECT_EQ(countOf(stepsOf(log_, pid), "grow"), 1) << "pid " << pid;
}
