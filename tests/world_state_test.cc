// A world's lifecycles, the handle's (core/world_state.h) and a UCX
// world's (core/backends/ucx/ucx_world_state.h): exactly the moves of a
// world's life are allowed, and a refused one changes nothing.
#include "core/backends/ucx/ucx_world_state.h"
#include "core/world_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace {

using mw::UcxWorldState;

constexpr UcxWorldState kAll[] = {UcxWorldState::Connecting, UcxWorldState::Running, UcxWorldState::Failing,
                                  UcxWorldState::Aborted,    UcxWorldState::Stopping, UcxWorldState::Closed,
                                  UcxWorldState::Retired};

const std::set<std::pair<UcxWorldState, UcxWorldState>> kAllowed = {
    {UcxWorldState::Connecting, UcxWorldState::Running},  // it started
    {UcxWorldState::Connecting, UcxWorldState::Closed},   // its rendezvous failed
    {UcxWorldState::Running, UcxWorldState::Failing},     // a transfer failed; the break is on its way
    {UcxWorldState::Running, UcxWorldState::Aborted},     // broken, or destroyed
    {UcxWorldState::Failing, UcxWorldState::Aborted},     // the break came
    {UcxWorldState::Aborted, UcxWorldState::Stopping},    // destroyed
    {UcxWorldState::Stopping, UcxWorldState::Closed},     // its bounded wait ended
    {UcxWorldState::Running, UcxWorldState::Retired},     // shrunk or grown while ready
    {UcxWorldState::Failing, UcxWorldState::Retired},     // shrunk as its break came
    {UcxWorldState::Aborted, UcxWorldState::Retired},     // shrunk after a break
};

TEST(UcxWorldState, OnlyTheWorldsLifeIsAllowed) {
  for (UcxWorldState from : kAll) {
    for (UcxWorldState to : kAll) {
      UcxWorldState s = from;
      const bool allowed = kAllowed.count({from, to}) == 1;
      EXPECT_EQ(mw::worldTransition(s, to), allowed) << mw::worldStateName(from) << " -> " << mw::worldStateName(to);
      EXPECT_EQ(s, allowed ? to : from) << mw::worldStateName(from) << " -> " << mw::worldStateName(to);
    }
  }
}

using mw::WorldState;

constexpr WorldState kHandleStates[] = {WorldState::Ready, WorldState::Broken, WorldState::Destroyed,
                                        WorldState::Retired};

const std::set<std::pair<WorldState, WorldState>> kHandleMoves = {
    {WorldState::Ready, WorldState::Broken},       // a member failed
    {WorldState::Ready, WorldState::Destroyed},    // mw_world_destroy
    {WorldState::Broken, WorldState::Destroyed},   // mw_world_destroy after the break
    {WorldState::Ready, WorldState::Retired},      // shrunk or grown
    {WorldState::Broken, WorldState::Retired},     // shrunk after its break
    {WorldState::Retired, WorldState::Destroyed},  // the retired handle freed
};

TEST(WorldState, OnlyTheHandlesLifeIsAllowed) {
  for (WorldState from : kHandleStates) {
    for (WorldState to : kHandleStates) {
      WorldState s = from;
      const bool allowed = kHandleMoves.count({from, to}) == 1;
      EXPECT_EQ(mw::worldTransition(s, to), allowed) << mw::worldStateName(from) << " -> " << mw::worldStateName(to);
      EXPECT_EQ(s, allowed ? to : from) << mw::worldStateName(from) << " -> " << mw::worldStateName(to);
    }
  }
}

}  // namespace
