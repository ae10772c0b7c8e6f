// Fail-operational links (issue 16): members in network namespaces of
// their own, joined by two links (veth pairs, or a port on each of two
// bridges), over which a UCX world runs checked traffic while the test cuts
// links. A cut link between live members must cost nothing but a stall:
// no break, every message exactly once, in order, with its bytes. Cutting
// every link breaks the world, and only it; a kill -9 breaks at once. Each
// test reads the links' byte counters to show the traffic crossed the link
// it claims to. Redis is reached over a unix socket, which no cut touches.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/checked_traffic.h"
#include "tools/lab/netns.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace std::chrono_literals;
using mwlab::MemberBoard;
using mwlab::monotonicNs;
using mwlab::NetLab;
using mwlab::NetLink;
using mwlab::TrafficSpec;
using Cut = mwlab::NetCut;
using Lab = mwlab::Rails;

namespace {

constexpr size_t kMessageBytes = 64 * 1024;
constexpr int kWindow = 4;
constexpr int kIntervalUs = 2000;        // per direction: 500 messages/s, 32 MB/s
constexpr int kHeartbeatIntervalMs = 100;
constexpr int kHeartbeatTimeoutMs = 1000;

struct Board {
  std::atomic<int> stop{0};
  MemberBoard fo[3];    // the world under test
  MemberBoard side[3];  // a second world of the same processes, on another link
};

TrafficSpec specFor(const std::string& redis_url, const std::string& world, int rank, int size,
                    const std::vector<int>& links, int heartbeat_timeout_ms = kHeartbeatTimeoutMs) {
  TrafficSpec s;
  s.redis_url = redis_url;
  s.world = world;
  s.rank = rank;
  s.size = size;
  s.message_bytes = kMessageBytes;
  s.window = kWindow;
  s.interval_us = kIntervalUs;
  s.settings = {{"data_addresses", Lab::addresses(links, rank)},
                {"path_timeout_ms", "100"},
                {"heartbeat_interval_ms", std::to_string(kHeartbeatIntervalMs)},
                {"heartbeat_timeout_ms", std::to_string(heartbeat_timeout_ms)}};
  return s;
}

bool cut(Lab& lab, const NetLink& l, Cut how, bool on) { return lab.lab().setCut(l, how, on); }

int64_t totalDelivered(const MemberBoard* b, int n) {
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += b[i].delivered.load();
  return sum;
}

// What crossed member `r`'s two links during a phase, against the payload
// delivered meanwhile.
struct Phase {
  uint64_t link_bytes[2] = {0, 0};
  uint64_t payload = 0;
};

// Lets the traffic run for `duration` and measures it; payload counts what
// the members delivered, less a window at each end of the phase that may
// have crossed before or after the counters were read.
Phase measure(const Lab& lab, int r, const MemberBoard* boards, int n, uint64_t payload_per_delivery,
              std::chrono::milliseconds duration) {
  Phase p;
  uint64_t before[2] = {lab.bytes(r, 0), lab.bytes(r, 1)};
  int64_t d0 = totalDelivered(boards, n);
  std::this_thread::sleep_for(duration);
  int64_t d1 = totalDelivered(boards, n);
  for (int k = 0; k < 2; ++k) p.link_bytes[k] = lab.bytes(r, k) - before[k];
  int64_t slack = 2 * kWindow * n;
  p.payload = d1 - d0 > slack ? static_cast<uint64_t>(d1 - d0 - slack) * payload_per_delivery : 0;
  return p;
}

// The traffic crossed link `used` of member r and (almost) nothing crossed
// the other one.
void expectCarriedBy(const Phase& p, int used, const char* phase) {
  SCOPED_TRACE(std::string(phase) + ": link 0 " + std::to_string(p.link_bytes[0]) + " B, link 1 " +
               std::to_string(p.link_bytes[1]) + " B, payload " + std::to_string(p.payload) + " B");
  EXPECT_GT(p.payload, 1u << 20) << "too little was delivered to judge";
  EXPECT_GE(p.link_bytes[used], p.payload) << "link " << used << " did not carry the payload";
  EXPECT_LT(p.link_bytes[1 - used], p.payload / 10) << "link " << 1 - used << " carried traffic";
}

std::string eventsOf(const MemberBoard* b, int n, int64_t origin) {
  std::string out;
  for (int i = 0; i < n; ++i) out += "\n  member " + std::to_string(i) + ": " + b[i].eventText(origin);
  return out;
}

bool waitDelivered(const MemberBoard* b, int n, int64_t more, std::chrono::milliseconds limit) {
  std::vector<int64_t> base;
  for (int i = 0; i < n; ++i) base.push_back(b[i].delivered.load());
  return eventually([&] {
    for (int i = 0; i < n; ++i) {
      if (b[i].delivered.load() < base[static_cast<size_t>(i)] + more) return false;
    }
    return true;
  }, limit);
}

// Member `r` and at least one other saw `type` about a peer since `since`.
// A path fault is seen by whoever sends over the path (acknowledgements
// come back on the sender's own connection), so a member that only
// receives across the cut link has nothing to report.
bool waitEvents(const MemberBoard* b, int n, int r, mw_event_type_t type, int64_t since,
                std::chrono::milliseconds limit) {
  return eventually([&] {
    int others = 0;
    for (int i = 0; i < n; ++i) {
      if (i != r && b[i].countEvents(type, since) > 0) ++others;
    }
    return b[r].countEvents(type, since) > 0 && others > 0;
  }, limit);
}

void expectClean(const MemberBoard& b, int member) {
  SCOPED_TRACE("member " + std::to_string(member));
  EXPECT_EQ(b.broken_ns.load(), 0) << "the world broke";
  EXPECT_EQ(b.errors.load(), 0);
  EXPECT_EQ(b.lost.load(), 0);
  EXPECT_EQ(b.duplicated.load(), 0);
  EXPECT_EQ(b.reordered.load(), 0);
  EXPECT_EQ(b.corrupt.load(), 0);
  EXPECT_EQ(b.finished.load(), 1);
}

bool eventNames(const MemberBoard& b, mw_event_type_t type, int64_t since, const std::string& text) {
  int n = std::min(b.n_events.load(), MemberBoard::kMaxEvents);
  for (int i = 0; i < n; ++i) {
    const auto& e = b.events[i];
    if (e.type == type && e.at_ns >= since && std::string(e.detail).find(text) != std::string::npos) return true;
  }
  return false;
}

// Every path event of member `i` since `since` is about link k as its
// fields say it, not only its text: path k, between member i's address on
// that link and the peer's. A PATH_DOWN found by silence counts, in its
// fields, the messages its text says were outstanding.
void expectPathFields(const MemberBoard& b, int i, int64_t since, int k) {
  const std::string subnet = "10.71." + std::to_string(k + 1) + ".";
  int n = std::min(b.n_events.load(), MemberBoard::kMaxEvents);
  for (int j = 0; j < n; ++j) {
    const auto& e = b.events[j];
    if (e.at_ns < since || (e.type != MW_EVENT_PATH_DOWN && e.type != MW_EVENT_PATH_UP)) continue;
    SCOPED_TRACE("member " + std::to_string(i) + ": '" + e.detail + "'");
    EXPECT_EQ(e.path_index, k);
    EXPECT_EQ(std::string(e.local_address), subnet + std::to_string(i + 1));
    EXPECT_EQ(std::string(e.remote_address), subnet + std::to_string(e.peer_rank + 1));
    const char* said = std::strstr(e.detail, "(path_timeout_ms; ");
    if (e.type == MW_EVENT_PATH_DOWN && said) {
      const unsigned long long outstanding = std::strtoull(said + std::strlen("(path_timeout_ms; "), nullptr, 10);
      EXPECT_EQ(e.outstanding_messages, outstanding);
      if (outstanding > 0) {
        EXPECT_GT(e.outstanding_bytes, 0u);
      }
    }
  }
}

// Cuts member r's link 0, then (once it is back) its link 1, while the n
// members' traffic runs: delivery resumes over the other link, a link that
// carried the traffic when it was cut is reported down (naming its
// address) and then up by member r and a member sending to it, and nothing
// breaks. What the first
// `counted` boards deliver, payload_per_delivery each, must cross r's links.
void cutEachLinkInTurn(Lab& lab, int r, Cut how, const MemberBoard* b, int n, int counted,
                       uint64_t payload_per_delivery) {
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("cut of link " + std::to_string(k) + " of member " + std::to_string(r));
    // Traffic prefers the first link that is up; after link 0 came back it
    // may also stay where it is.
    Phase before = measure(lab, r, b, counted, payload_per_delivery, 1s);
    const int active = before.link_bytes[0] >= before.link_bytes[1] ? 0 : 1;
    expectCarriedBy(before, k == 0 ? 0 : active, "before the cut");
    const int64_t at = monotonicNs();
    ASSERT_TRUE(cut(lab, lab.link(r, k), how, true));
    EXPECT_TRUE(waitDelivered(b, n, 300, 20s)) << "delivery did not resume" << eventsOf(b, n, at);
    expectCarriedBy(measure(lab, r, b, counted, payload_per_delivery, 1s), 1 - k, "during the cut");
    if (active == k) {
      const std::string address = "10.71." + std::to_string(k + 1) + ".";
      EXPECT_TRUE(waitEvents(b, n, r, MW_EVENT_PATH_DOWN, at, 2s)) << eventsOf(b, n, at);
      for (int i = 0; i < n; ++i) {
        if (b[i].countEvents(MW_EVENT_PATH_DOWN, at) == 0) continue;
        EXPECT_TRUE(eventNames(b[i], MW_EVENT_PATH_DOWN, at, address))
            << "member " << i << ": no PATH_DOWN naming " << address << eventsOf(b, n, at);
        expectPathFields(b[i], i, at, k);
      }
    }
    ASSERT_TRUE(cut(lab, lab.link(r, k), how, false));
    if (active == k) {
      EXPECT_TRUE(waitEvents(b, n, r, MW_EVENT_PATH_UP, at, 20s)) << eventsOf(b, n, at);
      // Every member that saw the path go down finds it up on its own
      // probing round; the next phase measures once all of them have.
      for (int i = 0; i < n; ++i) {
        if (b[i].countEvents(MW_EVENT_PATH_DOWN, at) == 0) continue;
        EXPECT_TRUE(eventually([&] { return b[i].countEvents(MW_EVENT_PATH_UP, at) > 0; }, 20s))
            << "member " << i << " saw the path down and never up" << eventsOf(b, n, at);
        expectPathFields(b[i], i, at, k);
      }
      std::this_thread::sleep_for(300ms);
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(b[i].broken_ns.load(), 0) << eventsOf(b, n, at);
  }
}

#define SKIP_WITHOUT_NETNS()                                                     \
  do {                                                                           \
    std::string why_ = mwlab::netnsUnavailable();                              \
    if (!why_.empty()) GTEST_SKIP() << why_;                                     \
  } while (0)

// ---- the lab itself, with plain TCP ------------------------------------------------

struct TcpBoard {
  std::atomic<int> stop{0};
  std::atomic<int> listening{0};
  std::atomic<int64_t> received{0};
};

int tcpSink(TcpBoard& b) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(7100);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1) != 0) return 2;
  b.listening.store(1);
  int c = accept(fd, nullptr, nullptr);
  char buf[65536];
  for (ssize_t n; (n = read(c, buf, sizeof buf)) > 0;) b.received.fetch_add(n);
  return 0;
}

int tcpSource(TcpBoard& b, const std::string& to) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(7100);
  inet_pton(AF_INET, to.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 2;
  static char buf[16384];
  while (!b.stop.load()) {
    if (write(fd, buf, sizeof buf) <= 0) return 3;
    // Paced: the lab's checks need traffic, not load.
    std::this_thread::sleep_for(1ms);
  }
  return 0;
}

}  // namespace

// The harness on its own: TCP between two namespaces crosses the link it is
// addressed over (its counters move, the other link's do not), and each kind
// of cut stops it until the link is whole again.
TEST(FailoverLab, CutsStopTcpAndCountersShowTheLinkUsed) {
  SKIP_WITHOUT_NETNS();
  Lab lab(2, 2);
  mwlab::Shared<TcpBoard> b;
  Workers w;
  w.add([&] { return NetLab::enter(lab.ns(1)) ? tcpSink(*b) : 4; });
  ASSERT_TRUE(eventually([&] { return b->listening.load() == 1; }, 10s));
  w.add([&] { return NetLab::enter(lab.ns(0)) ? tcpSource(*b, Lab::address(0, 1)) : 4; });
  ASSERT_TRUE(eventually([&] { return b->received.load() > (1 << 20); }, 10s));

  uint64_t l0 = lab.bytes(0, 0), l1 = lab.bytes(0, 1);
  int64_t got = b->received.load();
  std::this_thread::sleep_for(300ms);
  EXPECT_GE(lab.bytes(0, 0) - l0, static_cast<uint64_t>(b->received.load() - got));
  EXPECT_LT(lab.bytes(0, 1) - l1, 4096u);

  std::fprintf(stderr, "packet drop by %s\n", lab.lab().dropMethod().c_str());
  for (Cut how : {Cut::Drop, Cut::LinkDown}) {
    ASSERT_TRUE(cut(lab, lab.link(0, 0), how, true));
    std::this_thread::sleep_for(200ms);  // what was in flight lands
    got = b->received.load();
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(b->received.load(), got) << "traffic crossed a cut link";
    ASSERT_TRUE(cut(lab, lab.link(0, 0), how, false));
    // TCP's retransmission backoff decides when it notices.
    EXPECT_TRUE(eventually([&] { return b->received.load() > got + (1 << 20); }, 20s));
  }
  b->stop.store(1);
  EXPECT_TRUE(w.join(20s));
}

// ---- 1. two members, a checked p2p stream --------------------------------------------

// Members 0 and 1 stream to each other in world "fo" over links 0 and 1
// (boards fo); returns once both deliver.
void startStream(Workers& w, const Lab& lab, const std::string& redis_url, Board& b) {
  for (int r = 0; r < 2; ++r) {
    w.add([&, r] {
      if (!NetLab::enter(lab.ns(r))) return 4;
      return mwlab::runCheckedStream(specFor(redis_url, "fo", r, 2, {0, 1}), b.fo[r], b.stop);
    });
  }
  const int64_t t0 = monotonicNs();
  ASSERT_TRUE(waitDelivered(b.fo, 2, 200, 60s)) << eventsOf(b.fo, 2, t0);
}

class FailoverP2p : public ::testing::TestWithParam<Cut> {};

TEST_P(FailoverP2p, CutLinkCostsNoMessageAndNoBreak) {
  SKIP_WITHOUT_NETNS();
  const Cut how = GetParam();
  Lab lab(2, 2);
  RedisServer redis;
  mwlab::Shared<Board> b;
  Workers w;
  const int64_t t0 = monotonicNs();
  ASSERT_NO_FATAL_FAILURE(startStream(w, lab, redis.url(), *b));

  cutEachLinkInTurn(lab, 0, how, b->fo, 2, 2, kMessageBytes);
  b->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (int r = 0; r < 2; ++r) expectClean(b->fo[r], r);
  EXPECT_EQ(b->fo[0].sent.load(), b->fo[1].delivered.load());
  EXPECT_EQ(b->fo[1].sent.load(), b->fo[0].delivered.load());
  std::fprintf(stderr, "events:%s\n", eventsOf(b->fo, 2, t0).c_str());
}

INSTANTIATE_TEST_SUITE_P(Cuts, FailoverP2p, ::testing::Values(Cut::LinkDown, Cut::Drop),
                         [](const auto& info) { return info.param == Cut::LinkDown ? "LinkDown" : "Drop"; });

// ---- 2. three members on two rails, a checked allreduce loop ---------------------------

class FailoverAllreduce : public ::testing::TestWithParam<Cut> {};

TEST_P(FailoverAllreduce, CutLinkCostsNoIterationAndNoBreak) {
  SKIP_WITHOUT_NETNS();
  const Cut how = GetParam();
  Lab lab(3, 2);
  RedisServer redis;
  mwlab::Shared<Board> b;
  Workers w;
  for (int r = 0; r < 3; ++r) {
    w.add([&, r] {
      if (!NetLab::enter(lab.ns(r))) return 4;
      return mwlab::runCheckedAllreduce(specFor(redis.url(), "fo", r, 3, {0, 1}), b->fo[r], b->stop);
    });
  }
  const int64_t t0 = monotonicNs();
  ASSERT_TRUE(waitDelivered(b->fo, 3, 100, 60s)) << eventsOf(b->fo, 3, t0);
  // Each member's share of an iteration crosses its own port at least once.
  // Variant LinkDown cuts member 0's ports, Drop member 1's.
  const int victim = how == Cut::LinkDown ? 0 : 1;
  cutEachLinkInTurn(lab, victim, how, b->fo, 3, 1, kMessageBytes);
  b->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (int r = 0; r < 3; ++r) expectClean(b->fo[r], r);
  EXPECT_EQ(b->fo[0].delivered.load(), b->fo[1].delivered.load());
  EXPECT_EQ(b->fo[0].delivered.load(), b->fo[2].delivered.load());
  EXPECT_EQ(b->fo[0].delivered.load(), b->fo[0].sent.load());
  std::fprintf(stderr, "events:%s\n", eventsOf(b->fo, 3, t0).c_str());
}

INSTANTIATE_TEST_SUITE_P(Cuts, FailoverAllreduce, ::testing::Values(Cut::LinkDown, Cut::Drop),
                         [](const auto& info) { return info.param == Cut::LinkDown ? "LinkDown" : "Drop"; });

// ---- 3. the last link left fails briefly -----------------------------------------------

// Link 0 of member 0 stays down, long past the heartbeat timeout, while
// link 1 carries the stream; then link 1 fails too, for less than the
// heartbeat timeout. Every path is down at once, briefly: the silence
// counts from the last message heard, not from link 0's old fault, and
// what was outstanding on link 1 goes again on its new endpoint once it is
// back. Nothing breaks and nothing is lost.
TEST(Failover, ABriefFaultOfTheLastLinkLeftCostsNoMessageAndNoBreak) {
  SKIP_WITHOUT_NETNS();
  Lab lab(2, 2);
  RedisServer redis;
  mwlab::Shared<Board> b;
  Workers w;
  const int64_t t0 = monotonicNs();
  ASSERT_NO_FATAL_FAILURE(startStream(w, lab, redis.url(), *b));
  ASSERT_TRUE(cut(lab, lab.link(0, 0), Cut::LinkDown, true));
  ASSERT_TRUE(waitDelivered(b->fo, 2, 300, 20s)) << "delivery did not move to link 1" << eventsOf(b->fo, 2, t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(kHeartbeatTimeoutMs + 500));

  const int64_t at = monotonicNs();
  ASSERT_TRUE(cut(lab, lab.link(0, 1), Cut::LinkDown, true));
  std::this_thread::sleep_for(std::chrono::milliseconds(kHeartbeatTimeoutMs * 3 / 10));
  ASSERT_TRUE(cut(lab, lab.link(0, 1), Cut::LinkDown, false));
  EXPECT_TRUE(waitDelivered(b->fo, 2, 300, 20s)) << "delivery did not resume" << eventsOf(b->fo, 2, at);
  // The brief fault was seen, or this tested nothing.
  EXPECT_TRUE(eventNames(b->fo[0], MW_EVENT_PATH_DOWN, at, "10.71.2.")) << eventsOf(b->fo, 2, at);
  EXPECT_TRUE(eventNames(b->fo[0], MW_EVENT_PATH_UP, at, "10.71.2.")) << eventsOf(b->fo, 2, at);

  ASSERT_TRUE(cut(lab, lab.link(0, 0), Cut::LinkDown, false));
  b->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(eventsOf(b->fo, 2, at));
    expectClean(b->fo[r], r);
  }
  EXPECT_EQ(b->fo[0].sent.load(), b->fo[1].delivered.load());
  EXPECT_EQ(b->fo[1].sent.load(), b->fo[0].delivered.load());
}

// ---- 4. every link cut: the world breaks, and only it -------------------------------------

// Two members of a three-link lab, each with two contexts: world "fo" over
// links 0 and 1 (boards fo), world "side" over link 2 alone (boards side).
// Returns once both stream.
void startTwoWorlds(Workers& w, const Lab& lab, const std::string& redis_url, Board& b, int heartbeat_timeout_ms) {
  for (int r = 0; r < 2; ++r) {
    w.add([&, r] {
      if (!NetLab::enter(lab.ns(r))) return 4;
      int side_rc = 0;
      std::thread side([&] {
        side_rc = mwlab::runCheckedStream(specFor(redis_url, "side", r, 2, {2}, heartbeat_timeout_ms), b.side[r],
                                            b.stop);
      });
      int rc = mwlab::runCheckedStream(specFor(redis_url, "fo", r, 2, {0, 1}, heartbeat_timeout_ms), b.fo[r], b.stop);
      side.join();
      return rc ? rc : side_rc;
    });
  }
  const int64_t t0 = monotonicNs();
  ASSERT_TRUE(waitDelivered(b.fo, 2, 200, 60s)) << eventsOf(b.fo, 2, t0);
  ASSERT_TRUE(waitDelivered(b.side, 2, 200, 60s)) << eventsOf(b.side, 2, t0);
}

TEST(Failover, EveryLinkCutBreaksTheWorldAndNothingElse) {
  SKIP_WITHOUT_NETNS();
  Lab lab(2, 3);  // links 0 and 1 for the world under test, 2 for the other
  RedisServer redis;
  mwlab::Shared<Board> b;
  Workers w;
  ASSERT_NO_FATAL_FAILURE(startTwoWorlds(w, lab, redis.url(), *b, kHeartbeatTimeoutMs));
  // Each world on its own links: fo on link 0, side on link 2 only.
  uint64_t l0 = lab.bytes(0, 0), l2 = lab.bytes(0, 2);
  int64_t fo0 = totalDelivered(b->fo, 2), side0 = totalDelivered(b->side, 2);
  std::this_thread::sleep_for(1s);
  EXPECT_GE(lab.bytes(0, 0) - l0, static_cast<uint64_t>(totalDelivered(b->fo, 2) - fo0 - 4 * kWindow) * kMessageBytes);
  EXPECT_GE(lab.bytes(0, 2) - l2,
            static_cast<uint64_t>(totalDelivered(b->side, 2) - side0 - 4 * kWindow) * kMessageBytes);
  EXPECT_LT(lab.bytes(0, 0) - l0,
            (static_cast<uint64_t>(totalDelivered(b->fo, 2) - fo0) + 4 * kWindow) * kMessageBytes * 3 / 2)
      << "the other world's traffic crossed link 0 too";

  const int64_t at = monotonicNs();
  ASSERT_TRUE(lab.lab().setUp(lab.link(0, 0), false));
  ASSERT_TRUE(lab.lab().setUp(lab.link(0, 1), false));
  ASSERT_TRUE(eventually([&] { return b->fo[0].broken_ns.load() && b->fo[1].broken_ns.load(); }, 10s))
      << eventsOf(b->fo, 2, at);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("member " + std::to_string(r));
    const double ms = (b->fo[r].broken_ns.load() - at) / 1e6;
    std::fprintf(stderr, "member %d: broke %.1f ms after both links were cut\n", r, ms);
    // Not before every path stayed down for the heartbeat timeout (a path
    // fault between live members is waited out), and within it plus one
    // interval, with room for a loaded machine.
    EXPECT_GE(ms, kHeartbeatTimeoutMs - kHeartbeatIntervalMs) << eventsOf(b->fo, 2, at);
    EXPECT_LE(ms, kHeartbeatTimeoutMs + kHeartbeatIntervalMs + 2000) << eventsOf(b->fo, 2, at);
    EXPECT_GT(b->fo[r].countEvents(MW_EVENT_PATH_DOWN, at), 0) << "no path reported down before the break";
    EXPECT_EQ(b->fo[r].countEvents(MW_EVENT_WORLD_BROKEN, at), 1) << eventsOf(b->fo, 2, at);
  }
  // The other world of the same processes goes on, over link 2.
  uint64_t l2b = lab.bytes(0, 2);
  EXPECT_TRUE(waitDelivered(b->side, 2, 500, 20s)) << eventsOf(b->side, 2, at);
  EXPECT_GE(lab.bytes(0, 2) - l2b, 500u * kMessageBytes);
  b->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("the other world's events:" + eventsOf(b->side, 2, at));
    expectClean(b->side[r], r);
    EXPECT_EQ(b->fo[r].errors.load(), 0);
    EXPECT_EQ(b->fo[r].duplicated.load() + b->fo[r].reordered.load() + b->fo[r].corrupt.load(), 0);
  }
  EXPECT_EQ(b->side[0].sent.load(), b->side[1].delivered.load());
  EXPECT_EQ(b->side[1].sent.load(), b->side[0].delivered.load());
  std::fprintf(stderr, "events:%s\n", eventsOf(b->fo, 2, at).c_str());
}

// ---- 5. kill -9: a member fault, not a path fault ---------------------------------------------

TEST(Failover, KilledMemberBreaksItsWorldsAtOnceWithoutPathFaults) {
  SKIP_WITHOUT_NETNS();
  // A heartbeat timeout far above the bound below: only the member fault
  // (the process is gone) can break the worlds in time, not a path fault
  // that outlived the heartbeat.
  constexpr int kSlowHeartbeatMs = 10000;
  constexpr int kAtOnceMs = 2000;
  Lab lab(2, 3);
  RedisServer redis;
  mwlab::Shared<Board> b;
  Workers w;
  ASSERT_NO_FATAL_FAILURE(startTwoWorlds(w, lab, redis.url(), *b, kSlowHeartbeatMs));
  uint64_t l0 = lab.bytes(0, 0);
  int64_t fo0 = totalDelivered(b->fo, 2);
  std::this_thread::sleep_for(500ms);
  EXPECT_GE(lab.bytes(0, 0) - l0, static_cast<uint64_t>(totalDelivered(b->fo, 2) - fo0 - 4 * kWindow) * kMessageBytes)
      << "the stream did not cross link 0";

  const int64_t at = monotonicNs();
  ASSERT_EQ(kill(w.pids()[1], SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return b->fo[0].broken_ns.load() && b->side[0].broken_ns.load(); }, 20s))
      << eventsOf(b->fo, 1, at);
  for (MemberBoard* m : {&b->fo[0], &b->side[0]}) {
    const double ms = (m->broken_ns.load() - at) / 1e6;
    std::fprintf(stderr, "broke %.1f ms after the kill\n", ms);
    EXPECT_LE(ms, kAtOnceMs) << m->eventText(at);
    EXPECT_EQ(m->countEvents(MW_EVENT_PATH_DOWN, at), 0) << "taken for a path fault: " << m->eventText(at);
    EXPECT_EQ(m->countEvents(MW_EVENT_WORLD_BROKEN, at), 1) << m->eventText(at);
  }
  int n = std::min(b->fo[0].n_events.load(), MemberBoard::kMaxEvents);
  for (int i = 0; i < n; ++i) {
    if (b->fo[0].events[i].type == MW_EVENT_WORLD_BROKEN) {
      EXPECT_EQ(b->fo[0].events[i].peer_rank, 1);
    }
  }
  b->stop.store(1);
  EXPECT_TRUE(eventually([&] { return b->fo[0].finished.load() && b->side[0].finished.load(); }, 20s));
  for (MemberBoard* m : {&b->fo[0], &b->side[0]}) {
    EXPECT_EQ(m->errors.load(), 0);
    EXPECT_EQ(m->duplicated.load() + m->reordered.load() + m->corrupt.load(), 0);
  }
}
