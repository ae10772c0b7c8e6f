// What a shrink or grow makes of a world (core/resize/resize_plan.h), from
// its arguments alone: every bad input refused naming the value, survivors
// renumbered from 0 in their order, and the rank lists members compare
// through Redis read back only in the form they are written.
#include "core/resize/resize_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace {

// The message of the Error(InvalidArgument) `f` throws; "" when it throws
// nothing or something else.
template <typename F>
std::string refusal(F f) {
  try {
    f();
  } catch (const mw::Error& e) {
    return e.status() == mw::Status::InvalidArgument ? e.what() : "";
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ResizePlan, AnExcludeListIsCheckedNamingTheBadValue) {
  const int twice[] = {1, 1}, out[] = {4}, negative[] = {-1}, self[] = {2}, all_but_self[] = {0, 1, 3};
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(twice, -1, 4, 2); }), "n -1"));
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(nullptr, 2, 4, 2); }), "NULL"));
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(twice, 2, 4, 2); }), "exclude[1] = 1 is listed twice"));
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(out, 1, 4, 2); }), "exclude[0] = 4 is outside [0, 4)"));
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(negative, 1, 4, 2); }), "= -1"));
  EXPECT_TRUE(has(refusal([&] { mw::checkedExcludeList(self, 1, 4, 2); }), "own rank"));
  // Every other member is fine: the caller stays.
  EXPECT_EQ(mw::checkedExcludeList(all_but_self, 3, 4, 2), (std::vector<int>{0, 1, 3}));
  const int unsorted[] = {3, 0};
  EXPECT_EQ(mw::checkedExcludeList(unsorted, 2, 4, 1), (std::vector<int>{0, 3}));
  EXPECT_TRUE(mw::checkedExcludeList(nullptr, 0, 4, 1).empty());
}

TEST(ResizePlan, SurvivorsKeepTheirOrderRenumberedFromZero) {
  const mw::ResizePlan p = mw::shrinkPlan(5, 3, {1, 2});
  EXPECT_EQ(p.kind, mw::ResizeKind::Shrink);
  EXPECT_EQ(p.new_size, 3);
  EXPECT_EQ(p.new_rank, 1);
  EXPECT_EQ(p.new_rank_of, (std::vector<int>{0, -1, -1, 1, 2}));
  EXPECT_TRUE(p.kept(0) && !p.kept(1) && !p.kept(2) && p.kept(4) && !p.kept(5) && !p.kept(-1));
  EXPECT_EQ(p.oldRankOf(2), 4);
  EXPECT_EQ(p.oldRankOf(3), -1);
  // A member the agreed list excludes has no new rank.
  EXPECT_EQ(mw::shrinkPlan(5, 2, {1, 2}).new_rank, -1);
}

TEST(ResizePlan, AGrowKeepsEveryRankAndChecksTheNewSize) {
  const mw::ResizePlan p = mw::growPlan(3, 2, 5, 8);
  EXPECT_EQ(p.kind, mw::ResizeKind::Grow);
  EXPECT_EQ(p.new_size, 5);
  EXPECT_EQ(p.new_rank, 2);
  EXPECT_EQ(p.oldRankOf(1), 1);
  EXPECT_EQ(p.oldRankOf(4), -1);  // a newcomer
  EXPECT_TRUE(has(refusal([] { mw::growPlan(3, 0, 3, 8); }), "new_size 3 must be above the world's size 3"));
  EXPECT_TRUE(has(refusal([] { mw::growPlan(3, 0, 2, 8); }), "new_size 2"));
  EXPECT_TRUE(has(refusal([] { mw::growPlan(3, 0, 9, 8); }), "new_size 9 exceeds max_world_size 8"));
}

TEST(ResizePlan, RankListsReadBackOnlyInTheFormTheyAreWritten) {
  EXPECT_EQ(mw::encodeRanks({1, 3, 10}), "1,3,10");
  EXPECT_EQ(mw::describeRanks({1, 3}), "[1, 3]");
  EXPECT_EQ(mw::decodeRanks("1,3,10", 11), (std::vector<int>{1, 3, 10}));
  EXPECT_EQ(mw::decodeRanks("", 4), std::vector<int>{});
  EXPECT_EQ(mw::decodeRanks("0", 4), std::vector<int>{0});
  for (const char* bad : {"3,1", "1,1", "1,,2", ",1", "1,", "4", "058", "00", "1, 2", "-1", "1e3", "99999999999"}) {
    EXPECT_FALSE(mw::decodeRanks(bad, 4)) << "'" << bad << "'";
  }
}

}  // namespace
