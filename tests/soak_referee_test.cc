// The soak's schedule and referee (bench/soak), and the lab's payload
// checks: a seed gives one schedule; breaks are judged against the fault
// under way; members that never learn of a break are counted.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "bench/soak/soak_leaks.h"
#include "bench/soak/soak_referee.h"
#include "bench/soak/soak_schedule.h"
#include "bench/soak/soak_topology.h"
#include "tools/lab/checked_payload.h"

namespace {

using namespace mwbench::soak;

constexpr int64_t kMs = 1000000;

ScheduleShape shape(const std::vector<WorldSpec>& worlds) {
  ScheduleShape s;
  for (int k = 0; k < kFaultKinds; ++k) s.kinds.push_back(static_cast<FaultKind>(k));
  s.worlds = worlds;
  s.processes = 6;
  s.rails = 2;
  return s;
}

std::vector<std::string> texts(uint64_t seed, int n) {
  Schedule s(seed, shape(makeTopology(6, "t")));
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    const Fault f = s.next();
    out.push_back(f.text() + " after " + std::to_string(f.gap_ms));
  }
  return out;
}

TEST(SoakSchedule, TheSameSeedGivesTheSameFaults) {
  EXPECT_EQ(texts(7, 200), texts(7, 200));
  EXPECT_NE(texts(7, 200), texts(8, 200));
}

TEST(SoakSchedule, FaultsStayWithinTheirBounds) {
  const auto worlds = makeTopology(6, "t");
  Schedule s(1, shape(worlds));
  for (int i = 0; i < 2000; ++i) {
    const Fault f = s.next();
    EXPECT_EQ(f.index, i);
    EXPECT_GE(f.gap_ms, 500);
    EXPECT_LE(f.gap_ms, 3000);
    if (f.kind == FaultKind::SigstopShort) {
      EXPECT_LT(f.hold_ms, 500) << f.text();
    }
    if (f.kind == FaultKind::SigstopLong) {
      EXPECT_GT(f.hold_ms, 1000) << f.text();
    }
    if (f.kind == FaultKind::Cancel) {
      ASSERT_GE(f.world, 0);
      EXPECT_FALSE(worlds[static_cast<size_t>(f.world)].allreduce);
      EXPECT_GE(worlds[static_cast<size_t>(f.world)].rankOf(f.member), 0);
    }
    if (f.kind == FaultKind::Shrink) {
      // A member of an allreduce world: its two others shrink it.
      ASSERT_GE(f.world, 0);
      EXPECT_TRUE(worlds[static_cast<size_t>(f.world)].allreduce);
      EXPECT_GE(worlds[static_cast<size_t>(f.world)].rankOf(f.member), 0);
    }
  }
}

TEST(SoakSchedule, ShrinkIsAFaultKindThatBreaksTheWorldsOfItsMember) {
  FaultKind k;
  ASSERT_TRUE(faultFromName("shrink", &k));
  EXPECT_EQ(k, FaultKind::Shrink);
  EXPECT_STREQ(faultName(FaultKind::Shrink), "shrink");
  EXPECT_TRUE(breaksWorlds(FaultKind::Shrink));
}

TEST(SoakTopology, EveryMemberInTwoStreamsAndTriplesSpread) {
  const auto worlds = makeTopology(6, "t");
  for (int m = 0; m < 6; ++m) {
    int streams = 0, triples = 0;
    for (int w : worldsOf(worlds, m)) (worlds[static_cast<size_t>(w)].allreduce ? triples : streams)++;
    EXPECT_EQ(streams, 2) << "member " << m;
    EXPECT_EQ(triples, 1) << "member " << m;
  }
}

BreakRecord record(int world, int64_t formed_ms, int64_t seen_ms, int blamed) {
  BreakRecord r{};
  r.world = world;
  r.incarnation = 1;
  r.formed_ns = formed_ms * kMs;
  r.seen_ns = seen_ms * kMs;
  r.blamed = blamed;
  r.has_event = 1;
  std::strcpy(r.detail, "test");
  return r;
}

class RefereeTest : public ::testing::Test {
 protected:
  // 3 members: streams s0-1 (0), s1-2 (1), s2-0 (2); allreduce a0 (3).
  std::vector<WorldSpec> worlds = makeTopology(3, "t");
  Referee ref{worlds, DetectBounds{}};

  Fault fault(FaultKind k, int member, int world = -1) {
    Fault f;
    f.kind = k;
    f.member = member;
    f.world = world;
    return f;
  }
};

TEST_F(RefereeTest, AKillExplainsItsWorldsAndEveryPeerMustLearn) {
  ref.begin(fault(FaultKind::Kill9, 1), 1000 * kMs);
  for (int w : {0, 1, 3}) {
    for (int m : worlds[static_cast<size_t>(w)].members) {
      if (m != 1) ref.judge(m, record(w, 10, 1005, 1));
    }
  }
  ref.close(2000 * kMs);
  EXPECT_EQ(ref.falseBreaks(), 0);
  EXPECT_EQ(ref.missedBreaks(), 0);
  EXPECT_EQ(ref.faultBreaks(), 4);
  EXPECT_TRUE(ref.violations().empty());
  EXPECT_EQ(ref.detections().at("kill9").size(), 4u);
}

TEST_F(RefereeTest, APeerThatNeverLearnsOrLearnsLateIsAMissedBreak) {
  ref.begin(fault(FaultKind::Kill9, 1), 1000 * kMs);
  ref.judge(0, record(0, 10, 1005, 1));  // s0-1 on 0: in time
  ref.judge(2, record(1, 10, 1500, 1));  // s1-2 on 2: 500 ms, past the 100 ms bound
  // a0 on 0 and on 2: never
  ref.close(3000 * kMs);
  EXPECT_EQ(ref.missedBreaks(), 3);
  EXPECT_EQ(ref.falseBreaks(), 0);
}

TEST_F(RefereeTest, AKillCountsFromTheExitTheKernelFinished) {
  ref.begin(fault(FaultKind::Kill9, 1), 1000 * kMs);
  ref.exited(1300 * kMs);  // the exit itself took 300 ms
  ref.judge(0, record(0, 10, 1350, 1));  // s0-1 on 0: 350 ms after the kill, 50 after the exit
  ref.judge(2, record(1, 10, 1450, 1));  // s1-2 on 2: 150 ms after the exit, past the bound
  for (int m : worlds[3].members) {
    if (m != 1) ref.judge(m, record(3, 10, 1310, 1));
  }
  ref.close(3000 * kMs);
  EXPECT_EQ(ref.missedBreaks(), 1);
  ASSERT_EQ(ref.violations().size(), 1u);
  EXPECT_NE(ref.violations()[0].find("450.0 ms after the kill, 150.0 ms after the exit"), std::string::npos)
      << ref.violations()[0];
  ASSERT_EQ(ref.exitMs().size(), 1u);
  EXPECT_DOUBLE_EQ(ref.exitMs()[0], 300.0);
  EXPECT_EQ(ref.detections().at("kill9").size(), 4u);  // still counted from the kill
}

TEST_F(RefereeTest, ABreakOfAWorldTheFaultDoesNotTouchIsFalse) {
  ref.begin(fault(FaultKind::Kill9, 1), 1000 * kMs);
  ref.judge(0, record(2, 10, 1005, 2));  // s2-0 holds no member 1
  EXPECT_EQ(ref.falseBreaks(), 1);
}

TEST_F(RefereeTest, ABreakThatBlamesAnotherMemberIsFalse) {
  ref.begin(fault(FaultKind::SigstopLong, 1), 1000 * kMs);
  ref.judge(0, record(0, 10, 1900, 0));  // blames itself, not member 1
  EXPECT_EQ(ref.falseBreaks(), 1);
}

TEST_F(RefereeTest, TheMemberAtFaultMayBlameAnyPeer) {
  ref.begin(fault(FaultKind::CutAllRails, 1), 1000 * kMs);
  ref.judge(1, record(0, 10, 2000, 0));
  ref.close(3000 * kMs);
  ref.begin(fault(FaultKind::SigstopLong, 1), 4000 * kMs);
  ref.judge(1, record(1, 10, 6000, 2));
  ref.judge(2, record(1, 10, 5000, -1));  // a peer must name it
  EXPECT_EQ(ref.falseBreaks(), 1);
}

TEST_F(RefereeTest, BreaksWithoutAFaultAndAfterItsWindowAreFalse) {
  ref.judge(0, record(0, 10, 500, 1));  // before any fault
  ref.begin(fault(FaultKind::SigstopShort, 1), 1000 * kMs);
  ref.judge(0, record(0, 10, 1100, 1));  // a short stop breaks nothing
  ref.close(2000 * kMs);
  ref.begin(fault(FaultKind::Kill9, 1), 3000 * kMs);
  ref.judge(0, record(0, 2500, 3100, 1));  // fine: formed before the kill
  ref.restored(3001 * kMs);
  ref.judge(0, record(0, 3200, 3300, 1));  // formed after the replacement: not the kill's
  EXPECT_EQ(ref.falseBreaks(), 3);
}

TEST_F(RefereeTest, ChurnAndCancelExplainOnlyTheirWorld) {
  ref.begin(fault(FaultKind::Churn, -1, 0), 1000 * kMs);
  ref.judge(0, record(0, 10, 1010, 1));
  ref.judge(0, record(2, 10, 1010, 2));
  ref.close(2000 * kMs);
  ref.begin(fault(FaultKind::Cancel, 0, 0), 3000 * kMs);
  ref.judge(1, record(0, 10, 3010, 0));  // names the member that cancelled
  ref.judge(1, record(0, 10, 3020, 1));  // names another
  EXPECT_EQ(ref.churnBreaks(), 1);
  EXPECT_EQ(ref.cancelBreaks(), 1);
  EXPECT_EQ(ref.falseBreaks(), 2);
}

TEST_F(RefereeTest, ACrashExplainsTheBreaksOfItsWorldsNearIt) {
  ref.crashed(2, 5000 * kMs, "died of signal 6");
  ref.judge(0, record(2, 10, 5002, 2));
  ref.judge(0, record(2, 10, 20000, 2));  // long after: not the crash's
  EXPECT_EQ(ref.crashes(), 1);
  EXPECT_EQ(ref.falseBreaks(), 1);
}

TEST(LabPayload, SequenceCheckTellsOrderDuplicatesAndHoles) {
  mwlab::SequenceCheck c;
  EXPECT_EQ(c.add(0), mwlab::SequenceCheck::InOrder);
  EXPECT_EQ(c.add(2), mwlab::SequenceCheck::Early);
  EXPECT_EQ(c.add(2), mwlab::SequenceCheck::Again);
  EXPECT_EQ(c.holes(), 1u);
  EXPECT_EQ(c.add(1), mwlab::SequenceCheck::InOrder);
  EXPECT_EQ(c.expected(), 3u);
  EXPECT_EQ(c.add(0), mwlab::SequenceCheck::Again);
  EXPECT_EQ(c.holes(), 0u);
  EXPECT_EQ(c.distinct(), 3u);
}

TEST(LabPayload, SumCheckTellsEachWrongPart) {
  const size_t n = 16;
  auto sum = [&](uint64_t it, const std::vector<int>& ranks, uint64_t other_it = 0, int other_rank = -1) {
    std::vector<uint64_t> out(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (int r : ranks) out[i] += mwlab::sumInput(it, i, r);
      if (other_rank >= 0) out[i] += mwlab::sumInput(other_it, i, other_rank);
    }
    return out;
  };
  EXPECT_TRUE(mwlab::judgeSum(sum(5, {0, 1, 2}).data(), n, 5, 3).ok());
  EXPECT_TRUE(mwlab::judgeSum(sum(5, {0, 2}).data(), n, 5, 3).lost);
  EXPECT_TRUE(mwlab::judgeSum(sum(5, {0, 1, 1, 2}).data(), n, 5, 3).doubled);
  EXPECT_TRUE(mwlab::judgeSum(sum(5, {0, 2}, 4, 1).data(), n, 5, 3).other_iteration);
  auto bad = sum(5, {0, 1, 2});
  bad[3] ^= 1ULL << 45;
  EXPECT_FALSE(mwlab::judgeSum(bad.data(), n, 5, 3).ok());
}

// ---- the leak watch ------------------------------------------------------

constexpr int64_t kSec = 1000000000;
const LeakBounds kBounds{4, 0, 8, 5};

// One process sampled every 4 s from its warm-up to `minutes`; `at` fills
// in its private memory (KiB) and fds for each second since it started.
// The rest of its RSS is 12 MiB of shared pages.
template <typename F>
Growth watch(double minutes, F at) {
  LeakWatch w(60 * kSec);
  w.started(3, 1234, 0);
  for (int64_t t = 0; t <= static_cast<int64_t>(minutes * 60); t += 4) {
    ProcSample s;
    s.threads = 9;
    s.maps = 190;
    s.fds = 40;
    s.private_kib = 4096;
    at(t, &s);
    s.rss_kib = s.private_kib + 12288;
    w.record(3, 1234, t * kSec, s);
  }
  return w.growth(kBounds);
}

TEST(SoakLeaks, AStepWhileWarmingUpThatLevelsOffIsNoLeak) {
  const Growth g = watch(4, [](int64_t t, ProcSample* s) {
    s->private_kib = t < 100 ? 4096 : 5120;  // +1 MiB at 100 s, then flat
    s->fds = t < 100 ? 40 : 46;
  });
  EXPECT_EQ(g.processes, 1);
  EXPECT_GT(g.private_pct, 5);
  EXPECT_EQ(g.fds, 6);
  EXPECT_FALSE(g.leak) << g.worst;
  EXPECT_NE(g.worst.find("levelled off"), std::string::npos) << g.worst;
}

TEST(SoakLeaks, SteadyGrowthPastTheBoundIsALeak) {
  const Growth mem = watch(4, [](int64_t t, ProcSample* s) { s->private_kib = 4096 + 10 * t; });
  EXPECT_TRUE(mem.leak) << mem.worst;  // +1.2 MiB, 7.2% of RSS, from the first third to the last
  EXPECT_NE(mem.worst.find("still growing"), std::string::npos) << mem.worst;
  EXPECT_NEAR(mem.private_kib_per_hour, 36000, 100);
  const Growth fds = watch(4, [](int64_t t, ProcSample* s) { s->fds = 40 + static_cast<int>(t / 20); });
  EXPECT_TRUE(fds.leak) << fds.worst;
  EXPECT_EQ(fds.fds, 6);
  const Growth maps = watch(4, [](int64_t t, ProcSample* s) { s->maps = 190 + static_cast<int>(t / 10); });
  EXPECT_TRUE(maps.leak) << maps.worst;
}

TEST(SoakLeaks, SteadyGrowthWithinTheBoundIsNoLeak) {
  const Growth g = watch(4, [](int64_t t, ProcSample* s) { s->private_kib = 4096 + t; });  // +0.7% of RSS
  EXPECT_FALSE(g.leak) << g.worst;
  EXPECT_GT(g.private_kib_per_hour, 3000);
}

// The rings' shared pages become resident as their writers go round them.
TEST(SoakLeaks, SharedPagesFillingUpAreNoLeak) {
  LeakWatch w(60 * kSec);
  w.started(3, 1234, 0);
  for (int64_t t = 60; t <= 240; t += 4) {
    ProcSample s;
    s.threads = 9;
    s.maps = 190;
    s.fds = 40;
    s.private_kib = 4096;
    s.rss_kib = s.private_kib + 11000 + 10 * t;
    w.record(3, 1234, t * kSec, s);
  }
  const Growth g = w.growth(kBounds);
  EXPECT_GT(g.rss_pct, 5);
  EXPECT_FALSE(g.leak) << g.worst;
}

TEST(SoakLeaks, ABurstAtOneSampleIsNoLeak) {
  const Growth g = watch(4, [](int64_t t, ProcSample* s) {
    if (t == 236) s->private_kib = 12000;  // the last sample, mid-burst
    if (t == 232) s->fds = 52;
  });
  EXPECT_FALSE(g.leak) << g.worst;
  EXPECT_EQ(g.fds, 0);
}

TEST(SoakLeaks, AShortRunIsNotJudged) {
  EXPECT_EQ(watch(1.5, [](int64_t t, ProcSample* s) { s->private_kib = 4096 + 100 * t; }).processes, 0);
}

}  // namespace
