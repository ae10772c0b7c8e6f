// The path state machine (core/backends/ucx/rails/ucx_path_state.h): exactly the
// transitions of a path's life are allowed, and a refused one changes
// nothing.
#include "core/backends/ucx/rails/ucx_path_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace {

using mw::PathState;

constexpr PathState kAll[] = {PathState::Seeking, PathState::Answering, PathState::Up, PathState::InDoubt};

const std::set<std::pair<PathState, PathState>> kAllowed = {
    {PathState::Seeking, PathState::Answering},  // the TCP probe connected
    {PathState::Answering, PathState::Seeking},  // the UCX probe went unanswered: start over
    {PathState::Answering, PathState::Up},       // the UCX probe answered
    {PathState::Up, PathState::Seeking},         // the path failed
    {PathState::Up, PathState::InDoubt},         // another path over its local address failed
    {PathState::InDoubt, PathState::Up},         // its probe answered
    {PathState::InDoubt, PathState::Seeking},    // it failed, or its probe went unanswered
};

TEST(PathState, OnlyThePathsLifeIsAllowed) {
  for (PathState from : kAll) {
    for (PathState to : kAll) {
      PathState s = from;
      const bool allowed = kAllowed.count({from, to}) == 1;
      EXPECT_EQ(mw::pathTransition(s, to), allowed) << mw::pathStateName(from) << " -> " << mw::pathStateName(to);
      EXPECT_EQ(s, allowed ? to : from) << mw::pathStateName(from) << " -> " << mw::pathStateName(to);
    }
  }
}

TEST(PathState, DownMeansNotYetAnswered) {
  EXPECT_TRUE(mw::pathIsDown(PathState::Seeking));
  EXPECT_TRUE(mw::pathIsDown(PathState::Answering));
  EXPECT_FALSE(mw::pathIsDown(PathState::Up));
  EXPECT_FALSE(mw::pathIsDown(PathState::InDoubt));
}

}  // namespace
