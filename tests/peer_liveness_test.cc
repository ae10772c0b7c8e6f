// Heartbeat verdicts on a clock the test drives: what makes a peer overdue
// and what does not (a key lost and written again, a stale value, garbage).
#include <gtest/gtest.h>

#include "core/liveness/peer_liveness.h"

namespace {

using namespace std::chrono_literals;
using mw::Clock;

constexpr auto kTimeout = 1000ms;

std::string beat(uint64_t n) { return std::to_string(n) + " host 42 1700000000000"; }

class PeerLivenessTest : public ::testing::Test {
 protected:
  // One tick every 100 ms of the test's clock.
  bool tick(std::optional<std::string> value) {
    t_ += 100ms;
    if (value) return live_.overdue("peer", std::string_view(*value), t_);
    return live_.overdue("peer", std::nullopt, t_);
  }
  mw::PeerLiveness live_{kTimeout, 100ms};
  Clock::time_point t_{};
};

TEST_F(PeerLivenessTest, TheSameBeatForTheTimeoutIsOverdue) {
  EXPECT_FALSE(tick(beat(1)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(1))) << i;
  EXPECT_TRUE(tick(beat(1)));
  EXPECT_NE(live_.describe(1, "peer", beat(1), t_).find("holds beat 1"), std::string::npos);
}

TEST_F(PeerLivenessTest, SeenRestartsTheTimeoutWithoutANewBeat) {
  EXPECT_FALSE(tick(beat(1)));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(tick(beat(1))) << i;
  live_.seen("peer", t_);  // it formed a world with us: alive now
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(1))) << i;
  EXPECT_TRUE(tick(beat(1)));
  live_.seen("peer", t_ - 5000ms);  // an older proof changes nothing
  EXPECT_TRUE(tick(beat(1)));
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
  std::string why = live_.describe(3, "peer", std::nullopt, t_);
  EXPECT_NE(why.find("rank 3 sent no new heartbeat for 1000 ms"), std::string::npos) << why;
  EXPECT_NE(why.find("last new one read was beat 7"), std::string::npos) << why;
  EXPECT_NE(why.find("key is missing"), std::string::npos) << why;
}

TEST_F(PeerLivenessTest, OlderBeatsAndGarbageAreNotNew) {
  EXPECT_FALSE(tick(beat(50)));
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(i % 2 ? beat(49) : std::string(5000, 'x')));
  EXPECT_TRUE(tick(beat(50)));
  std::string why = live_.describe(0, "peer", std::string(5000, 'x'), t_);
  EXPECT_NE(why.find("not a heartbeat"), std::string::npos);
  EXPECT_LT(why.size(), 1400u);  // the value is capped
}

TEST_F(PeerLivenessTest, AForgottenPeerStartsAfresh) {
  EXPECT_FALSE(tick(beat(1)));
  for (int i = 0; i < 20; ++i) tick(beat(1));
  live_.retain({});
  EXPECT_FALSE(tick(beat(1)));  // first read again: alive
}

TEST_F(PeerLivenessTest, AVerdictAllowsAQuarterIntervalOfJitterAndNoMore) {
  const Clock::time_point read = t_ + 437ms;  // a read that ran late: its own time counts
  EXPECT_FALSE(live_.overdue("peer", std::string_view(beat(3)), read));
  EXPECT_FALSE(live_.overdue("peer", std::string_view(beat(3)), read + 974ms));
  EXPECT_TRUE(live_.overdue("peer", std::string_view(beat(3)), read + 975ms));
}

TEST_F(PeerLivenessTest, TheVerdictFallsDueAtTheFirstPeersLastNewBeatPlusTheTimeoutLessJitter) {
  EXPECT_FALSE(live_.dueAt());
  const Clock::time_point first = t_ + 100ms;
  EXPECT_FALSE(live_.overdue("a", std::string_view(beat(1)), first));
  EXPECT_FALSE(live_.overdue("b", std::string_view(beat(1)), first + 40ms));
  ASSERT_TRUE(live_.dueAt());
  EXPECT_EQ(*live_.dueAt(), first + 975ms);
  // A read at that moment gives the verdict; one a moment before does not.
  EXPECT_FALSE(live_.overdue("a", std::string_view(beat(1)), first + 974ms));
  EXPECT_TRUE(live_.overdue("a", std::string_view(beat(1)), *live_.dueAt()));
  // A new beat of "a" moves the due time to "b".
  EXPECT_FALSE(live_.overdue("a", std::string_view(beat(2)), first + 980ms));
  EXPECT_EQ(*live_.dueAt(), first + 1015ms);
}

TEST_F(PeerLivenessTest, ARestartGivesEveryPeerAFullTimeoutAgain) {
  EXPECT_FALSE(tick(beat(9)));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(tick(std::nullopt));
  // A failover: what the old master showed says nothing any more.
  live_.restart(t_);
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(tick(beat(8)));  // the new master lags: an older beat is not new
  EXPECT_TRUE(tick(beat(8)));
}

}  // namespace
