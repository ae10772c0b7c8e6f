// The reliable delivery units (core/delivery) without a transport: what a
// lossy, reordering, duplicating path does to them, driven by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/delivery/receive_order.h"
#include "core/delivery/send_window.h"

namespace mw {
namespace {

struct Outcomes {
  std::vector<std::pair<uint64_t, DeliveryOutcome>> ended;  // (tag, outcome), in the order they ran
  SendWindow::Done track(uint64_t tag) {
    return [this, tag](DeliveryOutcome o) { ended.emplace_back(tag, o); };
  }
};

TEST(SendWindow, NumbersFromOneAndCompletesInOrderOnceAcknowledged) {
  SendWindow w;
  Outcomes out;
  char buf[3][8] = {};
  auto a = w.add(7, buf[0], 8, out.track(1));
  auto b = w.add(7, buf[1], 8, out.track(2));
  auto c = w.add(9, buf[2], 4, out.track(3));
  EXPECT_EQ(a->seq, 1u);
  EXPECT_EQ(b->seq, 2u);
  EXPECT_EQ(c->seq, 3u);
  EXPECT_EQ(w.messages(), 3u);
  EXPECT_EQ(w.bytes(), 20u);
  EXPECT_TRUE(w.acknowledge(2));
  ASSERT_EQ(out.ended.size(), 2u);
  EXPECT_EQ(out.ended[0], std::make_pair(uint64_t{1}, DeliveryOutcome::Delivered));
  EXPECT_EQ(out.ended[1], std::make_pair(uint64_t{2}, DeliveryOutcome::Delivered));
  EXPECT_EQ(w.messages(), 1u);
  EXPECT_EQ(w.acknowledged(), 2u);
}

TEST(SendWindow, OldRepeatedAndFutureAcknowledgementsChangeNothing) {
  SendWindow w;
  Outcomes out;
  w.add(1, nullptr, 0, out.track(1));
  w.add(1, nullptr, 0, out.track(2));
  EXPECT_FALSE(w.acknowledge(0));
  EXPECT_FALSE(w.acknowledge(3));  // never sent: nonsense from the wire
  EXPECT_TRUE(out.ended.empty());
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_FALSE(w.acknowledge(1));
  EXPECT_EQ(out.ended.size(), 1u);
  EXPECT_EQ(w.acknowledged(), 1u);
}

TEST(SendWindow, ATransmissionStillReadingTheBufferHoldsBackItAndEverythingAfter) {
  SendWindow w;
  Outcomes out;
  auto a = w.add(1, nullptr, 0, out.track(1));
  auto b = w.add(1, nullptr, 0, out.track(2));
  w.transmitting(*a);
  w.transmitting(*a);  // sent again on another path, the first still in the transport
  w.transmitting(*b);
  w.transmitted(*b);
  EXPECT_TRUE(w.acknowledge(2));
  EXPECT_TRUE(out.ended.empty()) << "a's buffer is still read";
  w.transmitted(*a);
  EXPECT_TRUE(out.ended.empty());
  w.transmitted(*a);
  ASSERT_EQ(out.ended.size(), 2u);
  EXPECT_EQ(out.ended[0].first, 1u);
  EXPECT_EQ(out.ended[1].first, 2u);
}

TEST(SendWindow, UnacknowledgedListsWhatGoesAgainInOrder) {
  SendWindow w;
  Outcomes out;
  for (uint64_t i = 1; i <= 5; ++i) w.add(1, nullptr, 0, out.track(i));
  auto first = w.unacknowledged();
  ASSERT_EQ(first.size(), 5u);
  w.transmitting(*first[0]);  // acknowledged, but not yet completed by the transport
  EXPECT_TRUE(w.acknowledge(2));
  auto again = w.unacknowledged();
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[0]->seq, 3u);
  EXPECT_EQ(again[2]->seq, 5u);
  EXPECT_EQ(w.messages(), 5u) << "1 and 2 wait for the transport";
  EXPECT_NE(w.summary().find("5 outstanding, the oldest (seq 1) acknowledged and still in the transport"),
            std::string::npos)
      << w.summary();
}

TEST(SendWindow, GiveUpEndsEverythingOldestFirstAndLaterAcknowledgementsAreOldNews) {
  SendWindow w;
  Outcomes out;
  for (uint64_t i = 1; i <= 3; ++i) w.add(1, nullptr, 0, out.track(i));
  EXPECT_TRUE(w.acknowledge(1));
  w.giveUp();
  ASSERT_EQ(out.ended.size(), 3u);
  EXPECT_EQ(out.ended[1], std::make_pair(uint64_t{2}, DeliveryOutcome::GivenUp));
  EXPECT_EQ(out.ended[2], std::make_pair(uint64_t{3}, DeliveryOutcome::GivenUp));
  EXPECT_FALSE(w.acknowledge(3));
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.summary(), "nothing outstanding");
}

TEST(SendWindow, ACompletionMayAddTheNextMessage) {
  SendWindow w;
  std::vector<uint64_t> seqs;
  std::function<void(DeliveryOutcome)> chain = [&](DeliveryOutcome) {
    if (seqs.size() < 3) seqs.push_back(w.add(1, nullptr, 0, chain)->seq);
  };
  w.add(1, nullptr, 0, chain);
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_TRUE(w.acknowledge(2));
  EXPECT_EQ(seqs, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(w.messages(), 1u);
}

TEST(SendWindow, ProgressMovesOnAcknowledgementAndOnAddWhileNoAnswerIsDue) {
  SendWindow w;
  Outcomes out;
  EXPECT_FALSE(w.awaitingAcknowledgement());
  w.add(1, nullptr, 0, out.track(1));
  EXPECT_TRUE(w.awaitingAcknowledgement());
  const auto started = w.progress();
  w.add(1, nullptr, 0, out.track(2));
  EXPECT_EQ(w.progress(), started) << "a busy window's silence runs on";
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_GE(w.progress(), started);
}

// The failover case: a message went on a path that then went quiet, and
// again on another; the peer acknowledged the second copy while the first
// is still in the transport. No answer is due, so the path in use is not
// silent, and the next message's wait starts when it is added.
TEST(SendWindow, AnAcknowledgedMessageHeldByTheTransportAwaitsNoAnswer) {
  SendWindow w;
  Outcomes out;
  char buf[8] = {};
  auto m = w.add(1, buf, sizeof buf, out.track(1));
  w.transmitting(*m);  // on the path that went quiet
  w.transmitting(*m);  // again on the next one
  w.transmitted(*m);
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_TRUE(out.ended.empty()) << "the first copy still reads the buffer";
  EXPECT_FALSE(w.awaitingAcknowledgement());
  EXPECT_EQ(w.summary(), "1 outstanding, the oldest (seq 1) acknowledged and still in the transport");

  const auto acked_at = w.progress();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  w.add(1, buf, sizeof buf, out.track(2));
  EXPECT_TRUE(w.awaitingAcknowledgement());
  EXPECT_GT(w.progress(), acked_at) << "the new message's wait starts when it is added, not at the last answer";

  w.transmitted(*m);  // the quiet path's endpoint closed: its copy ends
  ASSERT_EQ(out.ended.size(), 1u);
  EXPECT_EQ(out.ended[0], std::make_pair(uint64_t{1}, DeliveryOutcome::Delivered));
  EXPECT_TRUE(w.awaitingAcknowledgement());
}

// A striped message's chunks over paths 0 and 1, sent at `at`.
void stripe(SendWindow::Message& m, std::initializer_list<std::pair<size_t, size_t>> path_and_bytes,
            SendWindow::Clock::time_point at) {
  size_t offset = 0;
  for (const auto& [path, bytes] : path_and_bytes) {
    m.chunks.push_back({path, offset, bytes, at, false});
    offset += bytes;
  }
}

TEST(SendWindow, AChunkAcknowledgementIsTakenOnceAndNamesItsPath) {
  SendWindow w;
  Outcomes out;
  char buf[12];
  auto m = w.add(1, buf, 12, out.track(1));
  const auto t = SendWindow::Clock::now();
  stripe(*m, {{0, 4}, {1, 4}, {0, 4}}, t);
  const SendWindow::Chunk* c = w.acknowledgeChunk(1, 4);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->path, 1u);
  EXPECT_EQ(c->bytes, 4u);
  EXPECT_EQ(c->sent_at, t);
  EXPECT_EQ(w.acknowledgeChunk(1, 4), nullptr) << "twice";
  EXPECT_EQ(w.acknowledgeChunk(1, 5), nullptr) << "no chunk there";
  EXPECT_EQ(w.acknowledgeChunk(2, 0), nullptr) << "no such message";
  EXPECT_TRUE(out.ended.empty()) << "a chunk is not the message";
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_EQ(w.acknowledgeChunk(1, 0), nullptr) << "the message is acknowledged whole";
  EXPECT_EQ(out.ended.size(), 1u);
}

TEST(SendWindow, TheChunksOfAPathThatWentDownGoAgainInOrder) {
  SendWindow w;
  Outcomes out;
  char buf[2][12];
  const auto t0 = SendWindow::Clock::now();
  auto a = w.add(1, buf[0], 12, out.track(1));
  stripe(*a, {{0, 4}, {1, 4}, {1, 4}}, t0);
  auto b = w.add(1, buf[1], 12, out.track(2));
  stripe(*b, {{1, 6}, {0, 6}}, t0 + std::chrono::milliseconds(1));
  ASSERT_NE(w.acknowledgeChunk(1, 4), nullptr);
  EXPECT_EQ(w.bytesOn(1), 10u);
  EXPECT_EQ(w.bytesOn(0), 10u);
  EXPECT_EQ(w.oldestOn(1), t0);
  const auto again = w.unacknowledgedOn(1);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].message->seq, 1u);
  EXPECT_EQ(again[0].message->chunks[again[0].index].offset, 8u);
  EXPECT_EQ(again[1].message->seq, 2u);
  EXPECT_EQ(again[1].message->chunks[again[1].index].offset, 0u);
  const auto t1 = t0 + std::chrono::milliseconds(5);
  for (const auto& c : again) SendWindow::resent(c, 0, t1);
  EXPECT_EQ(w.bytesOn(1), 0u);
  EXPECT_FALSE(w.oldestOn(1));
  EXPECT_EQ(w.bytesOn(0), 20u);
  EXPECT_EQ(w.oldestOn(0), t0);
  // A message acknowledged whole has nothing left to send again.
  EXPECT_TRUE(w.acknowledge(1));
  EXPECT_EQ(w.unacknowledgedOn(0).size(), 2u) << "message 2's two chunks";
}

// --------------------------------------------------------------- receiving

struct Received {
  std::vector<std::string> got;  // "outcome:length:bytes"
  ReceiveOrder::Done into(std::vector<char>& buf) {
    return [this, &buf](DeliveryOutcome o, size_t length) {
      const char* name = o == DeliveryOutcome::Delivered ? "ok" : o == DeliveryOutcome::Truncated ? "trunc" : "gone";
      got.push_back(std::string(name) + ":" + std::to_string(length) + ":" +
                    std::string(buf.data(), std::min(buf.size(), length)));
    };
  }
};

ReceiveOrder::Taken arriveText(ReceiveOrder& r, uint64_t seq, uint64_t channel, const std::string& text,
                               void* lender = nullptr) {
  return r.arrive(seq, channel, text.data(), text.size(), lender);
}

TEST(ReceiveOrder, DeliversInSequenceOrderWhateverOrderItArrivesIn) {
  ReceiveOrder r;
  Received rec;
  std::vector<std::vector<char>> bufs(3, std::vector<char>(8));
  for (auto& b : bufs) EXPECT_NE(r.post(1, b.data(), b.size(), rec.into(b)), 0u);
  EXPECT_EQ(arriveText(r, 3, 1, "three"), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(arriveText(r, 2, 1, "two"), ReceiveOrder::Taken::Copied);
  EXPECT_TRUE(rec.got.empty()) << "1 is missing";
  EXPECT_EQ(r.delivered(), 0u);
  EXPECT_EQ(arriveText(r, 1, 1, "one"), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(r.delivered(), 3u);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:3:one", "ok:3:two", "ok:5:three"}));
}

TEST(ReceiveOrder, ADuplicateIsNeverDeliveredTwice) {
  ReceiveOrder r;
  EXPECT_EQ(arriveText(r, 1, 1, "a"), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(arriveText(r, 3, 1, "c"), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(arriveText(r, 1, 1, "a"), ReceiveOrder::Taken::Duplicate);
  EXPECT_EQ(arriveText(r, 3, 1, "c"), ReceiveOrder::Taken::Duplicate) << "early, and already here";
  EXPECT_EQ(arriveText(r, 2, 1, "b"), ReceiveOrder::Taken::Copied);
  std::vector<char> b(4);
  Received rec;
  std::string seen;
  while (r.waiting(1)) {
    EXPECT_EQ(r.post(1, b.data(), b.size(), rec.into(b)), 0u);
  }
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:1:a", "ok:1:b", "ok:1:c"}));
}

TEST(ReceiveOrder, MatchesByChannelOldestReceiveFirst) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> x1(4), x2(4), y1(4);
  r.post(10, x1.data(), x1.size(), rec.into(x1));
  r.post(10, x2.data(), x2.size(), rec.into(x2));
  r.post(20, y1.data(), y1.size(), rec.into(y1));
  arriveText(r, 1, 20, "y");
  arriveText(r, 2, 10, "x1");
  arriveText(r, 3, 10, "x2");
  arriveText(r, 4, 10, "x3");
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:1:y", "ok:2:x1", "ok:2:x2"}));
  EXPECT_TRUE(r.waiting(10));
  EXPECT_FALSE(r.waiting(20));
}

TEST(ReceiveOrder, ALongerMessageIsTruncatedAndReportsTheSendersLength) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> b(3);
  r.post(1, b.data(), b.size(), rec.into(b));
  arriveText(r, 1, 1, "abcdef");
  arriveText(r, 2, 1, "ghijkl");  // waits, then meets a short receive
  EXPECT_EQ(r.post(1, b.data(), b.size(), rec.into(b)), 0u);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"trunc:6:abc", "trunc:6:ghi"}));
}

TEST(ReceiveOrder, CancelTakesBackOnlyAReceiveNothingMatched) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> a(4), b(4);
  const uint64_t first = r.post(1, a.data(), a.size(), rec.into(a));
  const uint64_t second = r.post(1, b.data(), b.size(), rec.into(b));
  arriveText(r, 1, 1, "m");
  EXPECT_FALSE(r.cancel(first)) << "matched already";
  EXPECT_TRUE(r.cancel(second));
  EXPECT_FALSE(r.cancel(second));
  EXPECT_FALSE(r.cancel(12345));
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:1:m", "gone:0:"}));
}

// Lent memory is given back exactly once, whether a receive takes it, it
// waits and is dropped, or it came early.
std::vector<const char*> released;
std::vector<size_t> released_lengths;
void noteRelease(void* lender, const char* data, size_t length) {
  released_lengths.push_back(length);
  EXPECT_EQ(lender, &released);
  released.push_back(data);
}

TEST(ReceiveOrder, LentMemoryIsHeldWithoutACopyAndGivenBackExactlyOnce) {
  released.clear();
  released_lengths.clear();
  {
    ReceiveOrder r(&noteRelease);
    const std::string one = "one", two = "two", three = "three";
    EXPECT_EQ(arriveText(r, 1, 1, one, &released), ReceiveOrder::Taken::Held);
    EXPECT_EQ(arriveText(r, 3, 1, three, &released), ReceiveOrder::Taken::Held);
    EXPECT_TRUE(released.empty());
    Received rec;
    std::vector<char> b(8);
    EXPECT_EQ(r.post(1, b.data(), b.size(), rec.into(b)), 0u);
    ASSERT_EQ(released.size(), 1u);
    EXPECT_EQ(released[0], one.data()) << "the lent bytes themselves, not a copy";
    // With a receive posted, an in-order arrival is copied out at once and
    // never held.
    r.post(1, b.data(), b.size(), rec.into(b));
    EXPECT_EQ(arriveText(r, 2, 1, two, &released), ReceiveOrder::Taken::Copied);
    EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:3:one", "ok:3:two"}));
    EXPECT_TRUE(r.waiting(1)) << "three followed two";
    EXPECT_EQ(released.size(), 1u);
  }  // three is dropped with the order
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released_lengths, (std::vector<size_t>{3, 5})) << "each with the length that was lent";
}

TEST(ReceiveOrder, WithoutAReleaseFunctionLentMemoryIsCopied) {
  ReceiveOrder r;
  std::string text = "abc";
  EXPECT_EQ(arriveText(r, 1, 1, text, &released), ReceiveOrder::Taken::Copied);
  text = "xyz";  // the transport reuses its memory
  Received rec;
  std::vector<char> b(4);
  r.post(1, b.data(), b.size(), rec.into(b));
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:3:abc"}));
}

TEST(ReceiveOrder, GiveUpEndsEveryPostedReceiveAndEmptyMessagesNeedNoBuffer) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> none;
  r.post(1, nullptr, 0, rec.into(none));
  EXPECT_EQ(r.arrive(1, 1, nullptr, 0, nullptr), ReceiveOrder::Taken::Copied);
  const uint64_t id = r.post(2, nullptr, 0, rec.into(none));
  r.post(3, nullptr, 0, rec.into(none));
  r.giveUp();
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:0:", "gone:0:", "gone:0:"}));
  EXPECT_FALSE(r.cancel(id));
}

// A window and an order joined by a path that drops, duplicates and
// reorders, with retransmission of whatever is unacknowledged: every
// message arrives exactly once, in order, and every send completes.
TEST(Delivery, ExactlyOnceInOrderOverALossyReorderingPath) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    SendWindow w;
    ReceiveOrder r;
    constexpr int kMessages = 200;
    std::vector<uint64_t> payload(kMessages);
    std::iota(payload.begin(), payload.end(), 1000);
    int completed = 0;
    for (int i = 0; i < kMessages; ++i) {
      w.add(5, &payload[static_cast<size_t>(i)], sizeof(uint64_t), [&](DeliveryOutcome o) {
        EXPECT_EQ(o, DeliveryOutcome::Delivered);
        ++completed;
      });
    }
    std::vector<uint64_t> got;
    std::vector<uint64_t> slot(kMessages + 1);
    int posted = 0;
    auto postOne = [&] {
      if (posted >= kMessages) return;
      uint64_t* into = &slot[static_cast<size_t>(posted++)];
      r.post(5, into, sizeof *into, [&, into](DeliveryOutcome o, size_t length) {
        EXPECT_EQ(o, DeliveryOutcome::Delivered);
        EXPECT_EQ(length, sizeof(uint64_t));
        got.push_back(*into);
      });
    };
    for (int round = 0; round < 1000 && completed < kMessages; ++round) {
      auto batch = w.unacknowledged();
      std::shuffle(batch.begin(), batch.end(), rng);
      for (auto& m : batch) {
        const unsigned fate = rng() % 10;
        if (fate < 3) continue;  // lost
        const int copies = fate == 9 ? 2 : 1;
        for (int c = 0; c < copies; ++c) {
          r.arrive(m->seq, m->channel, static_cast<const char*>(m->buffer), m->bytes, nullptr);
        }
      }
      if (rng() % 3 != 0) w.acknowledge(r.delivered());  // acknowledgements get lost too
      for (int k = 0; k < 7; ++k) postOne();
    }
    while (posted < kMessages) postOne();
    ASSERT_EQ(completed, kMessages) << "seed " << seed;
    ASSERT_EQ(got.size(), payload.size()) << "seed " << seed;
    EXPECT_EQ(got, payload) << "seed " << seed;
  }
}

// ---------------------------------------------------------------- striped

ReceiveOrder::Taken chunk(ReceiveOrder& r, uint64_t seq, uint64_t channel, const std::string& whole, size_t offset,
                          size_t length, void* lender = nullptr) {
  return r.arriveChunk(seq, channel, whole.size(), offset, whole.data() + offset, length, lender);
}

TEST(StripedOrder, ChunksGoStraightIntoAPostedReceiveInAnyOrder) {
  released.clear();
  ReceiveOrder r(&noteRelease);
  Received rec;
  std::vector<char> b(16);
  r.post(1, b.data(), b.size(), rec.into(b));
  const std::string m = "abcdefghijkl";
  EXPECT_EQ(chunk(r, 1, 1, m, 8, 4, &released), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(chunk(r, 1, 1, m, 0, 4, &released), ReceiveOrder::Taken::Copied);
  EXPECT_TRUE(rec.got.empty());
  EXPECT_EQ(chunk(r, 1, 1, m, 8, 4, &released), ReceiveOrder::Taken::Duplicate) << "sent again after a cut";
  EXPECT_EQ(chunk(r, 1, 1, m, 4, 4, &released), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:12:abcdefghijkl"}));
  EXPECT_TRUE(released.empty()) << "nothing was held";
  EXPECT_EQ(r.delivered(), 1u);
  EXPECT_EQ(chunk(r, 1, 1, m, 0, 4), ReceiveOrder::Taken::Duplicate) << "delivered already";
}

TEST(StripedOrder, ChunksBeforeTheReceiveAreHeldThenCopiedInOnce) {
  released.clear();
  {
    ReceiveOrder r(&noteRelease);
    Received rec;
    const std::string m = "0123456789ab";
    EXPECT_EQ(chunk(r, 1, 1, m, 4, 4, &released), ReceiveOrder::Taken::Held);
    EXPECT_EQ(chunk(r, 1, 1, m, 0, 4, &released), ReceiveOrder::Taken::Held);
    std::vector<char> b(12);
    EXPECT_NE(r.post(1, b.data(), b.size(), rec.into(b)), 0u) << "incomplete: bound, not done";
    EXPECT_EQ(released.size(), 2u) << "the held chunks were copied in and given back";
    EXPECT_EQ(chunk(r, 1, 1, m, 8, 4, &released), ReceiveOrder::Taken::Copied);
    EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:12:0123456789ab"}));
  }
  EXPECT_EQ(released.size(), 2u) << "each exactly once";
}

TEST(StripedOrder, ACompleteMessageWithNoReceiveWaitsAsOneCopy) {
  released.clear();
  ReceiveOrder r(&noteRelease);
  const std::string m = "stripedmessage";
  chunk(r, 1, 5, m, 7, 7, &released);
  chunk(r, 1, 5, m, 0, 7, &released);
  EXPECT_TRUE(r.waiting(5));
  EXPECT_EQ(released.size(), 2u) << "the chunks went back once copied";
  Received rec;
  std::vector<char> b(32);
  EXPECT_EQ(r.post(5, b.data(), b.size(), rec.into(b)), 0u);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:14:stripedmessage"}));
}

TEST(StripedOrder, BindsOnlyOnceEveryMessageAheadIsKnown) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> a(8), b(8);
  const uint64_t first = r.post(1, a.data(), a.size(), rec.into(a));
  const uint64_t second = r.post(1, b.data(), b.size(), rec.into(b));
  const std::string two = "22223333";
  // Message 2 (channel 1) comes before message 1, whose channel nobody
  // knows yet: 2 may not take the first receive.
  chunk(r, 2, 1, two, 0, 4);
  EXPECT_TRUE(r.cancel(first)) << "not bound";
  const uint64_t again = r.post(1, a.data(), a.size(), rec.into(a));
  // Message 1 is on channel 1 too: it takes `second` (now the oldest), and
  // 2 binds to `again`.
  arriveText(r, 1, 1, "one");
  EXPECT_FALSE(r.cancel(again)) << "bound to message 2";
  chunk(r, 2, 1, two, 4, 4);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"gone:0:", "ok:3:one", "ok:8:22223333"}));
  EXPECT_FALSE(r.cancel(second));
}

TEST(StripedOrder, AMessageAheadOnAnotherChannelTakesNoReceiveOfIt) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> a(8);
  r.post(1, a.data(), a.size(), rec.into(a));
  const std::string two = "abcdefgh";
  arriveText(r, 1, 9, "x");  // message 1, on channel 9: it waits there
  chunk(r, 3, 1, two, 0, 4);
  // Message 2 is unknown: 3 cannot bind.
  chunk(r, 2, 7, std::string("seven"), 0, 5);  // message 2 on channel 7, complete
  chunk(r, 3, 1, two, 4, 4);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"ok:8:abcdefgh"}));
  EXPECT_TRUE(r.waiting(9));
  EXPECT_TRUE(r.waiting(7));
}

TEST(StripedOrder, ContradictionsAreRefusedAndChangeNothing) {
  ReceiveOrder r;
  const std::string m = "abcdefgh";
  EXPECT_EQ(chunk(r, 1, 1, m, 0, 4), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(r.arriveChunk(1, 2, 8, 4, m.data() + 4, 4, nullptr), ReceiveOrder::Taken::Refused) << "other channel";
  EXPECT_EQ(r.arriveChunk(1, 1, 9, 4, m.data() + 4, 4, nullptr), ReceiveOrder::Taken::Refused) << "other total";
  EXPECT_EQ(r.arriveChunk(1, 1, 8, 2, m.data() + 2, 4, nullptr), ReceiveOrder::Taken::Refused) << "overlap";
  EXPECT_EQ(r.arriveChunk(1, 1, 8, 6, m.data() + 6, 4, nullptr), ReceiveOrder::Taken::Refused) << "past the end";
  EXPECT_EQ(arriveText(r, 1, 1, "whole"), ReceiveOrder::Taken::Refused) << "whole and striped";
  EXPECT_EQ(r.arriveChunk(2, 1, 4, 3, m.data(), 4, nullptr), ReceiveOrder::Taken::Refused) << "a new message's";
  EXPECT_EQ(arriveText(r, 2, 1, "two"), ReceiveOrder::Taken::Copied) << "2 was not kept as striped";
  EXPECT_EQ(chunk(r, 1, 1, m, 4, 4), ReceiveOrder::Taken::Copied);
  EXPECT_EQ(r.delivered(), 2u);
}

TEST(StripedOrder, AShortReceiveIsTruncated) {
  ReceiveOrder r;
  Received rec;
  std::vector<char> b(6);
  r.post(1, b.data(), b.size(), rec.into(b));
  const std::string m = "abcdefghijkl";
  chunk(r, 1, 1, m, 8, 4);
  chunk(r, 1, 1, m, 4, 4);
  chunk(r, 1, 1, m, 0, 4);
  EXPECT_EQ(rec.got, (std::vector<std::string>{"trunc:12:abcdef"}));
}

TEST(StripedOrder, GivingUpEndsBoundReceivesAndDroppingGivesBackWhatIsHeld) {
  released.clear();
  {
    ReceiveOrder r(&noteRelease);
    Received rec;
    std::vector<char> a(8), b(8);
    const std::string one = "11112222", two = "33334444";
    r.post(1, a.data(), a.size(), rec.into(a));
    chunk(r, 1, 1, one, 0, 4, &released);  // bound
    chunk(r, 2, 1, two, 0, 4, &released);  // held: no receive for it
    EXPECT_EQ(released.size(), 0u);
    r.dropArrivals();
    EXPECT_EQ(released.size(), 1u);
    EXPECT_EQ(rec.got, (std::vector<std::string>{"gone:0:"}));
    r.post(1, b.data(), b.size(), rec.into(b));
    chunk(r, 3, 2, two, 0, 4, &released);  // held
    r.giveUp();
    EXPECT_EQ(rec.got, (std::vector<std::string>{"gone:0:", "gone:0:"}));
  }
  EXPECT_EQ(released.size(), 2u);
}

// A random stream from one sender: messages whole or in chunks over a few
// channels, arriving in any order, some twice; receives posted at random
// moments. Every receive gets the messages of its channel in order, whole,
// and lent memory goes back exactly once.
TEST(StripedOrder, RandomArrivalsDeliverEveryMessageInOrder) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    released.clear();
    const int kMessages = 40;
    struct Message {
      uint64_t channel;
      std::string text;
      bool striped;
    };
    std::vector<Message> msgs;
    std::vector<std::pair<uint64_t, size_t>> pieces;  // (seq, chunk index)
    std::vector<std::vector<std::pair<size_t, size_t>>> chunks_of(kMessages + 1);
    for (int i = 1; i <= kMessages; ++i) {
      Message m;
      m.channel = std::uniform_int_distribution<uint64_t>(1, 3)(rng);
      const size_t len = std::uniform_int_distribution<size_t>(0, 40)(rng);
      for (size_t k = 0; k < len; ++k) m.text.push_back(static_cast<char>('a' + (i + k) % 26));
      m.striped = len > 0 && rng() % 2;
      msgs.push_back(m);
      if (m.striped) {
        size_t at = 0;
        while (at < len) {
          const size_t n = std::min(len - at, std::uniform_int_distribution<size_t>(1, 12)(rng));
          chunks_of[i].push_back({at, n});
          at += n;
        }
      } else {
        chunks_of[i].push_back({0, len});
      }
      for (size_t c = 0; c < chunks_of[i].size(); ++c) {
        pieces.push_back({static_cast<uint64_t>(i), c});
        if (rng() % 5 == 0) pieces.push_back({static_cast<uint64_t>(i), c});  // a duplicate
      }
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    std::map<uint64_t, std::vector<std::string>> want, got;
    for (const auto& m : msgs) want[m.channel].push_back(m.text);
    std::deque<std::vector<char>> buffers;
    auto post = [&](uint64_t channel) {
      buffers.emplace_back(64);
      auto& b = buffers.back();
      ReceiveOrder::Done done = [&got, &b, channel](DeliveryOutcome o, size_t length) {
        ASSERT_EQ(o, DeliveryOutcome::Delivered);
        got[channel].push_back(std::string(b.data(), length));
      };
      return std::make_pair(&b, done);
    };
    {
      ReceiveOrder r(&noteRelease);
      size_t lent = 0;
      for (const auto& [seq, c] : pieces) {
        if (rng() % 3 == 0) {
          const uint64_t channel = std::uniform_int_distribution<uint64_t>(1, 3)(rng);
          auto [b, done] = post(channel);
          r.post(channel, b->data(), b->size(), done);
        }
        const Message& m = msgs[seq - 1];
        const auto [offset, n] = chunks_of[seq][c];
        ReceiveOrder::Taken t =
            m.striped ? r.arriveChunk(seq, m.channel, m.text.size(), offset, m.text.data() + offset, n, &released)
                      : r.arrive(seq, m.channel, m.text.data(), m.text.size(), &released);
        ASSERT_NE(t, ReceiveOrder::Taken::Refused) << "seed " << seed;
        lent += t == ReceiveOrder::Taken::Held;
      }
      ASSERT_EQ(r.delivered(), static_cast<uint64_t>(kMessages)) << "seed " << seed;
      for (uint64_t channel = 1; channel <= 3; ++channel) {
        while (r.waiting(channel)) {
          auto [b, done] = post(channel);
          EXPECT_EQ(r.post(channel, b->data(), b->size(), done), 0u);
        }
      }
      EXPECT_EQ(released.size(), lent) << "seed " << seed;
      for (uint64_t channel = 1; channel <= 3; ++channel) {
        EXPECT_EQ(got[channel], want[channel]) << "seed " << seed << ", channel " << channel;
      }
    }
  }
}

}  // namespace
}  // namespace mw
