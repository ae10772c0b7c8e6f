#include "core/timer_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = mw::TimerQueue::Clock;

TEST(TimerQueue, FiresWhatIsDueInOrderAndSaysWhenTheNextIsDue) {
  mw::TimerQueue q;
  const Clock::time_point t0 = Clock::now();
  std::vector<int> fired;
  q.add(t0 + 30ms, [&] { fired.push_back(3); });
  q.add(t0 + 10ms, [&] { fired.push_back(1); });
  q.add(t0 + 20ms, [&] { fired.push_back(2); });
  EXPECT_EQ(q.next(), t0 + 10ms);
  q.fireDue(t0 + 5ms);
  EXPECT_TRUE(fired.empty());
  q.fireDue(t0 + 20ms);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(q.next(), t0 + 30ms);
  q.fireDue(t0 + 1s);
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next(), Clock::time_point::max());
}

TEST(TimerQueue, CancelledTimersNeverFireAndCancellingTwiceDoesNothing) {
  mw::TimerQueue q;
  const Clock::time_point t0 = Clock::now();
  int fired = 0;
  const mw::TimerQueue::Id a = q.add(t0, [&] { ++fired; });
  const mw::TimerQueue::Id b = q.add(t0, [&] { fired += 10; });
  EXPECT_NE(a, b);
  q.cancel(a);
  q.cancel(a);
  q.fireDue(t0);
  EXPECT_EQ(fired, 10);
  q.cancel(b);  // fired already
  EXPECT_TRUE(q.empty());
}

TEST(TimerQueue, ATimerMayAddAndCancelOthersWhileFiring) {
  mw::TimerQueue q;
  const Clock::time_point t0 = Clock::now();
  std::vector<int> fired;
  mw::TimerQueue::Id later = 0;
  q.add(t0, [&] {
    fired.push_back(1);
    q.cancel(later);
    q.add(t0, [&] { fired.push_back(2); });             // due now: fires in this call
    q.add(t0 + 1s, [&] { fired.push_back(3); });        // not yet
  });
  later = q.add(t0 + 1ms, [&] { fired.push_back(99); });
  q.fireDue(t0 + 1ms);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(q.next(), t0 + 1s);
}

}  // namespace
