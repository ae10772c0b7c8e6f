// Two ends of a same-host ring pair (core/same_host/ring_pair.h) in this
// process: order by channel, lent descriptors, sends that wait for room,
// the goodbye after them, and giving up.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/same_host/ring_pair.h"

namespace {

using mw::DeliveryOutcome;
using mw::samehost::RingPair;

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

class RingPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = pidfdOpen(getpid());
    ASSERT_GE(self_, 0);
  }
  void TearDown() override { close(self_); }
  // a and b, each reading the other's ring.
  void join(RingPair& a, RingPair& b) {
    a.attach(self_, b.offer());
    b.attach(self_, a.offer());
  }
  // Both ends moved until nothing moves.
  static void settle(RingPair& a, RingPair& b) {
    while (a.progress() | b.progress()) {
    }
  }
  int self_ = -1;
};

struct Received {
  std::vector<char> buf;
  DeliveryOutcome outcome = DeliveryOutcome::GivenUp;
  size_t length = 0;
  bool done = false;
  explicit Received(size_t bytes) : buf(bytes) {}
  RingPair::RecvDone callback() {
    return [this](DeliveryOutcome o, size_t n) {
      outcome = o;
      length = n;
      done = true;
    };
  }
};

TEST_F(RingPairTest, EachChannelKeepsItsOrderWhetherTheReceiveCameFirstOrNot) {
  RingPair a(65536), b(65536);
  join(a, b);
  std::vector<DeliveryOutcome> sent;
  auto note = [&](DeliveryOutcome o) { sent.push_back(o); };
  Received early(8);  // posted before anything came
  b.recv(7, early.buf.data(), early.buf.size(), early.callback());
  a.send(7, "seven-1", 8, false, note);
  a.send(9, "nine-1", 7, false, note);
  a.send(7, "seven-2", 8, false, note);
  ASSERT_EQ(sent.size(), 3u);  // in the ring: done at once
  for (DeliveryOutcome o : sent) EXPECT_EQ(o, DeliveryOutcome::Delivered);
  EXPECT_FALSE(early.done);  // nothing is read until progress
  settle(a, b);
  ASSERT_TRUE(early.done);
  EXPECT_STREQ(early.buf.data(), "seven-1");
  EXPECT_TRUE(b.arrived(7));
  EXPECT_TRUE(b.arrived(9));
  Received seven(8), nine(16);
  EXPECT_EQ(b.recv(9, nine.buf.data(), nine.buf.size(), nine.callback()), 0u);  // waited: done inside
  EXPECT_EQ(b.recv(7, seven.buf.data(), seven.buf.size(), seven.callback()), 0u);
  EXPECT_STREQ(nine.buf.data(), "nine-1");
  EXPECT_EQ(nine.length, 7u);
  EXPECT_EQ(nine.outcome, DeliveryOutcome::Delivered);
  EXPECT_STREQ(seven.buf.data(), "seven-2");
}

TEST_F(RingPairTest, ALentDescriptorEndsItsReceiveLentAndALongMessageTruncated) {
  RingPair a(8192), b(8192);
  join(a, b);
  const char descriptor[48] = "a descriptor";
  a.send(1, descriptor, sizeof descriptor, true, [](DeliveryOutcome) {});
  a.send(1, "twelve bytes", 12, false, [](DeliveryOutcome) {});
  Received lent(48), small(4);
  b.recv(1, lent.buf.data(), lent.buf.size(), lent.callback());
  b.recv(1, small.buf.data(), small.buf.size(), small.callback());
  settle(a, b);
  EXPECT_EQ(lent.outcome, DeliveryOutcome::Lent);
  EXPECT_EQ(lent.length, 48u);
  EXPECT_STREQ(lent.buf.data(), "a descriptor");
  EXPECT_EQ(small.outcome, DeliveryOutcome::Truncated);
  EXPECT_EQ(small.length, 12u);
}

TEST_F(RingPairTest, SendsThatFindTheRingFullWaitInOrderAndTheGoodbyeComesLast) {
  RingPair a(4096), b(4096);
  join(a, b);
  constexpr int kSends = 40;
  std::vector<std::string> payloads;
  for (int i = 0; i < kSends; ++i) payloads.push_back(std::string(900, static_cast<char>('a' + i % 26)));
  std::vector<int> done_order;
  for (int i = 0; i < kSends; ++i) {
    a.send(3, payloads[i].data(), payloads[i].size(), false, [&, i](DeliveryOutcome o) {
      EXPECT_EQ(o, DeliveryOutcome::Delivered);
      done_order.push_back(i);
    });
  }
  a.sendBye();
  EXPECT_LT(done_order.size(), 5u);  // four fit
  EXPECT_TRUE(a.backlogged());
  a.send(3, "late", 4, false, [&](DeliveryOutcome o) { EXPECT_EQ(o, DeliveryOutcome::GivenUp); });
  std::vector<Received> got;
  got.reserve(kSends);
  for (int i = 0; i < kSends; ++i) {
    got.emplace_back(1000);
    b.recv(3, got.back().buf.data(), got.back().buf.size(), got.back().callback());
  }
  settle(a, b);
  EXPECT_FALSE(a.backlogged());
  ASSERT_EQ(done_order.size(), static_cast<size_t>(kSends));
  for (int i = 0; i < kSends; ++i) {
    EXPECT_EQ(done_order[i], i);
    ASSERT_TRUE(got[i].done) << i;
    EXPECT_EQ(std::string(got[i].buf.data(), got[i].length), payloads[i]) << i;
  }
  EXPECT_TRUE(b.byeSeen());
  EXPECT_EQ(b.failure(), "");
}

// The thread that sent may never poll again (mw-ucx asleep, the sender
// gone back to its program): the first send that waits asks for room
// itself, and the reader's making room says so on spaceFd().
TEST_F(RingPairTest, ASendThatWaitsForRoomIsAnnouncedWithoutAPoll) {
  RingPair a(4096), b(4096);
  join(a, b);
  std::vector<char> p(900, 'p');
  int delivered = 0;
  for (int i = 0; i < 6; ++i) a.send(1, p.data(), p.size(), false, [&](DeliveryOutcome) { ++delivered; });
  ASSERT_TRUE(a.backlogged());
  EXPECT_FALSE(readable(a.spaceFd()));
  Received got(1000);
  b.recv(1, got.buf.data(), got.buf.size(), got.callback());
  ASSERT_TRUE(b.progress());  // b reads, and frees the room: a is not polled
  EXPECT_TRUE(got.done);
  EXPECT_TRUE(readable(a.spaceFd()));
  EXPECT_EQ(delivered, 4);
}

TEST_F(RingPairTest, GivingUpEndsEveryWaitingSendAndReceive) {
  RingPair a(4096), b(4096);
  join(a, b);
  std::vector<char> big(3000, 'x');
  int given_up = 0, delivered = 0;
  auto count = [&](DeliveryOutcome o) { ++(o == DeliveryOutcome::GivenUp ? given_up : delivered); };
  for (int i = 0; i < 3; ++i) a.send(1, big.data(), big.size(), false, count);
  EXPECT_EQ(delivered, 1);
  Received pending(16);
  a.recv(2, pending.buf.data(), pending.buf.size(), pending.callback());
  a.giveUp();
  EXPECT_EQ(given_up, 2);
  ASSERT_TRUE(pending.done);
  EXPECT_EQ(pending.outcome, DeliveryOutcome::GivenUp);
  a.send(1, "x", 1, false, count);  // after: at once
  EXPECT_EQ(given_up, 3);
  Received after(16);
  EXPECT_EQ(a.recv(2, after.buf.data(), after.buf.size(), after.callback()), 0u);
  EXPECT_EQ(after.outcome, DeliveryOutcome::GivenUp);
  EXPECT_FALSE(a.progress());
}

TEST_F(RingPairTest, WhatTheRingCannotCarryFailsAtOnce) {
  RingPair a(4096), b(4096);
  join(a, b);
  std::vector<char> big(a.maxMessage() + 1);
  DeliveryOutcome o = DeliveryOutcome::Delivered;
  a.send(1, big.data(), big.size(), false, [&](DeliveryOutcome r) { o = r; });
  EXPECT_EQ(o, DeliveryOutcome::GivenUp);
  o = DeliveryOutcome::Delivered;
  a.send(1ull << 40, "x", 1, false, [&](DeliveryOutcome r) { o = r; });  // a channel past 32 bits
  EXPECT_EQ(o, DeliveryOutcome::GivenUp);
}

TEST_F(RingPairTest, WordsAndMarkersReachTheirHooksInOrder) {
  RingPair a(4096), b(4096);
  join(a, b);
  std::vector<uint64_t> words;
  std::vector<uint32_t> matched;
  b.onWord([&](uint64_t w) { words.push_back(w); });
  b.onMatched([&](uint32_t m) { matched.push_back(m); });
  std::vector<char> big(a.maxMessage(), 'y');  // fills the ring
  a.send(5, big.data(), big.size(), false, [](DeliveryOutcome) {});
  a.send(5, "marked", 7, false, [](DeliveryOutcome) {}, 77);  // waits for room
  a.sendWord(0x1234);                                          // behind it
  EXPECT_TRUE(a.backlogged());
  settle(a, b);
  ASSERT_EQ(words.size(), 1u);
  EXPECT_EQ(words[0], 0x1234u);
  EXPECT_TRUE(matched.empty());  // arrived, not yet taken by a receive
  Received first(4096), second(8);
  b.recv(5, first.buf.data(), first.buf.size(), first.callback());
  EXPECT_TRUE(matched.empty());
  b.recv(5, second.buf.data(), second.buf.size(), second.callback());
  ASSERT_EQ(matched.size(), 1u);
  EXPECT_EQ(matched[0], 77u);
  EXPECT_STREQ(second.buf.data(), "marked");
  DeliveryOutcome o = DeliveryOutcome::Delivered;
  a.send(5, "x", 1, false, [&](DeliveryOutcome r) { o = r; }, 1u << 24);  // past 24 bits
  EXPECT_EQ(o, DeliveryOutcome::GivenUp);
}

TEST_F(RingPairTest, AWakeIsAskedForOnlyWithNothingToRead) {
  RingPair a(4096), b(4096);
  join(a, b);
  EXPECT_GE(b.wakeFd(), 0);
  EXPECT_TRUE(b.armWake());
  b.disarmWake();
  a.send(1, "x", 1, false, [](DeliveryOutcome) {});
  EXPECT_FALSE(b.armWake());
}

}  // namespace
