// A network partition: a world whose members sit on two sides of a link
// that is cut breaks by heartbeat; a world that does not cross the cut is
// untouched. Uses a network namespace and a veth pair made by this test.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/traffic.h"
#include "tools/lab/netns.h"
#include "tools/lab/ports.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

// One namespace joined to ours by a veth pair: 10.213.7.1 here (end a, the
// one the test takes down), .2 there. The faults suite uses 10.213.8.0/24,
// so both can run at once.
const std::string kOuter = "10.213.7.1";
const std::string kInner = "10.213.7.2";

struct Board {
  std::atomic<int> stop{0};
  ProcStats x, y, z;
};

constexpr int kCross = 0, kLocal = 1;

}  // namespace

TEST(Partition, CutLinkBreaksOnlyTheWorldAcrossIt) {
  if (const std::string why = mwlab::netnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
  mwlab::NetLab lab;
  std::string ns;
  mwlab::NetLink link;
  try {
    ns = lab.addNamespace();
    link = lab.addVeth("", kOuter + "/24", ns, kInner + "/24");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cannot make a network namespace and a veth pair: " << e.what();
  }
  const int port = mwlab::freeLoopbackPort();
  RedisServer redis({"--port", std::to_string(port), "--bind", kOuter, "127.0.0.1", "--protected-mode", "no"});
  const std::string tcp_url = "redis://" + kOuter + ":" + std::to_string(port);
  mwlab::Shared<Board> board;
  Workers w;
  // X: one context on the veth for the world across the cut, one on
  // loopback for the world that stays on this side.
  w.add([&] {
    std::thread cross([&] {
      runTraffic(redis.url(), {{"cross", kCross, 0}}, board->x, board->stop, {{"bind_address", kOuter}});
    });
    int rc = runTraffic(redis.url(), {{"local", kLocal, 0}}, board->x, board->stop);
    cross.join();
    return rc;
  });
  w.add([&] {  // Y, behind the link
    if (!mwlab::NetLab::enter(ns)) std::abort();
    return runTraffic(tcp_url, {{"cross", kCross, 1}}, board->y, board->stop, {{"bind_address", kInner}});
  });
  w.add([&] { return runTraffic(redis.url(), {{"local", kLocal, 1}}, board->z, board->stop); });

  ASSERT_TRUE(eventually([&] {
    return board->x.worlds[kCross].received > 50 && board->y.worlds[kCross].received > 50 &&
           board->x.worlds[kLocal].received > 50 && board->z.worlds[kLocal].received > 50;
  }, 30s));

  int64_t cut_at = monotonicNs();
  ASSERT_TRUE(lab.setUp(link, false));
  ASSERT_TRUE(eventually([&] { return board->x.worlds[kCross].broken_at_ns.load() != 0; }, 10s));
  ASSERT_TRUE(eventually([&] { return board->x.worlds[kCross].blamed.load() != -2; }, 2s));
  std::fprintf(stderr, "partition detected after %.1f ms\n", (board->x.worlds[kCross].broken_at_ns - cut_at) / 1e6);
  EXPECT_EQ(board->x.worlds[kCross].blamed.load(), 1);

  // The world on this side of the cut keeps running.
  int64_t local0 = board->x.worlds[kLocal].received;
  EXPECT_TRUE(eventually([&] { return board->x.worlds[kLocal].received > local0 + 200; }, 10s))
      << "local world: X received " << board->x.worlds[kLocal].received.load() << " (" << local0
      << " at the break), Z received " << board->z.worlds[kLocal].received.load() << "; errors X "
      << board->x.errors.load() << ", Z " << board->z.errors.load();
  EXPECT_EQ(board->x.worlds[kLocal].broken_at_ns.load(), 0);
  EXPECT_EQ(board->z.worlds[kLocal].broken_at_ns.load(), 0);

  // Once the link is back, the member that was cut off learns of the break.
  ASSERT_TRUE(lab.setUp(link, true));
  EXPECT_TRUE(eventually([&] { return board->y.worlds[kCross].broken_at_ns.load() != 0; }, 15s));

  board->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (auto* p : {&board->x, &board->y, &board->z}) EXPECT_EQ(p->corrupt.load(), 0);
}
