// The NCCL worlds' poller and aborter, on a scripted plugin: the order in
// which operations complete, op_timeout_ms, abort, forget, a member's
// departure, a waiter's bounded spin, the one thread, that nothing is
// queried while nothing is outstanding, and finalize or abort. What NCCL
// and CUDA do is tested on a GPU (nccl_test, nccl_ops_test).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/backends/nccl/nccl_aborter.h"
#include "core/backends/nccl/nccl_poller.h"
#include "core/completion_queue.h"
#include "core/readiness.h"
#include "core/request.h"
#include "tests/support/process.h"

namespace mw {
namespace {

using namespace std::chrono_literals;
constexpr auto kNoDeadline = std::chrono::steady_clock::time_point::max();

// An operation as the scripted plugin sees it: the test sets its state.
struct mwn_op_fake {
  std::atomic<int> state{MWN_PENDING};
  std::atomic<bool> freed{false};
};

std::atomic<int> g_queries{0};
std::atomic<int> g_aborts{0};
std::atomic<int> g_frees{0};
std::atomic<int> g_abort_ms{0};  // how long comm_abort takes

int fakeQuery(mwn_op* op, char* err, size_t len) {
  ++g_queries;
  auto* f = reinterpret_cast<mwn_op_fake*>(op);
  const int st = f->state.load();
  if (st != MWN_OK && st != MWN_PENDING) std::snprintf(err, len, "scripted failure %d", st);
  return st;
}
void fakeOpFree(mwn_op* op) { reinterpret_cast<mwn_op_fake*>(op)->freed = true; }
void fakeAbort(mwn_comm*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(g_abort_ms.load()));
  ++g_aborts;
}
void fakeFree(mwn_comm*) { ++g_frees; }
std::atomic<int> g_finalizes{0};
std::atomic<int> g_finalize_result{MWN_OK};
int fakeFinalize(mwn_comm*, int, char* err, size_t len) {
  ++g_finalizes;
  std::snprintf(err, len, "scripted finalization");
  return g_finalize_result.load();
}

mwn_plugin scripted() {
  mwn_plugin p{};
  p.abi = MW_NCCL_PLUGIN_ABI;
  p.op_query = fakeQuery;
  p.op_free = fakeOpFree;
  p.comm_abort = fakeAbort;
  p.comm_free = fakeFree;
  p.comm_finalize = fakeFinalize;
  return p;
}
const mwn_plugin kPlugin = scripted();

class Owner : public NcclOpOwner {
 public:
  OpResult failure() const override { return {Status::WorldBroken, "scripted world is broken"}; }
  void operationFailed(const std::string& why, BreakCause, Clock::time_point) noexcept override {
    std::lock_guard<std::mutex> lock(m);
    failures.push_back(why);
  }
  std::vector<std::string> failed() {
    std::lock_guard<std::mutex> lock(m);
    return failures;
  }
  std::mutex m;
  std::vector<std::string> failures;
};

struct Issued {
  std::unique_ptr<mwn_op_fake> op = std::make_unique<mwn_op_fake>();
  std::shared_ptr<Request> request;
};

class NcclPollerTest : public ::testing::Test {
 protected:
  Issued issue(NcclPoller& p, NcclOpOwner& owner, std::chrono::milliseconds op_timeout = 0ms) {
    Issued i;
    Request* r = Request::create(nullptr, cq_);
    i.request = r->shared_from_this();
    r->release();
    p.watch(&owner, i.request, reinterpret_cast<mwn_op*>(i.op.get()), op_timeout);
    return i;
  }
  std::shared_ptr<CompletionQueue> cq_ = std::make_shared<CompletionQueue>(std::make_shared<Readiness>());
};

// How long a test waits for what the poller's thread does.
constexpr auto kWithin = 5s;

int pollerThreads() { return mwtest::threadsByName()[NcclPoller::kThreadName]; }

TEST_F(NcclPollerTest, CompletesInStreamOrderAndFreesEveryOperation) {
  NcclPoller poller(kPlugin, 20us);
  Owner owner;
  Issued a = issue(poller, owner), b = issue(poller, owner), c = issue(poller, owner);
  // A later operation that reports done first is still completed after the
  // one before it: one stream finishes them in order.
  b.op->state = MWN_OK;
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(b.request->finished());
  a.op->state = MWN_OK;
  ASSERT_TRUE(mwtest::eventually([&] { return b.request->finished(); }, kWithin));
  EXPECT_EQ(a.request->test(), Status::Ok);
  EXPECT_EQ(b.request->test(), Status::Ok);
  EXPECT_FALSE(c.request->finished());
  c.op->state = MWN_ERR_ARGUMENT;  // NCCL refused the sizes: the caller's fault, no break
  ASSERT_TRUE(mwtest::eventually([&] { return c.request->finished(); }, kWithin));
  EXPECT_EQ(c.request->test(), Status::InvalidArgument);
  EXPECT_NE(c.request->detail().find("scripted failure"), std::string::npos);
  EXPECT_TRUE(a.op->freed && b.op->freed && c.op->freed);
  EXPECT_TRUE(owner.failed().empty());
  poller.forget(&owner);
}

TEST_F(NcclPollerTest, FailureBreaksTheOwnerAndAbortFailsWhatIsWatched) {
  NcclPoller poller(kPlugin, 20us);
  Owner owner, other;
  Issued a = issue(poller, owner), b = issue(poller, owner), o = issue(poller, other);
  a.op->state = MWN_ERR_TRANSPORT;
  ASSERT_TRUE(mwtest::eventually([&] { return !owner.failed().empty(); }, kWithin));
  EXPECT_NE(owner.failed()[0].find("scripted failure"), std::string::npos);
  EXPECT_FALSE(a.request->finished());  // the break decides what it fails with
  poller.abort(&owner);
  ASSERT_TRUE(mwtest::eventually([&] { return a.request->finished() && b.request->finished(); }, kWithin));
  EXPECT_EQ(a.request->test(), Status::WorldBroken);
  EXPECT_EQ(b.request->test(), Status::WorldBroken);
  EXPECT_NE(b.request->detail().find("scripted world is broken"), std::string::npos);
  // Watched after the abort: fails at once.
  Issued late = issue(poller, owner);
  ASSERT_TRUE(mwtest::eventually([&] { return late.request->finished(); }, kWithin));
  EXPECT_EQ(late.request->test(), Status::WorldBroken);
  EXPECT_TRUE(late.op->freed);
  // The other owner's operation is untouched.
  EXPECT_FALSE(o.request->finished());
  EXPECT_TRUE(other.failed().empty());
  o.op->state = MWN_OK;
  ASSERT_TRUE(mwtest::eventually([&] { return o.request->finished(); }, kWithin));
  EXPECT_EQ(o.request->test(), Status::Ok);
  poller.forget(&owner);
  poller.forget(&other);
}

TEST_F(NcclPollerTest, AnOperationPastOpTimeoutBreaksTheOwnerNamingTheLimit) {
  NcclPoller poller(kPlugin, 20us);
  Owner owner;
  const auto start = std::chrono::steady_clock::now();
  Issued a = issue(poller, owner, 100ms);
  ASSERT_TRUE(mwtest::eventually([&] { return !owner.failed().empty(); }, kWithin));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 2000ms);
  EXPECT_NE(owner.failed()[0].find("op_timeout_ms=100"), std::string::npos) << owner.failed()[0];
  poller.forget(&owner);
  EXPECT_EQ(a.request->test(), Status::WorldBroken);
  EXPECT_TRUE(a.op->freed);
}

TEST_F(NcclPollerTest, AfterADepartureWhatFinishesCompletesAndWhatStallsBreaks) {
  NcclPoller poller(kPlugin, 20us);
  Owner owner;
  Issued a = issue(poller, owner), b = issue(poller, owner);
  poller.drain(&owner, 200ms, "scripted stall after a departure");
  std::this_thread::sleep_for(120ms);
  const auto finished_a = std::chrono::steady_clock::now();
  a.op->state = MWN_OK;  // finishes within the grace, and restarts it
  ASSERT_TRUE(mwtest::eventually([&] { return a.request->finished(); }, kWithin));
  EXPECT_EQ(a.request->test(), Status::Ok);
  std::this_thread::sleep_for(120ms);
  EXPECT_TRUE(owner.failed().empty()) << "the grace did not restart when an operation finished";
  ASSERT_TRUE(mwtest::eventually([&] { return !owner.failed().empty(); }, kWithin));
  EXPECT_GE(std::chrono::steady_clock::now() - finished_a, 200ms);
  EXPECT_EQ(owner.failed()[0], "scripted stall after a departure");
  EXPECT_FALSE(b.request->finished());  // the break decides what it fails with
  poller.forget(&owner);
  EXPECT_EQ(b.request->test(), Status::WorldBroken);
}

TEST_F(NcclPollerTest, ForgetFailsWhatIsLeftAndNothingIsQueriedWhileIdle) {
  NcclPoller poller(kPlugin, 20us);
  Owner owner;
  Issued a = issue(poller, owner);
  ASSERT_TRUE(mwtest::eventually([&] { return g_queries.load() > 0; }, kWithin));
  poller.forget(&owner);
  EXPECT_TRUE(a.request->finished());
  EXPECT_TRUE(a.op->freed);
  const int before = g_queries.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(g_queries.load(), before) << "the poller queried with nothing outstanding";
}

TEST_F(NcclPollerTest, OneThreadForAnyNumberOfOwners) {
  const int before = pollerThreads();
  {
    NcclPoller poller(kPlugin, 20us);
    std::vector<std::unique_ptr<Owner>> owners;
    std::vector<Issued> issued;
    for (int i = 0; i < 16; ++i) {
      owners.push_back(std::make_unique<Owner>());
      issued.push_back(issue(poller, *owners.back()));
    }
    EXPECT_TRUE(mwtest::eventually([&] { return pollerThreads() == before + 1; }, kWithin));
    for (auto& i : issued) i.op->state = MWN_OK;
    EXPECT_TRUE(mwtest::eventually([&] {
      for (auto& i : issued) {
        if (!i.request->finished()) return false;
      }
      return true;
    }, kWithin));
    for (auto& o : owners) poller.forget(o.get());
  }
  EXPECT_EQ(pollerThreads(), before);
}

TEST_F(NcclPollerTest, AWaiterSpinsBoundedAndSeesACompletionWhileItSpins) {
  NcclPoller poller(kPlugin, 200ms);
  Owner owner;
  Issued a = issue(poller, owner);
  EXPECT_TRUE(poller.spinUntil([] { return true; }, kNoDeadline));
  // Nothing finishes: the spin ends, bounded.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(poller.spinUntil([&] { return a.request->finished(); }, kNoDeadline));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  // The operation finishes during a spin: the waiter sees it in that spin.
  std::thread finisher([&] {
    std::this_thread::sleep_for(20ms);
    a.op->state = MWN_OK;
  });
  EXPECT_TRUE(poller.spinUntil([&] { return a.request->finished(); }, kNoDeadline));
  finisher.join();
  EXPECT_EQ(a.request->test(), Status::Ok);
  NcclPoller never_spins(kPlugin, 0us);
  EXPECT_FALSE(never_spins.spinUntil([] { return false; }, kNoDeadline));
  poller.forget(&owner);
}

TEST(NcclAborter, ReleaseFreesAfterTheAbortOrLeavesItToTheThread) {
  g_abort_ms = 0;
  const int aborts = g_aborts.load(), frees = g_frees.load();
  NcclAborter aborter(kPlugin);
  auto quick = aborter.abort(nullptr);
  EXPECT_TRUE(aborter.release(quick, 5000ms));
  EXPECT_EQ(g_aborts.load(), aborts + 1);
  EXPECT_EQ(g_frees.load(), frees + 1);
  // An abort that outlasts the grace: the thread frees once it returns.
  g_abort_ms = 300;
  auto slow = aborter.abort(nullptr);
  EXPECT_FALSE(aborter.release(slow, 20ms));
  EXPECT_EQ(g_frees.load(), frees + 1);
  EXPECT_TRUE(mwtest::eventually([&] { return g_frees.load() == frees + 2; }, kWithin));
  EXPECT_EQ(g_aborts.load(), aborts + 2);
  g_abort_ms = 0;
}

TEST(NcclAborter, FinalizeAbortsOnlyWhenTheFlushFails) {
  g_abort_ms = 0;
  NcclAborter aborter(kPlugin);
  const int aborts = g_aborts.load(), finalizes = g_finalizes.load(), frees = g_frees.load();
  g_finalize_result = MWN_OK;
  EXPECT_TRUE(aborter.release(aborter.finalize(nullptr, 100ms), 5000ms));
  EXPECT_EQ(g_finalizes.load(), finalizes + 1);
  EXPECT_EQ(g_aborts.load(), aborts);
  g_finalize_result = MWN_PENDING;  // not flushed in time
  EXPECT_TRUE(aborter.release(aborter.finalize(nullptr, 100ms), 5000ms));
  EXPECT_EQ(g_finalizes.load(), finalizes + 2);
  EXPECT_EQ(g_aborts.load(), aborts + 1);
  EXPECT_EQ(g_frees.load(), frees + 2);
  g_finalize_result = MWN_OK;
}

}  // namespace
}  // namespace mw
