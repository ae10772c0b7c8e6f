// StallWatch alone: when a peer is asked, what its answer names, and when
// a stall breaks the world (core/liveness/stall_watch.h).
#include "core/liveness/stall_watch.h"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using mw::Clock;
using mw::StallWatch;

constexpr uint64_t kCollectives = 1;
constexpr uint64_t kSendsFrom = 2;

const Clock::time_point t0 = Clock::time_point{} + 100s;

TEST(StallWatch, APeerIsAskedOnceTheOperationWaitedTheReportTime) {
  StallWatch w({2000ms, 0ms});
  EXPECT_FALSE(w.nextDue());
  // A 4-member allreduce, the 7th collective, waits on ranks 1, 2 and 3.
  for (int peer : {1, 2, 3}) w.waiting({kCollectives, 7}, peer, t0);
  EXPECT_EQ(w.nextDue(), t0 + 2000ms);
  EXPECT_TRUE(w.due(t0 + 1999ms).empty());
  const auto asks = w.due(t0 + 2000ms);
  ASSERT_EQ(asks.size(), 3u);
  EXPECT_EQ(asks[0].peer, 1);
  EXPECT_EQ(asks[0].stream, kCollectives);
  // Not again until another report time has passed.
  EXPECT_TRUE(w.due(t0 + 3000ms).empty());
  EXPECT_EQ(w.nextDue(), t0 + 4000ms);
  EXPECT_EQ(w.due(t0 + 4000ms).size(), 3u);
}

TEST(StallWatch, ThePeerThatHasNotPostedIsNamedOnce) {
  StallWatch w({2000ms, 0ms});
  for (int peer : {1, 2, 3}) w.waiting({kCollectives, 7}, peer, t0);
  w.due(t0 + 2000ms);
  // Ranks 1 and 2 posted the 7th collective and wait too; rank 3 is at 6.
  EXPECT_FALSE(w.answered(1, kCollectives, 7, t0 + 2001ms));
  EXPECT_FALSE(w.answered(2, kCollectives, 9, t0 + 2001ms));
  const auto s = w.answered(3, kCollectives, 6, t0 + 2002ms);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->peer, 3);
  EXPECT_EQ(s->waiting.stream, kCollectives);
  EXPECT_EQ(s->waiting.position, 7u);
  EXPECT_EQ(s->peer_posted, 6u);
  EXPECT_EQ(s->waited, 2002ms);
  EXPECT_FALSE(s->timed_out);
  // Asked again, it is still behind: named once per operation.
  w.due(t0 + 4002ms);
  EXPECT_FALSE(w.answered(3, kCollectives, 6, t0 + 4003ms));
  // The next operation that waits on it is named again.
  w.done({kCollectives, 7}, 3);
  w.waiting({kCollectives, 8}, 3, t0 + 5000ms);
  w.due(t0 + 7000ms);
  ASSERT_TRUE(w.answered(3, kCollectives, 7, t0 + 7001ms));
}

TEST(StallWatch, AReceiveWaitsOnItsSenderAlone) {
  StallWatch w({2000ms, 0ms});
  // The 3rd receive from rank 2 (its 3rd send to this member).
  w.waiting({kSendsFrom, 3}, 2, t0);
  const auto asks = w.due(t0 + 2500ms);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].peer, 2);
  EXPECT_EQ(asks[0].stream, kSendsFrom);
  const auto s = w.answered(2, kSendsFrom, 2, t0 + 2500ms);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->waiting.position, 3u);
  // An answer about a stream nothing waits on says nothing.
  EXPECT_FALSE(w.answered(2, kCollectives, 0, t0 + 2500ms));
  EXPECT_FALSE(w.answered(5, kSendsFrom, 0, t0 + 2500ms));
}

TEST(StallWatch, OnlyTheOldestOperationOfAStreamIsAskedAbout) {
  StallWatch w({2000ms, 0ms});
  w.waiting({kSendsFrom, 3}, 2, t0);
  w.waiting({kSendsFrom, 4}, 2, t0 + 10ms);
  w.waiting({kSendsFrom, 5}, 2, t0 + 20ms);
  EXPECT_EQ(w.due(t0 + 3000ms).size(), 1u);
  const auto s = w.answered(2, kSendsFrom, 0, t0 + 3000ms);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->waiting.position, 3u);
  // The later ones wait on the oldest; nothing comes due before the next
  // ask about it.
  EXPECT_EQ(w.nextDue(), t0 + 5000ms);
}

TEST(StallWatch, AnOperationThatCompletedIsNotAskedAbout) {
  StallWatch w({2000ms, 0ms});
  w.waiting({kCollectives, 1}, 1, t0);
  w.done({kCollectives, 1}, 1);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(w.due(t0 + 10s).empty());
  // An answer that comes after the part did.
  w.waiting({kCollectives, 2}, 1, t0);
  w.due(t0 + 2s);
  w.done({kCollectives, 2}, 1);
  EXPECT_FALSE(w.answered(1, kCollectives, 1, t0 + 2s));
}

TEST(StallWatch, APeerThatLeftIsForgotten) {
  StallWatch w({2000ms, 0ms});
  w.waiting({kCollectives, 1}, 1, t0);
  w.waiting({kSendsFrom, 1}, 1, t0);
  w.waiting({kCollectives, 1}, 2, t0);
  w.forget(1);
  const auto asks = w.due(t0 + 2s);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].peer, 2);
}

TEST(StallWatch, TheTimeoutBlamesThePeerThatIsBehind) {
  StallWatch w({2000ms, 5000ms});
  w.waiting({kCollectives, 3}, 1, t0);
  w.waiting({kCollectives, 3}, 2, t0);
  w.due(t0 + 2s);
  EXPECT_FALSE(w.answered(1, kCollectives, 3, t0 + 2s));
  ASSERT_TRUE(w.answered(2, kCollectives, 2, t0 + 2s));
  EXPECT_EQ(w.nextDue(), t0 + 4s);
  EXPECT_FALSE(w.timedOut(t0 + 4999ms));
  const auto s = w.timedOut(t0 + 5s);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->timed_out);
  EXPECT_EQ(s->peer, 2);
  EXPECT_FALSE(w.timedOut(t0 + 6s)) << "once";
}

TEST(StallWatch, APeerThatCaughtUpIsNotBlamedByTheTimeout) {
  StallWatch w({2000ms, 5000ms});
  w.waiting({kCollectives, 3}, 2, t0);
  w.due(t0 + 2s);
  ASSERT_TRUE(w.answered(2, kCollectives, 2, t0 + 2s));
  w.due(t0 + 4s);
  // It posted since: the data is on its way, or it waits on another.
  EXPECT_FALSE(w.answered(2, kCollectives, 3, t0 + 4s));
  EXPECT_FALSE(w.timedOut(t0 + 6s));
}

TEST(StallWatch, AnAnswerPastTheTimeoutBreaksAtOnce) {
  StallWatch w({0ms, 3000ms});
  w.waiting({kCollectives, 3}, 2, t0);
  // Reports off: the peer is asked at the timeout, and the answer breaks.
  EXPECT_TRUE(w.due(t0 + 2999ms).empty());
  ASSERT_EQ(w.due(t0 + 3s).size(), 1u);
  const auto s = w.answered(2, kCollectives, 1, t0 + 3001ms);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->timed_out);
}

TEST(StallWatch, BothOffWatchesNothing) {
  StallWatch w({0ms, 0ms});
  w.waiting({kCollectives, 3}, 2, t0);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(w.due(t0 + 1000s).empty());
  EXPECT_FALSE(w.nextDue());
}

}  // namespace
