// judgeSlow alone (core/degraded/slow_member.h).
#include "core/degraded/slow_member.h"

#include <gtest/gtest.h>

namespace {

using mw::judgeSlow;

TEST(SlowMember, AMemberUnderTheRatioOfTheMedianIsSlow) {
  // Two rails of 1 each; member 2 lost one.
  EXPECT_EQ(judgeSlow({2, 2, 1, 2}, 0.8, -1), 2);
  EXPECT_EQ(judgeSlow({2, 2, 2, 2}, 0.8, -1), -1);
  // 0.625 of the others: rails at R/4 and R.
  EXPECT_EQ(judgeSlow({2, 1.25, 2, 2, 2, 2, 2, 2}, 0.8, -1), 1);
  EXPECT_EQ(judgeSlow({2, 1.7, 2, 2}, 0.8, -1), -1) << "0.85 of the median";
}

TEST(SlowMember, OfSeveralTheSlowest) {
  EXPECT_EQ(judgeSlow({2, 1.5, 1, 2, 2}, 0.8, -1), 2);
  EXPECT_EQ(judgeSlow({2, 1, 1.5, 2, 2}, 0.8, 2), 1) << "a slower one takes over";
}

TEST(SlowMember, AMemberStaysSlowUntilItIsClearlyBack) {
  EXPECT_EQ(judgeSlow({2, 2, 1.7, 2}, 0.8, 2), 2) << "0.85: under 0.9";
  EXPECT_EQ(judgeSlow({2, 2, 1.7, 2}, 0.8, -1), -1) << "but not slow anew";
  EXPECT_EQ(judgeSlow({2, 2, 1.85, 2}, 0.8, 2), -1) << "0.925: back";
}

TEST(SlowMember, UnmeasuredMembersAndSmallWorlds) {
  EXPECT_EQ(judgeSlow({2, 0, 1, 2}, 0.8, -1), 2) << "rank 1 not measured: out of the median";
  EXPECT_EQ(judgeSlow({2, 0, -1, 2}, 0.8, -1), -1);
  EXPECT_EQ(judgeSlow({2, 1}, 0.8, -1), -1) << "two members";
  EXPECT_EQ(judgeSlow({2, 1, 0}, 0.8, -1), -1) << "two measured";
  EXPECT_EQ(judgeSlow({}, 0.8, -1), -1);
}

}  // namespace
