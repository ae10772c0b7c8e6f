// Completion order of a self-driven backend (core/ordered_completions.h),
// without a transport: issue order per lane, and nothing delivered past an
// operation that failed with the world's failure.
#include "core/ordered_completions.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/completion_queue.h"
#include "core/readiness.h"
#include "core/request.h"

namespace mw {
namespace {

class OrderedCompletionsTest : public ::testing::Test {
 protected:
  ~OrderedCompletionsTest() override {
    for (Request* r : requests_) r->release();
  }

  // A request in `lane`, with its ticket.
  std::pair<Request*, OrderedCompletions::Ticket> issue(int lane) {
    Request* r = Request::create(nullptr, cq_);
    requests_.push_back(r);
    return {r, order_.enqueue(lane, r->shared_from_this())};
  }

  std::shared_ptr<CompletionQueue> cq_ = std::make_shared<CompletionQueue>(std::make_shared<Readiness>());
  OrderedCompletions order_;
  std::vector<Request*> requests_;
};

const OpResult kBroken{Status::WorldBroken, "world 'w' is broken: rank 1 is unreachable"};

TEST_F(OrderedCompletionsTest, ALaneCompletesInIssueOrder) {
  auto [a, ta] = issue(1);
  auto [b, tb] = issue(1);
  auto [c, tc] = issue(OrderedCompletions::kMainLane);
  order_.finish(1, tb, {});
  EXPECT_EQ(b->test(), Status::InProgress) << "the later one waits for the earlier";
  order_.finish(OrderedCompletions::kMainLane, tc, {});
  EXPECT_EQ(c->test(), Status::Ok) << "another lane does not wait";
  order_.finish(1, ta, {});
  EXPECT_EQ(a->test(), Status::Ok);
  EXPECT_EQ(b->test(), Status::Ok);
}

// The soak's loss: a message behind a withdrawn loan was delivered.
TEST_F(OrderedCompletionsTest, NothingOfALaneIsDeliveredPastABrokenOne) {
  auto [a, ta] = issue(1);
  auto [b, tb] = issue(1);
  auto [c, tc] = issue(1);
  order_.finish(1, tb, {});  // its data came in ahead of the first's
  order_.finish(1, ta, kBroken);
  EXPECT_EQ(a->test(), Status::WorldBroken);
  EXPECT_EQ(b->test(), Status::WorldBroken) << "ended with its data in, behind a lost one";
  EXPECT_EQ(b->detail(), kBroken.detail);
  order_.finish(1, tc, {});
  EXPECT_EQ(c->test(), Status::WorldBroken) << "ended after the lost one";
  auto [d, td] = issue(1);
  order_.finish(1, td, {});
  EXPECT_EQ(d->test(), Status::WorldBroken) << "issued after the lost one";
}

TEST_F(OrderedCompletionsTest, ABrokenLaneLeavesTheOthersAlone) {
  auto [a, ta] = issue(1);
  auto [b, tb] = issue(2);
  auto [c, tc] = issue(OrderedCompletions::kMainLane);
  order_.finish(1, ta, kBroken);
  order_.finish(2, tb, {});
  order_.finish(OrderedCompletions::kMainLane, tc, {});
  EXPECT_EQ(a->test(), Status::WorldBroken);
  EXPECT_EQ(b->test(), Status::Ok);
  EXPECT_EQ(c->test(), Status::Ok);
}

// A destroyed world's pending operations end Cancelled: one behind them
// whose data went out meanwhile is pending too.
TEST_F(OrderedCompletionsTest, ADestroyedWorldsLaterOperationsAreCancelledWithTheFirst) {
  auto [a, ta] = issue(OrderedCompletions::kMainLane);
  auto [b, tb] = issue(OrderedCompletions::kMainLane);
  order_.finish(OrderedCompletions::kMainLane, tb, {});
  order_.finish(OrderedCompletions::kMainLane, ta, {Status::Cancelled, "world 'w' was destroyed"});
  EXPECT_EQ(a->test(), Status::Cancelled);
  EXPECT_EQ(b->test(), Status::Cancelled);
}

// A receive taken back (mw_request_cancel) loses nothing: the lane goes on.
TEST_F(OrderedCompletionsTest, ATakenBackReceiveDoesNotStopItsLane) {
  auto [a, ta] = issue(1);
  auto [b, tb] = issue(1);
  order_.finishOutOfOrder(1, tb, {Status::Cancelled, "the receive was cancelled before a message matched it"});
  EXPECT_EQ(b->test(), Status::Cancelled);
  EXPECT_EQ(a->test(), Status::InProgress);
  order_.finish(1, ta, {});
  EXPECT_EQ(a->test(), Status::Ok);
  auto [c, tc] = issue(1);
  order_.finish(1, tc, {});
  EXPECT_EQ(c->test(), Status::Ok);
}

// A receive that failed for its own sake (a message larger than it) is
// not a lost message: the ones behind it are delivered.
TEST_F(OrderedCompletionsTest, AReceiveThatDidNotFitDoesNotStopItsLane) {
  auto [a, ta] = issue(1);
  auto [b, tb] = issue(1);
  order_.finish(1, ta, {Status::InvalidArgument, "recv of 8 bytes from rank 1 matched a send of 16 bytes"});
  order_.finish(1, tb, {});
  EXPECT_EQ(a->test(), Status::InvalidArgument);
  EXPECT_EQ(b->test(), Status::Ok);
}

}  // namespace
}  // namespace mw
