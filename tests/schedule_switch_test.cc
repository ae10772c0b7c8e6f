// The agreement on a world's degraded schedule, with no transport
// (core/degraded/schedule_switch.h): members never run one collective
// under two schedules, whatever order the messages and the collectives
// come in.
#include "core/degraded/schedule_switch.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

namespace {

using mw::SwitchCoordinator;
using mw::SwitchOutcome;
using mw::SwitchParticipant;
using mw::SwitchProposal;
using mw::SwitchVote;

TEST(ScheduleSwitch, EveryMemberYesCommitsFromTheProposedCollective) {
  SwitchCoordinator c(3);
  std::vector<SwitchParticipant> m{SwitchParticipant(0), SwitchParticipant(1), SwitchParticipant(2)};
  for (auto& p : m) p.started(4);
  const auto prop = c.propose(2, 4);
  ASSERT_TRUE(prop);
  EXPECT_EQ(prop->from, 5u);
  EXPECT_FALSE(c.propose(1, 4)) << "one out at a time";
  std::optional<SwitchCoordinator::Result> r;
  for (auto& p : m) {
    const SwitchVote v = p.onProposal(*prop);
    EXPECT_TRUE(v.yes);
    // Voted yes: collective 5 waits for the outcome.
    EXPECT_FALSE(p.scheduleFor(5));
    r = c.onVote(v);
  }
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->outcome.commit);
  EXPECT_FALSE(r->again);
  for (auto& p : m) {
    EXPECT_TRUE(p.onOutcome(r->outcome));
    EXPECT_EQ(p.scheduleFor(5)->slow, 2);
    EXPECT_EQ(p.scheduleFor(9)->slow, 2);
  }
}

TEST(ScheduleSwitch, AMemberAlreadyPastTheSwitchAbortsItAndTheNextProposalGoesPastIt) {
  SwitchCoordinator c(2);
  SwitchParticipant zero(0), one(1);
  zero.started(4);
  one.started(7);
  const auto prop = c.propose(1, 4);
  const SwitchVote v0 = zero.onProposal(*prop), v1 = one.onProposal(*prop);
  EXPECT_TRUE(v0.yes);
  EXPECT_FALSE(v1.yes);
  EXPECT_EQ(v1.started, 7u);
  EXPECT_FALSE(c.onVote(v0));
  const auto r = c.onVote(v1);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->outcome.commit);
  ASSERT_TRUE(r->again);
  EXPECT_EQ(r->again->from, 7 + SwitchCoordinator::kMargin + 1);
  EXPECT_EQ(r->again->slow, 1);
  // The abort releases rank 0's hold under the old schedule.
  EXPECT_FALSE(zero.scheduleFor(5));
  EXPECT_TRUE(zero.onOutcome(r->outcome));
  EXPECT_EQ(zero.scheduleFor(5)->slow, -1);
  EXPECT_FALSE(one.onOutcome(r->outcome)) << "it voted no: nothing to release";
}

TEST(ScheduleSwitch, StaleMessagesChangeNothing) {
  SwitchCoordinator c(2);
  SwitchParticipant p(1);
  const auto first = c.propose(1, 0);
  const SwitchVote v = p.onProposal(*first);
  EXPECT_FALSE(c.onVote(v)) << "rank 0 has not voted";
  EXPECT_FALSE(c.onVote(v)) << "a vote twice counts once";
  EXPECT_FALSE(c.onVote({first->id + 1, 0, true, 0})) << "another proposal's vote";
  EXPECT_FALSE(c.onVote({first->id, 2, true, 0})) << "no such member";
  EXPECT_FALSE(p.onOutcome({first->id + 1, true}));
  EXPECT_FALSE(p.onProposal(*first).yes) << "the same proposal again";
  EXPECT_FALSE(p.scheduleFor(1)) << "still held";
}

TEST(ScheduleSwitch, SwitchesBackAndCollectivesStartedLateKeepTheirSchedule) {
  SwitchParticipant p(0), q(1);
  // Two switches commit while p has not started collective 3 yet.
  p.started(2);
  q.started(2);
  SwitchCoordinator c(2);
  auto run = [&](int slow, uint64_t started) {
    auto prop = c.propose(slow, started);
    c.onVote(p.onProposal(*prop));
    auto r = c.onVote(q.onProposal(*prop));
    ASSERT_TRUE(r && r->outcome.commit);
    p.onOutcome(r->outcome);
    q.onOutcome(r->outcome);
  };
  run(1, 10);  // from 11
  for (uint64_t s = 3; s <= 20; ++s) q.started(s);
  run(-1, 20);  // from 21
  EXPECT_EQ(p.scheduleFor(3)->slow, -1);
  EXPECT_EQ(p.scheduleFor(11)->slow, 1);
  EXPECT_EQ(p.scheduleFor(21)->slow, -1);
  p.started(12);
  EXPECT_EQ(p.scheduleFor(13)->slow, 1);
  EXPECT_EQ(p.scheduleFor(21)->slow, -1);
}

// Members start collectives at random while the coordinator switches the
// slow member back and forth; messages to and from each member arrive in
// order per direction, in any order across members. Every collective
// must run under one schedule on every member.
TEST(ScheduleSwitch, RandomInterleavingsNeverDisagree) {
  int total_commits = 0, total_aborts = 0;
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const int n = 2 + seed % 5;
    const uint64_t kCollectives = 60;
    SwitchCoordinator coord(n);
    std::vector<SwitchParticipant> members;
    for (int r = 0; r < n; ++r) members.emplace_back(r);
    std::vector<std::deque<SwitchProposal>> to_member(n);
    std::vector<std::deque<SwitchOutcome>> outcomes_to(n);
    std::deque<SwitchVote> to_coord;
    // The coordinator's messages to each member keep their order across
    // kinds: one queue of (is outcome, index).
    std::vector<std::deque<std::pair<bool, size_t>>> order(n);
    std::map<uint64_t, int> ran;  // collective -> slow member it ran under
    int switches = 0, commits = 0, aborts = 0;
    auto send = [&](const SwitchCoordinator::Result& r) {
      for (int m = 0; m < n; ++m) {
        outcomes_to[m].push_back(r.outcome);
        order[m].push_back({true, 0});
        if (r.again) {
          to_member[m].push_back(*r.again);
          order[m].push_back({false, 0});
        }
      }
      commits += r.outcome.commit;
      aborts += !r.outcome.commit;
    };
    for (int tick = 0; tick < 5000; ++tick) {
      const int what = std::uniform_int_distribution<int>(0, 3)(rng);
      const int m = std::uniform_int_distribution<int>(0, n - 1)(rng);
      if (what == 0 && !coord.pending() && switches < 8) {
        const int slow = switches % 2 == 0 ? std::uniform_int_distribution<int>(0, n - 1)(rng) : -1;
        if (auto p = coord.propose(slow, members[0].lastStarted())) {
          ++switches;
          for (int k = 0; k < n; ++k) {
            to_member[k].push_back(*p);
            order[k].push_back({false, 0});
          }
        }
      } else if (what == 1) {
        // Member m starts its next collective, if it may.
        const uint64_t next = members[m].lastStarted() + 1;
        if (next > kCollectives) continue;
        const auto s = members[m].scheduleFor(next);
        if (!s) continue;
        auto [it, fresh] = ran.emplace(next, s->slow);
        ASSERT_EQ(it->second, s->slow) << "seed " << seed << ": member " << m << " ran collective " << next
                                       << " under another schedule (fresh " << fresh << ")";
        members[m].started(next);
      } else if (what == 2 && !order[m].empty()) {
        const bool outcome = order[m].front().first;
        order[m].pop_front();
        if (outcome) {
          members[m].onOutcome(outcomes_to[m].front());
          outcomes_to[m].pop_front();
        } else {
          to_coord.push_back(members[m].onProposal(to_member[m].front()));
          to_member[m].pop_front();
        }
      } else if (what == 3 && !to_coord.empty()) {
        const size_t k = std::uniform_int_distribution<size_t>(0, to_coord.size() - 1)(rng);
        const SwitchVote v = to_coord[k];
        to_coord.erase(to_coord.begin() + static_cast<long>(k));
        if (auto r = coord.onVote(v)) send(*r);
      }
    }
    // Nobody stays held: every member finished every collective.
    for (int m = 0; m < n; ++m) {
      EXPECT_EQ(members[m].lastStarted(), kCollectives) << "seed " << seed << ": member " << m << " held";
    }
    total_commits += commits;
    total_aborts += aborts;
  }
  // Both outcomes were exercised.
  EXPECT_GT(total_commits, 300);
  EXPECT_GT(total_aborts, 50);
}

}  // namespace
