// A network partition: a world whose members sit on two sides of a link
// that is cut breaks by heartbeat; a world that does not cross the cut is
// untouched. Uses a network namespace and a veth pair made by this test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tests/support/shared_memory.h"
#include "tests/support/traffic.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// One namespace joined to ours by a veth pair: 10.213.7.1 here, .2 there.
class Netns {
 public:
  Netns()
      : ns_("mwt" + std::to_string(getpid())),
        outer_("mwo" + std::to_string(getpid() % 100000)),
        inner_("mwi" + std::to_string(getpid() % 100000)) {
    ok_ = geteuid() == 0 && sh("ip netns add " + ns_) &&
          sh("ip link add " + outer_ + " type veth peer name " + inner_) &&
          sh("ip link set " + inner_ + " netns " + ns_) && sh("ip addr add " + kOuter + "/24 dev " + outer_) &&
          sh("ip link set " + outer_ + " up") &&
          sh("ip netns exec " + ns_ + " ip addr add " + kInner + "/24 dev " + inner_) &&
          sh("ip netns exec " + ns_ + " ip link set " + inner_ + " up") &&
          sh("ip netns exec " + ns_ + " ip link set lo up");
  }
  ~Netns() {
    sh("ip link del " + outer_);
    sh("ip netns del " + ns_);
  }
  bool ok() const { return ok_; }
  void enter() const {  // in a worker, before it makes any socket
    int fd = open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) std::abort();
    close(fd);
    // As `ip netns exec` does: a /sys of this namespace, where UCX looks
    // for network devices.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        umount2("/sys", MNT_DETACH) != 0 || mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0) {
      std::abort();
    }
  }
  bool cut() const { return sh("ip link set " + outer_ + " down"); }
  bool heal() const { return sh("ip link set " + outer_ + " up"); }

  static inline const std::string kOuter = "10.213.7.1";
  static inline const std::string kInner = "10.213.7.2";

 private:
  std::string ns_, outer_, inner_;
  bool ok_ = false;
};

struct Board {
  std::atomic<int> stop{0};
  ProcStats x, y, z;
};

constexpr int kCross = 0, kLocal = 1;

}  // namespace

TEST(Partition, CutLinkBreaksOnlyTheWorldAcrossIt) {
  Netns net;
  if (!net.ok()) GTEST_SKIP() << "needs root and iproute2 to make a network namespace and a veth pair";
  const int port = freeLoopbackPort();
  RedisServer redis({"--port", std::to_string(port), "--bind", Netns::kOuter, "127.0.0.1",
                     "--protected-mode", "no"});
  const std::string tcp_url = "redis://" + Netns::kOuter + ":" + std::to_string(port);
  Shared<Board> board;
  Workers w;
  // X: one context on the veth for the world across the cut, one on
  // loopback for the world that stays on this side.
  w.add([&] {
    std::thread cross([&] {
      runTraffic(redis.url(), {{"cross", kCross, 0}}, board->x, board->stop, {{"bind_address", Netns::kOuter}});
    });
    int rc = runTraffic(redis.url(), {{"local", kLocal, 0}}, board->x, board->stop);
    cross.join();
    return rc;
  });
  w.add([&] {  // Y, behind the link
    net.enter();
    return runTraffic(tcp_url, {{"cross", kCross, 1}}, board->y, board->stop, {{"bind_address", Netns::kInner}});
  });
  w.add([&] { return runTraffic(redis.url(), {{"local", kLocal, 1}}, board->z, board->stop); });

  ASSERT_TRUE(eventually([&] {
    return board->x.worlds[kCross].received > 50 && board->y.worlds[kCross].received > 50 &&
           board->x.worlds[kLocal].received > 50 && board->z.worlds[kLocal].received > 50;
  }, 30s));

  int64_t cut_at = monotonicNs();
  ASSERT_TRUE(net.cut());
  ASSERT_TRUE(eventually([&] { return board->x.worlds[kCross].broken_at_ns.load() != 0; }, 10s));
  ASSERT_TRUE(eventually([&] { return board->x.worlds[kCross].blamed.load() != -2; }, 2s));
  std::fprintf(stderr, "partition detected after %.1f ms\n", (board->x.worlds[kCross].broken_at_ns - cut_at) / 1e6);
  EXPECT_EQ(board->x.worlds[kCross].blamed.load(), 1);

  // The world on this side of the cut keeps running.
  int64_t local0 = board->x.worlds[kLocal].received;
  EXPECT_TRUE(eventually([&] { return board->x.worlds[kLocal].received > local0 + 200; }, 10s));
  EXPECT_EQ(board->x.worlds[kLocal].broken_at_ns.load(), 0);
  EXPECT_EQ(board->z.worlds[kLocal].broken_at_ns.load(), 0);

  // Once the link is back, the member that was cut off learns of the break.
  ASSERT_TRUE(net.heal());
  EXPECT_TRUE(eventually([&] { return board->y.worlds[kCross].broken_at_ns.load() != 0; }, 15s));

  board->stop.store(1);
  EXPECT_TRUE(w.join(60s));
  for (auto* p : {&board->x, &board->y, &board->z}) EXPECT_EQ(p->corrupt.load(), 0);
}
