// The same-host path of UCX worlds (core/backends/ucx/channels/ring_channel.h):
// large messages between members of one host move by process_vm_readv, in
// order with the small ones that take the pair's rings; a member killed mid-transfer
// fails only its own world; nothing is delivered past a message that was
// lost; a pair the kernel refuses stays on TCP. Each
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
#include <sys/wait.h>
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

// Each rank sends the other `messages` of `words` words with the same-host
// path on, then off: loopback must carry far less than the payload, then
// all of it.
void expectLoopbackOnlyWhenOff(int messages, size_t words) {
  const long long payload = 2LL * messages * static_cast<long long>(words) * 8;
  const long long on = exchangeAndCount(kAuto, messages, words);
  const long long off = exchangeAndCount(kOff, messages, words);
  ASSERT_GE(on, 0);
  ASSERT_GE(off, 0);
  std::printf("payload %lld bytes; loopback carried %lld (auto), %lld (off)\n", payload, on, off);
  EXPECT_LT(on, payload / 16) << "auto: loopback carried " << on << " bytes of a " << payload << "-byte payload";
  EXPECT_GT(off, payload) << "off: loopback carried " << off << " bytes of a " << payload << "-byte payload";
}

TEST(SameHost, LargeMessagesBypassLoopbackAndOffKeepsThemOnIt) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  expectLoopbackOnlyWhenOff(16, (4 << 20) / 8);  // lent
}

// Small messages are copied through the pair's rings.
TEST(SameHost, SmallMessagesTakeTheRingsAndOffKeepsThemOnLoopback) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  expectLoopbackOnlyWhenOff(4000, 1024);  // 8 KiB: below same_host_min_bytes
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

// The receiver's side of KilledSendersFailOnlyTheirOwnWorlds.
struct KillRound {
  std::atomic<int> victims_ready{0};     // victims that joined their world
  std::atomic<int> victim_sends{0};      // sends the current victim completed
  std::atomic<int> broken{0};            // victim worlds the receiver saw break
  std::atomic<int> torn{0};              // messages from a victim delivered damaged
  std::atomic<uint64_t> streamed{0};     // stream messages received intact, in order
  std::atomic<long> longest_gap_us{0};   // between two stream messages
  std::atomic<bool> stop_stream{false};
  std::atomic<int> failures{0};
};

// A sender is killed mid-transfer again and again (the scenario of
// bench/shm_kill_probe, through this library) while a second sender streams
// to the same receiver on another world: each kill breaks its own world,
// nothing it lent arrives damaged, and the stream neither stalls past
// 100 ms nor loses a message.
TEST(SameHost, KilledSendersFailOnlyTheirOwnWorlds) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  constexpr int kKills = 100;
  constexpr size_t kVictimWords = (4 << 20) / 8;
  constexpr size_t kStreamWords = (1 << 20) / 8;
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<KillRound> round;
  KillRound* st = round.get();
  mwtest::Workers steady;
  // The receiver: the stream on one thread, the victims' worlds in turn on
  // the other.
  steady.add([&]() -> int {
    mwtest::Member m(kAuto);
    MWT_REQUIRE(m.join(url, "stream", 0, 2));
    std::thread stream([&] {
      std::vector<uint64_t> in(kStreamWords);
      auto last = Clock::now();
      for (uint64_t i = 0;; ++i) {
        if (recv(m.world, in, 1) != MW_OK) {
          std::fprintf(stderr, "stream receive %llu: %s\n", static_cast<unsigned long long>(i), mw_last_error());
          st->failures++;
          return;
        }
        if (in[0] == ~uint64_t{0}) return;  // the end
        if (!intact(in, 9, i)) {
          std::fprintf(stderr, "stream message %llu damaged or out of order\n", static_cast<unsigned long long>(i));
          st->failures++;
          return;
        }
        const auto now = Clock::now();
        const long gap = static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(now - last).count());
        if (gap > st->longest_gap_us.load()) st->longest_gap_us.store(gap);
        last = now;
        st->streamed.store(i + 1);
      }
    });
    std::vector<uint64_t> in(kVictimWords);
    for (int k = 0; k < kKills; ++k) {
      mw_world_t* w = nullptr;
      const std::string name = "victim-" + std::to_string(k);
      if (!m.create(name.c_str(), 0, 2, &w)) {
        st->failures++;
        break;
      }
      for (uint64_t i = 0;; ++i) {
        const mw_status_t s = recv(w, in, 1);
        if (s == MW_ERR_WORLD_BROKEN) {
          st->broken++;
          break;
        }
        if (s != MW_OK) {
          std::fprintf(stderr, "%s: receive %llu: %s\n", name.c_str(), static_cast<unsigned long long>(i),
                       mw_last_error());
          st->failures++;
          break;
        }
        if (!intact(in, 5, i)) st->torn++;
      }
      mw_world_destroy(w);
    }
    stream.join();
    return 0;
  });
  steady.add([&]() -> int {
    mwtest::Member m(kAuto);
    MWT_REQUIRE(m.join(url, "stream", 1, 2));
    std::vector<uint64_t> out(kStreamWords);
    uint64_t i = 0;
    for (; !st->stop_stream.load(); ++i) {
      fill(out, 9, i);
      MWT_CHECK(send(m.world, out, 0));
    }
    out[0] = ~uint64_t{0};
    MWT_CHECK(send(m.world, out, 0));
    return 0;
  });
  std::mt19937 rng(20261128);
  for (int k = 0; k < kKills; ++k) {
    st->victim_sends.store(0);
    const pid_t victim = mwtest::spawn([&]() -> int {
      mwtest::Member m(kAuto);
      const std::string name = "victim-" + std::to_string(k);
      MWT_REQUIRE(m.join(url, name.c_str(), 1, 2));
      std::vector<uint64_t> out(kVictimWords);
      for (uint64_t i = 0;; ++i) {
        fill(out, 5, i);
        if (send(m.world, out, 0) != MW_OK) return 1;
        st->victim_sends++;
      }
    });
    // Killed while a send is in flight: after a few went, at a random point.
    const bool sending = mwtest::eventually([&] { return st->victim_sends.load() >= 2; }, std::chrono::seconds(30));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    kill(victim, SIGKILL);
    EXPECT_EQ(mwtest::waitExit(victim, std::chrono::seconds(10)), 128 + SIGKILL);
    if (!sending) {
      ADD_FAILURE() << "victim " << k << " never sent";
      break;
    }
    if (!mwtest::eventually([&] { return st->broken.load() + st->failures.load() > k; }, std::chrono::seconds(10))) {
      ADD_FAILURE() << "the receiver never saw victim " << k << "'s world break";
      break;
    }
  }
  st->stop_stream.store(true);
  EXPECT_TRUE(steady.join(std::chrono::seconds(60)));
  EXPECT_EQ(st->failures.load(), 0);
  EXPECT_EQ(st->broken.load(), kKills);
  EXPECT_EQ(st->torn.load(), 0);
  EXPECT_GT(st->streamed.load(), 0u);
  EXPECT_LT(st->longest_gap_us.load(), 100000) << "the stream stalled";
  std::printf("%d kills; %llu stream messages, longest gap %.1f ms\n", kKills,
              static_cast<unsigned long long>(st->streamed.load()), st->longest_gap_us.load() / 1000.0);
}

// The receiver is killed while it copies a large loan: the sender's send
// fails (its world breaks), and the sender goes on. A round in which the
// copy ended before the kill tests nothing and is run again.
TEST(SameHost, AReceiverKilledMidReadBreaksTheSendersWorld) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  constexpr size_t kWords = (256 << 20) / 8;
  struct Round {
    std::atomic<int> posting{0};
    std::atomic<int> received{0};
    std::atomic<int> send_status{1};
  };
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  bool tested = false;
  for (int attempt = 0; attempt < 5 && !tested; ++attempt) {
    mwlab::Shared<Round> round;
    Round* st = round.get();
    const std::string name = "reader-dies-" + std::to_string(attempt);
    mwtest::Workers sender;
    sender.add([&]() -> int {
      mwtest::Member m(kAuto);
      MWT_REQUIRE(m.join(url, name.c_str(), 1, 2));
      std::vector<uint64_t> out(kWords, 1);
      mw_request_t* b = nullptr;
      MWT_CHECK(mw_barrier_async(m.world, &b));
      MWT_CHECK(mwtest::waitAndFree(b));
      st->send_status.store(send(m.world, out, 0));
      // Its buffer is its own again, and the process goes on.
      out.assign(kWords, 2);
      return 0;
    });
    const pid_t receiver = mwtest::spawn([&]() -> int {
      mwtest::Member m(kAuto);
      MWT_REQUIRE(m.join(url, name.c_str(), 0, 2));
      std::vector<uint64_t> in(kWords);
      mw_request_t* b = nullptr;
      MWT_CHECK(mw_barrier_async(m.world, &b));
      MWT_CHECK(mwtest::waitAndFree(b));
      st->posting.store(1);
      MWT_CHECK(recv(m.world, in, 1));
      st->received.store(1);
      return 0;
    });
    ASSERT_TRUE(mwtest::eventually([&] { return st->posting.load() == 1; }, std::chrono::seconds(30)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    kill(receiver, SIGKILL);
    mwtest::waitExit(receiver, std::chrono::seconds(10));
    ASSERT_TRUE(sender.join(std::chrono::seconds(30)));
    if (st->received.load()) continue;
    EXPECT_EQ(st->send_status.load(), MW_ERR_WORLD_BROKEN);
    tested = true;
  }
  EXPECT_TRUE(tested) << "the receiver finished its copy before every kill";
}

// How a message in flight to a stopped receiver gets lost, for
// ALaterMessageIsNeverDeliveredPastALostOne.
enum class Loss {
  SenderLeaves,        // the sender destroys its world: what it lent is withdrawn
  StoppedPastTimeout,  // the sender's world breaks on the receiver's silence
};

struct LossRound {
  std::atomic<int> posted{0};  // the receiver posted both receives and stops itself
  std::atomic<int> go{0};      // it is stopped: the sender sends
  std::atomic<int> sent{0};    // the sender is done with both messages
  std::atomic<int> first{1}, second{1};          // the receiver's two statuses
  std::atomic<int> send_first{1}, send_second{1};  // the sender's
};

// While the receiver is stopped, the sender sends a large message and a
// small one behind it; the first is lost (its loan withdrawn, or its
// rendezvous cut off), the second waits whole in the receiver's ring or
// socket. Once resumed, the receiver must not get the second as if the
// first had never been sent: both its receives fail.
void laterMessageAfterALostOne(const mwtest::Settings& base, Loss how, size_t first_words) {
  mwtest::Settings settings = base;
  if (how == Loss::StoppedPastTimeout) {
    for (auto& [k, v] : settings) {
      if (k == "heartbeat_timeout_ms") v = "1000";
    }
  }
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<LossRound> round;
  LossRound* st = round.get();
  constexpr size_t kSecondWords = 4;
  // Joins as `rank`; after the barrier both rings are taken.
  auto joined = [&](mwtest::Member& m, int rank) {
    mw_request_t* b = nullptr;
    return m.join(url, "lost-then-later", rank, 2) && mw_barrier_async(m.world, &b) == MW_OK &&
           mwtest::waitAndFree(b) == MW_OK;
  };
  mwtest::Workers sender;
  sender.add([&]() -> int {
    mwtest::Member m(settings);
    MWT_REQUIRE(joined(m, 1));
    std::vector<uint64_t> first(first_words), second(kSecondWords);
    fill(first, 5, 0);
    fill(second, 5, 1);
    MWT_REQUIRE(mwtest::eventually([&] { return st->go.load() == 1; }, std::chrono::seconds(30)));
    mw_request_t *r1 = nullptr, *r2 = nullptr;
    MWT_CHECK(mw_send_async(m.world, first.data(), first.size(), MW_UINT64, 0, &r1));
    MWT_CHECK(mw_send_async(m.world, second.data(), second.size(), MW_UINT64, 0, &r2));
    if (how == Loss::SenderLeaves) {
      mw_world_destroy(m.world);  // returns once the first is withdrawn
      m.world = nullptr;
    }
    // Sends complete in issue order: the second after the first.
    st->send_first.store(mwtest::waitAndFree(r1));
    st->send_second.store(mwtest::waitAndFree(r2));
    st->sent.store(1);
    return 0;
  });
  const pid_t receiver = mwtest::spawn([&]() -> int {
    mwtest::Member m(settings);
    MWT_REQUIRE(joined(m, 0));
    std::vector<uint64_t> first(first_words), second(kSecondWords);
    mw_request_t *r1 = nullptr, *r2 = nullptr;
    MWT_CHECK(mw_recv_async(m.world, first.data(), first.size(), MW_UINT64, 1, &r1));
    MWT_CHECK(mw_recv_async(m.world, second.data(), second.size(), MW_UINT64, 1, &r2));
    st->posted.store(1);
    raise(SIGSTOP);
    st->first.store(mwtest::waitAndFree(r1));
    const mw_status_t s2 = mwtest::waitAndFree(r2);
    if (s2 == MW_OK && intact(second, 5, 1)) std::fprintf(stderr, "the second message arrived past the first\n");
    st->second.store(s2);
    return 0;
  });
  ASSERT_TRUE(mwtest::eventually([&] { return st->posted.load() == 1; }, std::chrono::seconds(30)));
  int ws = 0;
  ASSERT_EQ(waitpid(receiver, &ws, WUNTRACED), receiver);
  ASSERT_TRUE(WIFSTOPPED(ws));
  st->go.store(1);
  const auto stopped = Clock::now();
  const bool sent = mwtest::eventually([&] { return st->sent.load() == 1; }, std::chrono::seconds(30));
  if (how == Loss::StoppedPastTimeout) {
    // Past the receiver's own timeout too, as the soak's long stops are.
    std::this_thread::sleep_until(stopped + std::chrono::milliseconds(1500));
  }
  kill(receiver, SIGCONT);
  ASSERT_TRUE(sent) << "the sender never finished";
  ASSERT_EQ(mwtest::waitExit(receiver, std::chrono::seconds(30)), 0);
  ASSERT_TRUE(sender.join(std::chrono::seconds(30)));
  std::printf("sender: %s, %s; receiver: %s, %s\n", mw_status_string(static_cast<mw_status_t>(st->send_first.load())),
              mw_status_string(static_cast<mw_status_t>(st->send_second.load())),
              mw_status_string(static_cast<mw_status_t>(st->first.load())),
              mw_status_string(static_cast<mw_status_t>(st->second.load())));
  // The second send ended in order, behind the first: it fails with it.
  EXPECT_NE(st->send_first.load(), MW_OK);
  EXPECT_NE(st->send_second.load(), MW_OK);
  EXPECT_EQ(st->first.load(), MW_ERR_WORLD_BROKEN) << mw_status_string(static_cast<mw_status_t>(st->first.load()));
  EXPECT_EQ(st->second.load(), MW_ERR_WORLD_BROKEN)
      << "the message behind a lost one completed with "
      << mw_status_string(static_cast<mw_status_t>(st->second.load()));
}

TEST(SameHost, ALaterMessageIsNeverDeliveredPastALostOne) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  constexpr size_t kLent = (64 << 10) / 8;  // same_host_min_bytes: lent
  {
    SCOPED_TRACE("ring, the sender leaves");
    laterMessageAfterALostOne(kAuto, Loss::SenderLeaves, kLent);
  }
  {
    SCOPED_TRACE("ring, stopped past the heartbeat timeout");
    laterMessageAfterALostOne(kAuto, Loss::StoppedPastTimeout, kLent);
  }
  {
    SCOPED_TRACE("TCP, the sender leaves");
    laterMessageAfterALostOne(kOff, Loss::SenderLeaves, (1 << 20) / 8);  // a rendezvous
  }
}

// seccomp makes process_vm_readv or pidfd_getfd fail with EPERM in the
// receiver, as Yama or a container without CAP_SYS_PTRACE would: the pair
// stays on TCP, the data arrives, and the log says why.
int refuseSyscall(long nr) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

// Rank 0 refused `nr` by seccomp receives from rank 1: loopback carries the
// payload, and rank 0's log names the refusal of `call`.
void refusedPairStaysOnTcp(long nr, const char* call) {
  constexpr int kMessages = 8;
  constexpr size_t kWords = (4 << 20) / 8;
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwlab::Shared<std::atomic<uint64_t>> before, after;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    char log_path[] = "/tmp/mw_same_host_log_XXXXXX";
    int log_fd = -1, saved_stderr = -1;
    if (rank == 0) {
      MWT_REQUIRE(refuseSyscall(nr) == 0);
      // What the library logs while the world forms goes to a file.
      log_fd = mkstemp(log_path);
      MWT_REQUIRE(log_fd >= 0);
      saved_stderr = dup(2);
      dup2(log_fd, 2);
    }
    mwtest::Member m(kAuto);
    const bool joined = m.join(url, "refused", rank, 2);
    mw_request_t* b = nullptr;
    const bool met = joined && mw_barrier_async(m.world, &b) == MW_OK && mwtest::waitAndFree(b) == MW_OK;
    if (rank == 0) {
      dup2(saved_stderr, 2);
      close(saved_stderr);
      std::ifstream f(log_path);
      const std::string log((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      close(log_fd);
      unlink(log_path);
      MWT_REQUIRE(joined && met);
      if (log.find("stays on TCP to rank 1") == std::string::npos || log.find(call) == std::string::npos ||
          log.find("Operation not permitted") == std::string::npos) {
        std::fprintf(stderr, "the log does not name the refusal:\n%s\n", log.c_str());
        return 1;
      }
      before->store(loopbackBytes());
    }
    MWT_REQUIRE(joined && met);
    std::vector<uint64_t> buf(kWords);
    for (int i = 0; i < kMessages; ++i) {
      if (rank == 1) {
        fill(buf, 4, static_cast<uint64_t>(i));
        MWT_CHECK(send(m.world, buf, 0));
      } else {
        MWT_CHECK(recv(m.world, buf, 1));
        MWT_REQUIRE(intact(buf, 4, static_cast<uint64_t>(i)));
      }
    }
    if (rank == 0) after->store(loopbackBytes());
    return 0;
  }));
  const uint64_t payload = uint64_t{kMessages} * kWords * 8;
  EXPECT_GT(after->load() - before->load(), payload) << "the refused pair's data did not go over loopback";
}

TEST(SameHost, APairTheKernelRefusesStaysOnTcpAndSaysSo) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  refusedPairStaysOnTcp(SYS_process_vm_readv, "process_vm_readv");
}

// pidfd_getfd is how a reader takes a peer's ring.
TEST(SameHost, APairThatCannotTakeRingsStaysOnTcpAndSaysSo) {
  if (skipUnlessUcx()) GTEST_SKIP() << "the same-host path is the UCX backend's";
  refusedPairStaysOnTcp(SYS_pidfd_getfd, "pidfd_getfd");
}

}  // namespace
