// The logic of striping with no transport: a path's measured rate and
// round trip (path_meter.h), how a message is cut over paths
// (stripe_plan.h), and how its chunks are put together (chunk_assembly.h).
#include <gtest/gtest.h>

#include <random>

#include "core/delivery/chunk_assembly.h"
#include "core/delivery/path_doubt.h"
#include "core/delivery/path_meter.h"
#include "core/delivery/stripe_plan.h"

namespace {

using namespace std::chrono_literals;
using mw::ChunkAssembly;
using mw::PathMeter;
using mw::StripeChunk;
using mw::StripeLimits;
using mw::StripeOffer;
using Clock = PathMeter::Clock;

constexpr size_t kMiB = size_t{1} << 20;

// `n` sends of `bytes`, each acknowledged `gap` after the one before, the
// first `gap` after it was sent: a path moving bytes / gap.
Clock::time_point stream(PathMeter& m, Clock::time_point t, int n, size_t bytes, Clock::duration gap) {
  for (int i = 0; i < n; ++i) m.sent(bytes);
  const Clock::time_point sent_at = t;
  for (int i = 0; i < n; ++i) {
    t += gap;
    m.acknowledged(bytes, sent_at, t);
  }
  return t;
}

TEST(PathMeter, RateIsTheAcknowledgedBytesOverTheTimeTheyTook) {
  PathMeter m;
  EXPECT_FALSE(m.measured());
  stream(m, Clock::time_point{} + 1s, 20, kMiB, 1ms);
  EXPECT_NEAR(m.rate(), 1048576e3, 1048576e3 * 0.01);
  EXPECT_EQ(m.inFlight(), 0u);
  EXPECT_EQ(m.delivered(), 20 * kMiB);
}

TEST(PathMeter, FollowsARateThatDrops) {
  PathMeter m;
  auto t = stream(m, Clock::time_point{} + 1s, 10, kMiB, 1ms);
  // A tbf cap to a quarter: each MiB now takes 4 ms.
  stream(m, t, 20, kMiB, 4ms);
  EXPECT_NEAR(m.rate(), 1048576e3 / 4, 1048576e3 / 4 * 0.05);
}

TEST(PathMeter, SmallMessagesTellNoRate) {
  PathMeter m;
  auto t = Clock::time_point{} + 1s;
  // A 64-byte message each millisecond, each answered in 50 us: the path
  // is waiting on the round trip, not on its rate.
  for (int i = 0; i < 100; ++i, t += 1ms) {
    m.sent(64);
    m.acknowledged(64, t, t + 50us);
  }
  EXPECT_FALSE(m.measured());
  EXPECT_EQ(m.srtt(), 50us);
}

TEST(PathMeter, AnIdlePathIsNotChargedForItsIdleTime) {
  PathMeter m;
  auto t = stream(m, Clock::time_point{} + 1s, 5, kMiB, 1ms);
  // Ten seconds of nothing, then one more MiB that takes 1 ms.
  t += 10s;
  m.sent(kMiB);
  m.acknowledged(kMiB, t, t + 1ms);
  EXPECT_NEAR(m.rate(), 1048576e3, 1048576e3 * 0.2);
}

TEST(PathMeter, AcknowledgementsLandingTogetherMakeOneSample) {
  PathMeter m;
  const auto t = Clock::time_point{} + 1s;
  for (int i = 0; i < 4; ++i) m.sent(kMiB);
  // The first three come 1 us apart (one read of a socket): no sample of
  // 1 MiB per microsecond.
  m.acknowledged(kMiB, t, t + 1ms);
  m.acknowledged(kMiB, t, t + 1ms + 1us);
  m.acknowledged(kMiB, t, t + 1ms + 2us);
  const double after_first = m.rate();
  EXPECT_NEAR(after_first, 1048576e3, 1048576e3 * 0.01);
  m.acknowledged(kMiB, t, t + 4ms);
  // Three MiB over the 3 ms since the first sample.
  EXPECT_NEAR(m.rate(), 1048576e3, 1048576e3 * 0.01);
}

TEST(PathMeter, RoundTripLeavesOutTheBytesOwnTimeOnTheWire) {
  PathMeter m;
  const auto t0 = Clock::time_point{} + 1s;
  m.sent(64);
  m.acknowledged(64, t0, t0 + 100us);
  EXPECT_EQ(m.srtt(), 100us);
  EXPECT_EQ(m.rttvar(), 50us);
  auto t = stream(m, t0 + 1ms, 10, kMiB, 1ms);
  // 1 MiB at the measured 1 GiB/s is about 1 ms on the wire; the rest of
  // each wait is round trip. The first MiB waited 1 ms, the tenth 10 ms:
  // they queued behind each other, and the estimate follows that.
  EXPECT_GT(m.srtt(), 100us);
  const auto before = m.srtt();
  m.sent(64);
  m.acknowledged(64, t, t + 100us);
  EXPECT_LT(m.srtt(), before);
}

TEST(PathMeter, ABusyPathIsDoubtedOnlyAfterWhatItHasQueuedAtItsRate) {
  PathMeter m;
  // 400 Mbit/s.
  stream(m, Clock::time_point{} + 1s, 10, kMiB, 21ms);
  ASSERT_NEAR(m.rate(), 50e6, 50e6 * 0.01);
  EXPECT_GE(m.doubtAfter(100ms), 100ms);
  // An 8 MiB message in flight takes 168 ms at 400 Mbit/s: the doubt waits
  // for it on top of the floor.
  m.sent(8 * kMiB);
  EXPECT_GE(m.doubtAfter(100ms), 100ms + 160ms);
  EXPECT_LE(m.doubtAfter(100ms), 100ms + 180ms + 3 * m.srtt());
  m.withdrawn(100 * kMiB);
  EXPECT_EQ(m.inFlight(), 0u);
}

TEST(PathMeter, DoubtWaitsThreeRoundTripsWhenThoseAreLongerThanTheFloor) {
  PathMeter m;
  const auto t = Clock::time_point{} + 1s;
  m.sent(64);
  m.acknowledged(64, t, t + 20ms);
  EXPECT_FALSE(m.measured()) << "64 bytes tell the round trip, not the rate";
  EXPECT_EQ(m.doubtAfter(10ms), 60ms);
  EXPECT_EQ(m.doubtAfter(100ms), 100ms);
}

TEST(PathMeter, WindowIsBandwidthTimesRoundTripWithinItsBounds) {
  PathMeter a, b, fresh;
  const auto t = Clock::time_point{} + 1s;
  for (PathMeter* m : {&a, &b}) {
    m->sent(64);
    m->acknowledged(64, t, t + 100us);
    stream(*m, t + 1ms, 1, kMiB, 1ms);
    m->sent(64);
    m->acknowledged(64, t + 10ms, t + 10ms + 100us);
  }
  const size_t one = mw::windowBytes({&a}, 0, 1 << 30);
  EXPECT_GT(one, 0u);
  EXPECT_NEAR(static_cast<double>(mw::windowBytes({&a, &b}, 0, 1 << 30)), 2.0 * static_cast<double>(one), 1);
  EXPECT_EQ(mw::windowBytes({&a, &b}, 0, 1000), 1000u);
  EXPECT_EQ(mw::windowBytes({&a, &b}, 100 * kMiB, 1000), 100 * kMiB);
  // The path not measured counts as the floor.
  EXPECT_NEAR(static_cast<double>(mw::windowBytes({&a, &fresh}, kMiB, 1 << 30)), static_cast<double>(one + kMiB), 1);
}

StripeOffer offer(size_t path, double rate, std::chrono::microseconds ready = 0us) {
  return {path, rate, ready, 100us};
}

// Every byte in exactly one chunk, in offset order, within the limits.
void expectCovers(const std::vector<StripeChunk>& chunks, size_t bytes, const StripeLimits& limits) {
  size_t at = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].offset, at) << "chunk " << i;
    EXPECT_LE(chunks[i].bytes, limits.max_chunk) << "chunk " << i;
    if (i + 1 < chunks.size()) {
      EXPECT_EQ((chunks[i].offset + chunks[i].bytes) % limits.align, 0u) << "chunk " << i;
    }
    at += chunks[i].bytes;
  }
  EXPECT_EQ(at, bytes);
}

size_t shareOf(const std::vector<StripeChunk>& chunks, size_t path) {
  size_t sum = 0;
  for (const auto& c : chunks) sum += c.path == path ? c.bytes : 0;
  return sum;
}

TEST(StripePlan, ASmallMessageGoesWholeOnThePathThatDeliversItFirst) {
  const StripeLimits limits;
  auto chunks = mw::planStripes(4096, {offer(0, 1e9), offer(1, 1e9)}, limits);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].path, 0u) << "alike: the preferred one";
  // Path 0 has 10 ms of bytes ahead; path 1 is slower but idle.
  chunks = mw::planStripes(4096, {offer(0, 1e9, 10ms), offer(1, 1e8)}, limits);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].path, 1u);
  EXPECT_EQ(chunks[0].bytes, 4096u);
}

TEST(StripePlan, EqualPathsTakeHalfEach) {
  const StripeLimits limits;
  const auto chunks = mw::planStripes(4 * kMiB, {offer(0, 1e9), offer(1, 1e9)}, limits);
  expectCovers(chunks, 4 * kMiB, limits);
  EXPECT_EQ(shareOf(chunks, 0), 2 * kMiB);
  EXPECT_EQ(shareOf(chunks, 1), 2 * kMiB);
}

TEST(StripePlan, SharesFollowTheRates) {
  const StripeLimits limits;
  // Rails capped at 1 and 0.5 Gbit/s.
  const auto chunks = mw::planStripes(64 * kMiB, {offer(0, 125e6), offer(1, 62.5e6)}, limits);
  expectCovers(chunks, 64 * kMiB, limits);
  EXPECT_NEAR(static_cast<double>(shareOf(chunks, 0)), 64.0 * kMiB * 2 / 3, 64.0 * kMiB * 0.01);
  EXPECT_LE(chunks.size(), 66u) << "a share goes in chunks of about max_chunk";
}

TEST(StripePlan, APathWithBytesAheadTakesLess) {
  const StripeLimits limits;
  // Path 0 has 4 ms queued at 1 GB/s: 4 MB ahead. Both then finish together.
  const auto chunks = mw::planStripes(8 * kMiB, {offer(0, 1e9, 4ms), offer(1, 1e9)}, limits);
  expectCovers(chunks, 8 * kMiB, limits);
  const double zero = static_cast<double>(shareOf(chunks, 0)), one = static_cast<double>(shareOf(chunks, 1));
  EXPECT_NEAR(one - zero, 4e6, 2 * 4096.0);
}

TEST(StripePlan, ASliverUnderTheSmallestChunkGoesToTheOthers) {
  const StripeLimits limits;
  // A path at a thousandth of the other's rate would get about 1 KiB.
  const auto chunks = mw::planStripes(kMiB, {offer(0, 1e9), offer(1, 1e6)}, limits);
  expectCovers(chunks, kMiB, limits);
  EXPECT_EQ(shareOf(chunks, 1), 0u);
  // And a path so far behind that its share would start after the others
  // finished gets nothing.
  const auto late = mw::planStripes(kMiB, {offer(0, 1e9), offer(1, 1e9, 50ms)}, limits);
  expectCovers(late, kMiB, limits);
  EXPECT_EQ(shareOf(late, 1), 0u);
}

TEST(StripePlan, APathNotMeasuredYetCarriesAShare) {
  const StripeLimits limits;
  const auto chunks = mw::planStripes(4 * kMiB, {offer(0, 1e9), offer(1, 0)}, limits);
  expectCovers(chunks, 4 * kMiB, limits);
  EXPECT_EQ(shareOf(chunks, 1), 2 * kMiB);
  const auto none = mw::planStripes(4 * kMiB, {offer(0, 0), offer(1, 0), offer(2, 0)}, limits);
  expectCovers(none, 4 * kMiB, limits);
  for (size_t p = 0; p < 3; ++p) EXPECT_GT(shareOf(none, p), kMiB) << "path " << p;
}

TEST(StripePlan, EdgeCases) {
  const StripeLimits limits;
  EXPECT_TRUE(mw::planStripes(kMiB, {}, limits).empty());
  auto zero = mw::planStripes(0, {offer(3, 1e9)}, limits);
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0].path, 3u);
  EXPECT_EQ(zero[0].bytes, 0u);
  // One path: whole, in chunks of at most max_chunk? No: one path takes
  // the message whole, as it would unstriped.
  auto one = mw::planStripes(8 * kMiB, {offer(2, 1e9)}, limits);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].bytes, 8 * kMiB);
  // Not a multiple of the alignment.
  auto odd = mw::planStripes(kMiB + 7, {offer(0, 1e9), offer(1, 1e9)}, limits);
  expectCovers(odd, kMiB + 7, limits);
}

TEST(StripePlan, AnyMixOfRatesAndSizesIsCoveredExactly) {
  std::mt19937_64 rng(46);
  StripeLimits limits;
  for (int round = 0; round < 2000; ++round) {
    const size_t bytes = std::uniform_int_distribution<size_t>(0, 80 * kMiB)(rng);
    std::vector<StripeOffer> offers;
    const size_t n = std::uniform_int_distribution<size_t>(1, 4)(rng);
    for (size_t p = 0; p < n; ++p) {
      const double rate = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                              ? 0
                              : std::uniform_real_distribution<double>(1e5, 5e9)(rng);
      offers.push_back({p * 7, rate, std::chrono::microseconds(std::uniform_int_distribution<int>(0, 20000)(rng)),
                        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 2000)(rng))});
    }
    const auto chunks = mw::planStripes(bytes, offers, limits);
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(bytes) + " bytes over " +
                 std::to_string(n) + " paths");
    if (bytes < limits.min_bytes || n == 1) {
      ASSERT_EQ(chunks.size(), 1u);
      EXPECT_EQ(chunks[0].bytes, bytes);
      continue;
    }
    expectCovers(chunks, bytes, limits);
    for (const auto& c : chunks) EXPECT_EQ(c.path % 7, 0u);
  }
}

TEST(ChunkAssembly, ChunksInAnyOrderMakeTheMessage) {
  ChunkAssembly a(10 * 4096);
  for (size_t i : {3, 0, 9, 1, 2, 8, 4, 7, 6}) {
    EXPECT_EQ(a.take(i * 4096, 4096), ChunkAssembly::Take::New);
    EXPECT_FALSE(a.complete());
  }
  EXPECT_EQ(a.take(5 * 4096, 4096), ChunkAssembly::Take::New);
  EXPECT_TRUE(a.complete());
  EXPECT_EQ(a.chunks(), 10u);
}

TEST(ChunkAssembly, AChunkSentAgainIsADuplicate) {
  ChunkAssembly a(8192);
  EXPECT_EQ(a.take(0, 4096), ChunkAssembly::Take::New);
  EXPECT_EQ(a.take(0, 4096), ChunkAssembly::Take::Duplicate);
  EXPECT_EQ(a.received(), 4096u);
}

TEST(ChunkAssembly, NonsenseFromTheWireIsRefusedAndChangesNothing) {
  ChunkAssembly a(8192);
  EXPECT_EQ(a.take(4096, 4096), ChunkAssembly::Take::New);
  EXPECT_EQ(a.take(4096, 100), ChunkAssembly::Take::Refused) << "same offset, other size";
  EXPECT_EQ(a.take(4000, 200), ChunkAssembly::Take::Refused) << "overlaps the next";
  EXPECT_EQ(a.take(8000, 192), ChunkAssembly::Take::Refused) << "overlaps the one before";
  EXPECT_EQ(a.take(8192, 1), ChunkAssembly::Take::Refused) << "past the end";
  EXPECT_EQ(a.take(SIZE_MAX, 2), ChunkAssembly::Take::Refused) << "offset + bytes wraps";
  EXPECT_EQ(a.take(0, 0), ChunkAssembly::Take::Refused) << "empty chunk of a message with bytes";
  EXPECT_EQ(a.received(), 4096u);
  EXPECT_EQ(a.take(0, 4096), ChunkAssembly::Take::New);
  EXPECT_TRUE(a.complete());
}

TEST(ChunkAssembly, AnEmptyMessageIsOneEmptyChunk) {
  ChunkAssembly a(0);
  EXPECT_FALSE(a.complete());
  EXPECT_EQ(a.take(0, 0), ChunkAssembly::Take::New);
  EXPECT_TRUE(a.complete());
  EXPECT_EQ(a.take(0, 0), ChunkAssembly::Take::Duplicate);
}

// Path doubt (path_doubt.h): two paths with the same meter.
struct TwoPaths {
  PathMeter meter;
  std::vector<mw::PathTraffic> paths;
  TwoPaths() {
    const auto t = Clock::time_point{} + 1s;
    meter.sent(64);
    meter.acknowledged(64, t, t + 1ms);  // srtt 1 ms
    paths.resize(2);
    for (auto& p : paths) {
      p.up = true;
      p.meter = &meter;
      p.last_heard = t;
    }
  }
};

TEST(PathDoubt, APathSilentWhileAnotherAnswersIsInDoubtAfterItsAllowance) {
  TwoPaths two;
  const auto t = Clock::time_point{} + 2s;
  two.paths[1].oldest_sent = t;
  EXPECT_EQ(mw::doubtDue(two.paths[1], 10ms), t + 10ms) << "max(3 x 1 ms, 10 ms)";
  two.paths[0].last_heard = t + 5ms;  // path 0 keeps answering
  EXPECT_FALSE(mw::inDoubt(two.paths, 1, t + 9ms, 10ms));
  EXPECT_TRUE(mw::inDoubt(two.paths, 1, t + 10ms, 10ms));
  EXPECT_FALSE(mw::inDoubt(two.paths, 0, t + 10ms, 10ms)) << "nothing in flight on 0";
}

TEST(PathDoubt, SilenceEverywhereIsThePeersNotAPaths) {
  TwoPaths two;
  const auto t = Clock::time_point{} + 2s;
  two.paths[0].oldest_sent = t;
  two.paths[1].oldest_sent = t;
  EXPECT_FALSE(mw::inDoubt(two.paths, 0, t + 1s, 10ms));
  EXPECT_FALSE(mw::inDoubt(two.paths, 1, t + 1s, 10ms));
  // An answer on a path that is down says nothing of this one's peer.
  two.paths[0].up = false;
  two.paths[0].last_heard = t + 500ms;
  EXPECT_FALSE(mw::inDoubt(two.paths, 1, t + 1s, 10ms));
}

TEST(PathDoubt, ABusyPathIsGivenTheTimeItsBytesNeed) {
  TwoPaths two;
  PathMeter slow;
  stream(slow, Clock::time_point{} + 1s, 10, kMiB, 21ms);  // 50 MB/s
  slow.sent(8 * kMiB);
  two.paths[1].meter = &slow;
  const auto t = Clock::time_point{} + 3s;
  two.paths[1].oldest_sent = t;
  two.paths[0].last_heard = t + 100ms;
  const auto allowance = slow.doubtAfter(10ms);
  EXPECT_GE(allowance, 168ms) << "8 MiB at 50 MB/s";
  EXPECT_FALSE(mw::inDoubt(two.paths, 1, t + allowance - 1ms, 10ms));
  EXPECT_TRUE(mw::inDoubt(two.paths, 1, t + allowance, 10ms));
}

TEST(PathDoubt, AnIdlePathIsProbedOnceNotHeardFromForAWhile) {
  TwoPaths two;
  const auto heard = two.paths[0].last_heard;
  EXPECT_FALSE(mw::probeDue(two.paths[0], heard + 99ms, 100ms));
  EXPECT_TRUE(mw::probeDue(two.paths[0], heard + 100ms, 100ms));
  two.paths[0].oldest_sent = heard;
  EXPECT_FALSE(mw::probeDue(two.paths[0], heard + 1s, 100ms)) << "its own traffic tells";
  two.paths[1].up = false;
  EXPECT_FALSE(mw::probeDue(two.paths[1], heard + 1s, 100ms)) << "a path that is down has probes of its own";
  EXPECT_FALSE(mw::doubtDue(two.paths[1], 10ms));
  EXPECT_FALSE(mw::inDoubt(two.paths, 7, heard, 10ms)) << "no such path";
}

}  // namespace
