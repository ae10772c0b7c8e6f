// The same-host path of UCX worlds (core/backends/ucx/ucx_same_host.h):
// large messages between members of one host move by process_vm_readv, in
// order with the small ones that take TCP; a member killed mid-transfer
// fails only its own world; a pair the kernel refuses stays on TCP. Each
// test that moves data checks where it went: through loopback (TCP) or
// not. They run alone (label fault), so that no other test's traffic
// blurs loopback's counters.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <multiworld/multiworld.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using Clock = std::chrono::steady_clock;

const mwtest::Settings kAuto = {{"heartbeat_timeout_ms", "30000"},
                                {"store_timeout_ms", "10000"},
                                {"same_host_path", "auto"}};
const mwtest::Settings kOff = {{"heartbeat_timeout_ms", "30000"},
                               {"store_timeout_ms", "10000"},
                               {"same_host_path", "off"}};

bool skipUnlessUcx() { return mwtest::hostBackend() != MW_BACKEND_UCX; }

// Bytes loopback carried so far (this network namespace's).
uint64_t loopbackBytes() {
  std::ifstream f("/sys/class/net/lo/statistics/tx_bytes");
  uint64_t v = 0;
  f >> v;
  return v;
}

// Message `i` of stream `seed`: every word differs, so a lost, repeated,
// reordered or torn message shows.
void fill(std::vector<uint64_t>& buf, uint64_t seed, uint64_t i) {
  for (size_t w = 0; w < buf.size(); ++w) buf[w] = (seed << 48) ^ (i << 24) ^ w;
}
bool intact(const std::vector<uint64_t>& buf, uint64_t seed, uint64_t i) {
  for (size_t w = 0; w < buf.size(); ++w) {
    if (buf[w] != ((seed << 48) ^ (i << 24) ^ w)) return false;
  }
  return true;
}

mw_status_t send(mw_world_t* w, const std::vector<uint64_t>& buf, int peer, int timeout_ms = 30000) {
  mw_request_t* r = nullptr;
  const mw_status_t s = mw_send_async(w, buf.data(), buf.size(), MW_UINT64, peer, &r);
  return s == MW_OK ? mwtest::waitAndFree(r, timeout_ms) : s;
}
mw_status_t recv(mw_world_t* w, std::vector<uint64_t>& buf, int peer, int timeout_ms = 30000) {
  mw_request_t* r = nullptr;
  const mw_status_t s = mw_recv_async(w, buf.data(), buf.size(), MW_UINT64, peer, &r);
  return s == MW_OK ? mwtest::waitAndFree(r, timeout_ms) : s;
}

// Rank 0 and rank 1 each send the other `messages` of `words` words; the
// bytes loopback carried meanwhile, or -1 when a rank failed.
long long exchangeAndCount(const mwtest::Settings& settings, int messages, size_t words) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<std::atomic<uint64_t>> before, after;
  const bool ok = mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m(settings);
    MWT_REQUIRE(m.join(url, "exchange", rank, 2));
    mw_request_t* b = nullptr;
    MWT_CHECK(mw_barrier_async(m.world, &b));  // the peer's offer to read has arrived
    MWT_CHECK(mwtest::waitAndFree(b));
    if (rank == 0) before->store(loopbackBytes());
    std::vector<uint64_t> out(words), in(words);
    for (int i = 0; i < messages; ++i) {
      fill(out, static_cast<uint64_t>(rank + 1), static_cast<uint64_t>(i));
      mw_request_t* s = nullptr;
      MWT_CHECK(mw_send_async(m.world, out.data(), words, MW_UINT64, 1 - rank, &s));
      MWT_CHECK(recv(m.world, in, 1 - rank));
      MWT_CHECK(mwtest::waitAndFree(s));
      MWT_REQUIRE(intact(in, static_cast<uint64_t>(2 - rank), static_cast<uint64_t>(i)));
    }
    MWT_CHECK(mw_barrier_async(m.world, &b));
    MWT_CHECK(mwtest::waitAndFree(b));
    if (rank == 0) after->store(loopbackBytes());
    return 0;
  });
  return ok ? static_cast<long long>(after->load() - before->load()) : -1;
}

TEST(SameHost, LargeMessagesBypassLoopbackAndOffKeepsThemOnIt) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  constexpr int kMessages = 16;
  constexpr size_t kWords = (4 << 20) / 8;
  const long long payload = 2LL * kMessages * kWords * 8;
  const long long lent = exchangeAndCount(kAuto, kMessages, kWords);
  const long long tcp = exchangeAndCount(kOff, kMessages, kWords);
  ASSERT_GE(lent, 0);
  ASSERT_GE(tcp, 0);
  std::printf("payload %lld bytes; loopback carried %lld (auto), %lld (off)\n", payload, lent, tcp);
  EXPECT_LT(lent, payload / 16) << "auto: loopback carried " << lent << " bytes of a " << payload << "-byte payload";
  EXPECT_GT(tcp, payload) << "off: loopback carried " << tcp << " bytes of a " << payload << "-byte payload";
}

// Sizes on both sides of same_host_min_bytes, and below a descriptor's.
TEST(SameHost, LentAndSentMessagesKeepTheirOrder) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  const size_t sizes[] = {2, (64 << 10) / 8, 128, (64 << 10) / 8 - 1, (1 << 20) / 8, 1, (70 << 10) / 8, 5};
  constexpr int kMessages = 240;
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m(kAuto);
    MWT_REQUIRE(m.join(url, "order", rank, 2));
    std::vector<std::vector<uint64_t>> bufs(kMessages);
    std::vector<mw_request_t*> reqs(kMessages, nullptr);
    for (int i = 0; i < kMessages; ++i) {
      bufs[i].resize(sizes[i % (sizeof sizes / sizeof sizes[0])]);
      if (rank == 0) fill(bufs[i], 7, static_cast<uint64_t>(i));
    }
    // Every transfer posted before any is waited for.
    for (int i = 0; i < kMessages; ++i) {
      if (rank == 0) {
        MWT_CHECK(mw_send_async(m.world, bufs[i].data(), bufs[i].size(), MW_UINT64, 1, &reqs[i]));
      } else {
        MWT_CHECK(mw_recv_async(m.world, bufs[i].data(), bufs[i].size(), MW_UINT64, 0, &reqs[i]));
      }
    }
    for (int i = 0; i < kMessages; ++i) MWT_CHECK(mwtest::waitAndFree(reqs[i]));
    if (rank == 1) {
      for (int i = 0; i < kMessages; ++i) MWT_REQUIRE(intact(bufs[i], 7, static_cast<uint64_t>(i)));
    }
    return 0;
  }));
}

// A lent message that does not fit its receive fails the receive, naming
// the sender's size, and completes the send, as a sent one does.
TEST(SameHost, ALentMessageThatDoesNotFitFailsOnlyTheReceive) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m(kAuto);
    MWT_REQUIRE(m.join(url, "misfit", rank, 2));
    std::vector<uint64_t> big((128 << 10) / 8);
    mw_request_t* b = nullptr;
    MWT_CHECK(mw_barrier_async(m.world, &b));
    MWT_CHECK(mwtest::waitAndFree(b));
    if (rank == 0) {
      for (int i = 0; i < 3; ++i) {
        fill(big, 3, static_cast<uint64_t>(i));
        MWT_CHECK(send(m.world, big, 1));
      }
      return 0;
    }
    std::vector<uint64_t> half((64 << 10) / 8), tiny(1);
    MWT_REQUIRE(mwtest::expectStatus(recv(m.world, half, 0), MW_ERR_INVALID_ARGUMENT, "recv into half"));
    MWT_REQUIRE(std::string(mw_last_error()).find("131072") != std::string::npos);
    MWT_REQUIRE(mwtest::expectStatus(recv(m.world, tiny, 0), MW_ERR_INVALID_ARGUMENT, "recv into one word"));
    MWT_REQUIRE(std::string(mw_last_error()).find("131072") != std::string::npos);
    MWT_CHECK(recv(m.world, big, 0));
    MWT_REQUIRE(intact(big, 3, 2));
    return 0;
  }));
}

}  // namespace
