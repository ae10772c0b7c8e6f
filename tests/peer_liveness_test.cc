// Heartbeat verdicts on a clock the test drives: what makes a peer overdue
// and what does not (a key lost and written again, a stale value, garbage),
// and which time counts: only what this process's own rounds watched on
// time, not a round that ran late, took long or failed.
#include <gtest/gtest.h>

#include "core/liveness/peer_liveness.h"

namespace {

using namespace std::chrono_literals;
using mw::Clock;

constexpr auto kTimeout = 1000ms;

std::string beat(uint64_t n) { return std::to_string(n) + " host 42 1700000000000"; }

class PeerLivenessTest : public ::testing::Test {
 protected:
  // One round `after` the last (every 100 ms of the test's clock unless
  // told), reading `value` for the peer.
  bool tick(std::optional<std::string> value, Clock::duration after = 100ms) {
    t_ += after;
    live_.roundRead(t_);
    if (value) return live_.overdue("peer", std::string_view(*value));
    return live_.overdue("peer", std::nullopt);
  }
  mw::PeerLiveness live_{kTimeout, 100ms};
  Clock::time_point t_{};
};

TEST_F(PeerLivenessTest, TheSameBeatForTheTimeoutIsOverdue) {
  EXPECT_FALSE(tick(beat(1)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(1))) << i;
  EXPECT_TRUE(tick(beat(1)));
  EXPECT_NE(live_.describe(1, "peer", beat(1)).find("holds beat 1"), std::string::npos);
}

TEST_F(PeerLivenessTest, AKeyLostAndWrittenAgainIsAlive) {
  EXPECT_FALSE(tick(beat(1)));
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(tick(std::nullopt));  // half the timeout without a key
    EXPECT_FALSE(tick(beat(2 + round)));
  }
}

TEST_F(PeerLivenessTest, AMissingKeyForTheTimeoutIsOverdueAndSaysSo) {
  EXPECT_FALSE(tick(beat(7)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(std::nullopt));
  EXPECT_TRUE(tick(std::nullopt));
  std::string why = live_.describe(3, "peer", std::nullopt);
  EXPECT_NE(why.find("rank 3 sent no new heartbeat for 1000 ms by this member's clock, 1000 ms of it watched"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("last new one read was beat 7"), std::string::npos) << why;
  EXPECT_NE(why.find("key is missing"), std::string::npos) << why;
}

TEST_F(PeerLivenessTest, OlderBeatsAndGarbageAreNotNew) {
  EXPECT_FALSE(tick(beat(50)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(i % 2 ? beat(49) : std::string(5000, 'x')));
  EXPECT_TRUE(tick(beat(50)));
  std::string why = live_.describe(0, "peer", std::string(5000, 'x'));
  EXPECT_NE(why.find("not a heartbeat"), std::string::npos);
  EXPECT_LT(why.size(), 1400u);  // the value is capped
}

TEST_F(PeerLivenessTest, AForgottenPeerStartsAfresh) {
  EXPECT_FALSE(tick(beat(1)));
  for (int i = 0; i < 20; ++i) tick(beat(1));
  live_.retain({});
  EXPECT_FALSE(tick(beat(1)));  // first read again: alive
}

TEST(PeerLiveness, AVerdictAllowsAQuarterIntervalOfJitterAndNoMore) {
  for (auto [last, due] : {std::pair{74ms, false}, std::pair{75ms, true}}) {
    mw::PeerLiveness live{kTimeout, 100ms};
    Clock::time_point t{};
    live.roundRead(t);
    EXPECT_FALSE(live.overdue("peer", std::string_view(beat(3))));
    for (int i = 0; i < 9; ++i) {
      t += 100ms;
      live.roundRead(t);
      EXPECT_FALSE(live.overdue("peer", std::string_view(beat(3))));
    }
    t += last;  // 974 or 975 ms after the beat was read
    live.roundRead(t);
    EXPECT_EQ(live.overdue("peer", std::string_view(beat(3))), due) << last.count();
  }
}

TEST_F(PeerLivenessTest, ARestartGivesEveryPeerAFullTimeoutAgain) {
  EXPECT_FALSE(tick(beat(9)));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(tick(std::nullopt));
  // A failover: what the old master showed says nothing any more.
  live_.restart(t_);
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(8)));  // the new master lags: an older beat is not new
  EXPECT_TRUE(tick(beat(8)));
}

// This watchdog was held up (starved of CPU, stopped, or its round waited
// on a stalled Redis) for 900 ms: that counts as one interval and the
// jitter, not as 900 ms of the peer's silence.
TEST_F(PeerLivenessTest, ALateRoundAddsAtMostOneIntervalAndTheJitter) {
  EXPECT_FALSE(tick(beat(1)));
  EXPECT_FALSE(tick(beat(1), 900ms));                         // 125 ms watched
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(tick(beat(1))) << i;  // 925 ms watched
  EXPECT_TRUE(tick(beat(1)));                                  // 1025 ms
  std::string why = live_.describe(1, "peer", beat(1));
  EXPECT_NE(why.find("for 1800 ms by this member's clock, 1025 ms of it watched"), std::string::npos) << why;
}

// Every round runs late: a peer that stopped is still caught, after
// timeout / (interval + jitter) rounds.
TEST_F(PeerLivenessTest, WhileEveryRoundRunsLateAStoppedPeerIsStillCaught) {
  EXPECT_FALSE(tick(beat(1)));
  int rounds = 0;
  while (!tick(beat(1), 300ms) && rounds < 100) ++rounds;
  EXPECT_EQ(rounds + 1, 8);  // 8 * 125 ms >= 1000 ms - 25 ms
}

// Redis paused for 3 s: the rounds failed (nothing read), the link came
// back (restart), and the keys had expired meanwhile. The peer writes again
// within a few rounds and is never overdue.
TEST_F(PeerLivenessTest, ARedisPauseCountsAgainstNoPeer) {
  EXPECT_FALSE(tick(beat(4)));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(tick(beat(4)));  // 500 ms without a new beat before the pause
  t_ += 3s;
  live_.restart(t_);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(tick(std::nullopt)) << i;
  EXPECT_FALSE(tick(beat(5)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(5))) << i;
  EXPECT_TRUE(tick(beat(5)));
}

// Even without a restart, the one round that waited out the pause adds one
// interval and the jitter.
TEST_F(PeerLivenessTest, ARoundThatWaitedOutAPauseAddsOneInterval) {
  EXPECT_FALSE(tick(beat(4)));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(tick(beat(4)));  // 500 ms watched
  EXPECT_FALSE(tick(std::nullopt, 3s));                      // 625 ms
  EXPECT_FALSE(tick(std::nullopt));                          // 725 ms
  EXPECT_FALSE(tick(beat(5)));
}

// At heartbeat_interval_ms=50, heartbeat_timeout_ms=200: a peer that writes
// every 50 ms and stops is overdue within the timeout and one interval of
// stopping, and never before it stopped, whatever the phase between its
// writes and these reads.
TEST(PeerLiveness, AStoppedPeerIsOverdueWithinTheTimeoutAndOneInterval) {
  constexpr auto kInterval = 50ms;
  for (auto phase = 0ms; phase < kInterval; phase += 5ms) {
    mw::PeerLiveness live{200ms, kInterval};
    const Clock::time_point start{};
    const auto stopped = start + 1s + phase;  // its last write: the one at `stopped`
    std::optional<Clock::time_point> verdict;
    for (Clock::time_point t = start; t < start + 3s && !verdict; t += kInterval) {
      // The last beat the peer wrote by t: one every interval from `phase`.
      const auto written = std::min(t, stopped) - (start + phase);
      const uint64_t n = written < 0ms ? 0 : 1 + static_cast<uint64_t>(written / kInterval);
      live.roundRead(t);
      const std::string value = beat(n);
      if (live.overdue("peer", n ? std::optional<std::string_view>(value) : std::nullopt)) verdict = t;
    }
    ASSERT_TRUE(verdict) << "phase " << phase.count();
    EXPECT_GT(*verdict, stopped) << "phase " << phase.count();
    EXPECT_LE(*verdict - stopped, 250ms) << "phase " << phase.count();
  }
}

}  // namespace
