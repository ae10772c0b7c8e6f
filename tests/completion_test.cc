// Completion semantics of the C API on real worker processes over a real
// redis-server: mw_poll delivers each completion exactly once, never one the
// program already saw through mw_test/mw_wait nor one of a freed request;
// waiting (mw_poll, mw_wait, mw_next_event) sleeps instead of spinning; one
// slow world never holds back another world's completions; user_data and
// the completion's world handle.
//
// The parent process never creates a context: all multiworld work happens in
// forked workers.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kWaitMs = 30000;
constexpr auto kGroupTimeout = 120s;

// Process CPU time (all threads) allowed while a call sleeps ~500 ms. The
// library's own heartbeat/watchdog threads run meanwhile, so this is not 0;
// a spinning wait would burn ~500 ms. (Also holds under ThreadSanitizer.)
constexpr long kIdleCpuLimitMs = 50;

long cpuMs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

using mwtest::msSince;

// Flags shared between the forked workers of one test (in a mwlab::Shared,
// mapped before forking).
struct Flags {
  std::atomic<int> v[8];
  std::atomic<int>& operator[](int i) { return v[i]; }
};

// Sleeps (never spins) until `flag` reaches `want`; false after `timeout`.
bool awaitFlag(std::atomic<int>& flag, int want, std::chrono::milliseconds timeout = 30s) {
  const auto deadline = Clock::now() + timeout;
  while (flag.load() < want) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "pid %d: flag never reached %d\n", getpid(), want);
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

int32_t payload(int tag, int src, size_t i) {
  return static_cast<int32_t>((static_cast<uint32_t>(tag) * 2654435761u) ^ (static_cast<uint32_t>(src) << 20) ^
                              static_cast<uint32_t>(i * 40503u)) &
         0x0fffffff;
}

std::vector<int32_t> message(int tag, int src, size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = payload(tag, src, i);
  return v;
}

// Drains whatever mw_poll delivers within `window`; returns the count, and
// reports each delivery on stderr.
int pollNothingFor(mw_context_t* ctx, std::chrono::milliseconds window, const char* what) {
  const auto end = Clock::now() + window;
  int delivered = 0;
  for (;;) {
    const long left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) break;
    mw_completion_t c[8];
    size_t n = 0;
    if (mw_poll(ctx, c, 8, static_cast<int>(left), &n) != MW_OK) {
      std::fprintf(stderr, "%s: mw_poll failed: %s\n", what, mw_last_error());
      return delivered + 1;
    }
    for (size_t i = 0; i < n; ++i) {
      std::fprintf(stderr, "%s: mw_poll delivered request %p user_data %#" PRIx64 " status %s\n", what,
                   static_cast<void*>(c[i].request), c[i].user_data, mw_status_string(c[i].status));
    }
    delivered += static_cast<int>(n);
  }
  return delivered;
}

// ------------------------------------------------------------ workers

// 300 mixed operations (allreduce, p2p both ways, count 0 included), all
// issued before any is collected, drained only through mw_poll with varying
// max and timeouts.
int exactlyOnceWorker(const std::string& url, int rank) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "exactly-once", rank, 2));
  constexpr int kOps = 300;
  struct Item {
    std::vector<int32_t> send, recv, want;
    mw_request_t* req = nullptr;
    uint64_t user_data = 0;
    bool seen = false;
  };
  std::vector<Item> items(kOps);
  for (int k = 0; k < kOps; ++k) {
    Item& it = items[k];
    const size_t n = static_cast<size_t>(k % 17);
    switch (k % 3) {
      case 0: {  // allreduce int32 sum
        it.send = message(k, rank, n);
        it.recv.assign(n, -1);
        it.want.resize(n);
        for (size_t i = 0; i < n; ++i) it.want[i] = payload(k, 0, i) + payload(k, 1, i);
        MWT_CHECK(mw_allreduce_async(m.world, it.send.data(), it.recv.data(), n, MW_INT32, MW_SUM, &it.req));
        break;
      }
      case 1:    // 0 -> 1
      case 2: {  // 1 -> 0
        const int src = k % 3 == 1 ? 0 : 1;
        if (rank == src) {
          it.send = message(k, src, n);
          MWT_CHECK(mw_send_async(m.world, it.send.data(), n, MW_INT32, 1 - rank, &it.req));
        } else {
          it.recv.assign(n, -1);
          it.want = message(k, src, n);
          MWT_CHECK(mw_recv_async(m.world, it.recv.data(), n, MW_INT32, src, &it.req));
        }
        break;
      }
    }
    it.user_data = 0x5EED000000000000ull ^ (static_cast<uint64_t>(rank) << 40) ^ (static_cast<uint64_t>(k) * 7919u);
    mw_request_set_user_data(it.req, it.user_data);
  }
  std::map<mw_request_t*, int> index;
  std::set<uint64_t> user_datas;
  for (int k = 0; k < kOps; ++k) {
    index[items[k].req] = k;
    user_datas.insert(items[k].user_data);
  }
  MWT_REQUIRE(index.size() == static_cast<size_t>(kOps));
  MWT_REQUIRE(user_datas.size() == static_cast<size_t>(kOps));

  static const size_t kMax[] = {1, 3, 1, 16, 64, 300, 2};
  int collected = 0, failures = 0, last_main_k = -1, last_recv_k = -1, round = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kWaitMs);
  std::vector<mw_completion_t> out(300);
  while (collected < kOps) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "rank %d: mw_poll delivered only %d of %d completions\n", rank, collected, kOps);
      return 1;
    }
    const size_t max = kMax[round % 7];
    const int timeout = round % 4 == 0 ? 0 : 1000;
    ++round;
    for (auto& c : out) c = mw_completion_t{nullptr, nullptr, 0, MW_ERR_INTERNAL};
    size_t got = 12345;
    MWT_CHECK(mw_poll(m.ctx, out.data(), max, timeout, &got));
    if (got > max) {
      std::fprintf(stderr, "rank %d: mw_poll(max=%zu) returned %zu\n", rank, max, got);
      return 1;
    }
    for (size_t i = max; i < out.size(); ++i) {
      if (out[i].request != nullptr) {
        std::fprintf(stderr, "rank %d: mw_poll(max=%zu) wrote past max (slot %zu)\n", rank, max, i);
        return 1;
      }
    }
    for (size_t i = 0; i < got; ++i) {
      auto found = index.find(out[i].request);
      if (found == index.end()) {
        std::fprintf(stderr, "rank %d: unknown request %p delivered\n", rank, static_cast<void*>(out[i].request));
        ++failures;
        continue;
      }
      const int k = found->second;
      Item& it = items[k];
      if (it.seen) {
        std::fprintf(stderr, "rank %d: request %d delivered twice\n", rank, k);
        ++failures;
        continue;
      }
      it.seen = true;
      ++collected;
      // Sends and collectives complete in issue order, and so do the
      // receives from one peer, on their own lane.
      int& last_k = (k % 3 != 0 && rank != (k % 3 == 1 ? 0 : 1)) ? last_recv_k : last_main_k;
      if (k <= last_k) {
        std::fprintf(stderr, "rank %d: request %d delivered after request %d\n", rank, k, last_k);
        ++failures;
      }
      last_k = k;
      if (out[i].user_data != it.user_data || out[i].world != m.world || out[i].status != MW_OK) {
        std::fprintf(stderr, "rank %d: request %d: user_data %#" PRIx64 " (want %#" PRIx64 "), world %p (want %p), %s\n",
                     rank, k, out[i].user_data, it.user_data, static_cast<void*>(out[i].world),
                     static_cast<void*>(m.world), mw_status_string(out[i].status));
        ++failures;
      }
      if (it.recv != it.want && !it.want.empty()) {
        std::fprintf(stderr, "rank %d: request %d: wrong data\n", rank, k);
        ++failures;
      }
    }
  }
  size_t got = 99;
  mw_completion_t extra[4];
  MWT_CHECK(mw_poll(m.ctx, extra, 4, 0, &got));
  if (got != 0) {
    std::fprintf(stderr, "rank %d: mw_poll(timeout 0) delivered %zu more after all %d\n", rank, got, kOps);
    ++failures;
  }
  for (Item& it : items) {
    if (mw_test(it.req) != MW_OK) ++failures;
    mw_request_free(it.req);
  }
  MWT_CHECK(mw_poll(m.ctx, extra, 4, 100, &got));
  MWT_REQUIRE(got == 0);
  return failures ? 1 : 0;
}

// Requests whose status the program saw through mw_test or mw_wait are not
// delivered by mw_poll, both when they were already queued for delivery and
// when they completed while the program waited.
int reportedWorker(const std::string& url, int rank, Flags& flags) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "reported", rank, 2));
  constexpr int kOps = 60;
  struct Item {
    std::vector<int32_t> send, recv, want;
    mw_request_t* req = nullptr;
    int how = 0;  // 0: mw_wait, 1: mw_test, 2: mw_poll
  };
  std::vector<Item> items(kOps);
  for (int k = 0; k < kOps; ++k) {
    Item& it = items[k];
    it.how = k % 3;
    const size_t n = 1 + static_cast<size_t>(k % 5);
    if (k % 4 == 3) {
      it.send = message(k, rank, n);
      it.recv.assign(n, -1);
      it.want.resize(n);
      for (size_t i = 0; i < n; ++i) it.want[i] = payload(k, 0, i) + payload(k, 1, i);
      MWT_CHECK(mw_allreduce_async(m.world, it.send.data(), it.recv.data(), n, MW_INT32, MW_SUM, &it.req));
    } else {
      const int src = k % 2;
      if (rank == src) {
        it.send = message(k, src, n);
        MWT_CHECK(mw_send_async(m.world, it.send.data(), n, MW_INT32, 1 - rank, &it.req));
      } else {
        it.recv.assign(n, -1);
        it.want = message(k, src, n);
        MWT_CHECK(mw_recv_async(m.world, it.recv.data(), n, MW_INT32, src, &it.req));
      }
    }
    mw_request_set_user_data(it.req, 1000u + static_cast<uint64_t>(k));
  }
  // A final barrier: once it is done, every earlier send and collective of
  // the world is done too (issue order); receives finish on their own lane
  // and are collected by the polling window below.
  mw_request_t* fence = nullptr;
  MWT_CHECK(mw_barrier_async(m.world, &fence));
  MWT_CHECK(mw_wait(fence, kWaitMs));
  for (Item& it : items) {
    if (it.how == 0) {
      MWT_CHECK(mw_wait(it.req, kWaitMs));
    } else if (it.how == 1) {
      MWT_REQUIRE(mw_test(it.req) == MW_OK);
    }
  }
  // Exactly the mw_poll third comes out of mw_poll.
  std::set<uint64_t> delivered;
  int failures = 0;
  const auto end = Clock::now() + 1000ms;
  while (Clock::now() < end) {
    mw_completion_t c[5];
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 5, 300, &n));
    for (size_t i = 0; i < n; ++i) {
      const uint64_t ud = c[i].user_data;
      const bool ok_ud = ud >= 1000 && ud < 1000u + kOps && items[ud - 1000].how == 2 &&
                         c[i].request == items[ud - 1000].req;
      if (!ok_ud || !delivered.insert(ud).second) {
        std::fprintf(stderr, "rank %d: mw_poll delivered user_data %" PRIu64 " (seen before, or already reported)\n",
                     rank, ud);
        ++failures;
      }
    }
  }
  if (delivered.size() != kOps / 3) {
    std::fprintf(stderr, "rank %d: mw_poll delivered %zu requests, want %d\n", rank, delivered.size(), kOps / 3);
    ++failures;
  }
  // Each keeps reporting its final status.
  for (Item& it : items) {
    if (mw_test(it.req) != MW_OK || mw_wait(it.req, 0) != MW_OK) ++failures;
    if (!it.want.empty() && it.recv != it.want) ++failures;
    mw_request_free(it.req);
  }
  if (mw_test(fence) != MW_OK) ++failures;
  mw_request_free(fence);
  if (failures) return 1;

  // Completions that happen while the program waits in mw_wait / mw_test.
  // Rank 1 sends each message only after rank 0 started waiting for it.
  int32_t box[4] = {0, 0, 0, 0};
  const int32_t data[4] = {11, 22, 33, 44};
  if (rank == 0) {
    mw_request_t* r1 = nullptr;
    mw_request_t* r2 = nullptr;
    MWT_CHECK(mw_recv_async(m.world, box, 2, MW_INT32, 1, &r1));
    MWT_CHECK(mw_recv_async(m.world, box + 2, 2, MW_INT32, 1, &r2));
    mw_request_set_user_data(r1, 1);
    mw_request_set_user_data(r2, 2);
    MWT_REQUIRE(mw_test(r1) == MW_IN_PROGRESS);
    flags[0] = 1;
    MWT_CHECK(mw_wait(r1, kWaitMs));
    flags[0] = 2;
    mw_status_t s = MW_IN_PROGRESS;
    const auto deadline = Clock::now() + std::chrono::milliseconds(kWaitMs);
    while ((s = mw_test(r2)) == MW_IN_PROGRESS && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    MWT_CHECK(s);
    MWT_REQUIRE(box[0] == 11 && box[1] == 22 && box[2] == 33 && box[3] == 44);
    MWT_REQUIRE(pollNothingFor(m.ctx, 300ms, "rank 0 after wait/test") == 0);
    mw_request_free(r1);
    mw_request_free(r2);
  } else {
    MWT_REQUIRE(awaitFlag(flags[0], 1));
    std::this_thread::sleep_for(100ms);  // rank 0 is inside mw_wait by now
    mw_request_t* s1 = nullptr;
    MWT_CHECK(mw_send_async(m.world, data, 2, MW_INT32, 0, &s1));
    MWT_CHECK(mwtest::waitAndFree(s1, kWaitMs));
    MWT_REQUIRE(awaitFlag(flags[0], 2));
    std::this_thread::sleep_for(100ms);  // rank 0 is testing by now
    MWT_CHECK(mw_send_async(m.world, data + 2, 2, MW_INT32, 0, &s1));
    MWT_CHECK(mwtest::waitAndFree(s1, kWaitMs));
  }
  mw_request_t* b = nullptr;
  MWT_CHECK(mw_barrier_async(m.world, &b));
  MWT_CHECK(mwtest::waitAndFree(b, kWaitMs));
  return 0;
}

// A freed request's completion is never delivered: neither one freed while
// pending (it completes later), nor one freed after it completed but before
// mw_poll picked it up. A later request is delivered as usual.
int freedWorker(const std::string& url, int rank, Flags& flags) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "freed", rank, 2));
  int32_t in[3] = {0, 0, 0};
  const int32_t out[3] = {7, 8, 9};
  if (rank == 1) {
    // Freed while pending.
    mw_request_t* pending = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &in[0], 1, MW_INT32, 0, &pending));
    mw_request_set_user_data(pending, 0xF4EE);
    MWT_REQUIRE(mw_test(pending) == MW_IN_PROGRESS);
    mw_request_free(pending);
    flags[0] = 1;  // now rank 0 sends
    MWT_REQUIRE(awaitFlag(flags[1], 1));  // rank 0's send completed
    MWT_REQUIRE(pollNothingFor(m.ctx, 300ms, "freed pending recv") == 0);

    // Freed after completing, before mw_poll saw it: r_a completes before
    // r_b (issue order), and r_b is collected with mw_wait.
    mw_request_t *r_a = nullptr, *r_b = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &in[1], 1, MW_INT32, 0, &r_a));
    MWT_CHECK(mw_recv_async(m.world, &in[2], 1, MW_INT32, 0, &r_b));
    mw_request_set_user_data(r_a, 0xA);
    mw_request_set_user_data(r_b, 0xB);
    flags[0] = 2;
    MWT_CHECK(mw_wait(r_b, kWaitMs));
    mw_request_free(r_a);
    MWT_REQUIRE(pollNothingFor(m.ctx, 300ms, "freed completed recv") == 0);
    mw_request_free(r_b);
    MWT_REQUIRE(in[0] == 7 && in[1] == 8 && in[2] == 9);

    // A later request is delivered, and nothing else.
    int32_t later = 0;
    mw_request_t* r_later = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &later, 1, MW_INT32, 0, &r_later));
    mw_request_set_user_data(r_later, 0x1A7E);
    flags[0] = 3;
    mw_completion_t c[4];
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 4, kWaitMs, &n));
    MWT_REQUIRE(n == 1);
    MWT_REQUIRE(c[0].request == r_later && c[0].user_data == 0x1A7E && c[0].status == MW_OK);
    MWT_REQUIRE(c[0].world == m.world);
    MWT_REQUIRE(later == 42);
    mw_request_free(r_later);
    MWT_REQUIRE(pollNothingFor(m.ctx, 100ms, "after the later recv") == 0);
  } else {
    MWT_REQUIRE(awaitFlag(flags[0], 1));
    mw_request_t* s = nullptr;
    MWT_CHECK(mw_send_async(m.world, &out[0], 1, MW_INT32, 1, &s));
    MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
    flags[1] = 1;
    MWT_REQUIRE(awaitFlag(flags[0], 2));
    mw_request_t *s1 = nullptr, *s2 = nullptr;
    MWT_CHECK(mw_send_async(m.world, &out[1], 1, MW_INT32, 1, &s1));
    MWT_CHECK(mw_send_async(m.world, &out[2], 1, MW_INT32, 1, &s2));
    MWT_CHECK(mwtest::waitAndFree(s1, kWaitMs));
    MWT_CHECK(mwtest::waitAndFree(s2, kWaitMs));
    MWT_REQUIRE(awaitFlag(flags[0], 3));
    const int32_t answer = 42;
    MWT_CHECK(mw_send_async(m.world, &answer, 1, MW_INT32, 1, &s));
    MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
  }
  mw_request_t* b = nullptr;
  MWT_CHECK(mw_barrier_async(m.world, &b));
  MWT_CHECK(mwtest::waitAndFree(b, kWaitMs));
  return 0;
}

// mw_poll with a timeout and nothing pending sleeps; mw_poll(-1) wakes for a
// completion issued from another thread.
int pollSleepsWorker(const std::string& url) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "poll-sleeps", 0, 1));
  std::this_thread::sleep_for(200ms);  // let start-up work settle
  mw_completion_t c[4];
  size_t n = 99;
  const long cpu0 = cpuMs();
  const auto t0 = Clock::now();
  MWT_CHECK(mw_poll(m.ctx, c, 4, 500, &n));
  const long wall = msSince(t0), cpu = cpuMs() - cpu0;
  std::fprintf(stderr, "mw_poll(500 ms), nothing pending: n=%zu after %ld ms, %ld ms CPU\n", n, wall, cpu);
  MWT_REQUIRE(n == 0);
  MWT_REQUIRE(wall >= 450);
  MWT_REQUIRE(wall < 3000);
  MWT_REQUIRE(cpu < kIdleCpuLimitMs);

  // Timeout 0 only looks.
  const auto t1 = Clock::now();
  MWT_CHECK(mw_poll(m.ctx, c, 4, 0, &n));
  MWT_REQUIRE(n == 0);
  MWT_REQUIRE(msSince(t1) < 100);

  // mw_poll(-1) wakes when another thread's operation completes.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto end = Clock::now() + 20s;
    while (!done.load() && Clock::now() < end) std::this_thread::sleep_for(10ms);
    if (!done.load()) {
      std::fprintf(stderr, "mw_poll(-1) never woke up\n");
      std::fflush(nullptr);
      _exit(3);
    }
  });
  int32_t sent = 1234, got_value = 0;
  mw_request_t *rs = nullptr, *rr = nullptr;
  std::atomic<int> issued{0};
  std::thread issuer([&] {
    std::this_thread::sleep_for(300ms);
    // user_data is fixed at issue: the poller may see the completion
    // before mw_submit returns (mw_request_set_user_data would race).
    mw_op_t recv{}, send{};
    recv.size = send.size = sizeof(mw_op_t);
    recv.kind = MW_OP_RECV;
    recv.recvbuf = &got_value;
    send.kind = MW_OP_SEND;
    send.sendbuf = &sent;
    recv.count = send.count = 1;
    recv.dtype = send.dtype = MW_INT32;
    recv.peer = send.peer = 0;
    recv.user_data = 0xEC;
    send.user_data = 0x5E;
    if (mw_submit(m.world, &recv, &rr) != MW_OK) return;
    if (mw_submit(m.world, &send, &rs) != MW_OK) return;
    issued = 1;
  });
  const long cpu2 = cpuMs();
  const auto t2 = Clock::now();
  MWT_CHECK(mw_poll(m.ctx, c, 4, -1, &n));
  const long wall2 = msSince(t2), cpu_forever = cpuMs() - cpu2;
  issuer.join();
  std::fprintf(stderr, "mw_poll(-1): n=%zu after %ld ms, %ld ms CPU\n", n, wall2, cpu_forever);
  MWT_REQUIRE(issued.load() == 1);
  MWT_REQUIRE(n >= 1 && n <= 2);
  MWT_REQUIRE(wall2 >= 250);
  MWT_REQUIRE(cpu_forever < kIdleCpuLimitMs);
  std::set<uint64_t> seen;
  for (size_t i = 0; i < n; ++i) {
    MWT_REQUIRE(c[i].status == MW_OK && c[i].world == m.world);
    seen.insert(c[i].user_data);
  }
  while (seen.size() < 2) {
    size_t more = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 4, kWaitMs, &more));
    MWT_REQUIRE(more >= 1);
    for (size_t i = 0; i < more; ++i) {
      MWT_REQUIRE(c[i].status == MW_OK);
      MWT_REQUIRE(seen.insert(c[i].user_data).second);
    }
  }
  done = true;
  watchdog.join();
  MWT_REQUIRE(seen == (std::set<uint64_t>{0xEC, 0x5E}));
  MWT_REQUIRE(got_value == 1234);
  mw_request_free(rs);
  mw_request_free(rr);
  return 0;
}

// mw_wait(req, 500) on a recv the peer does not satisfy: MW_ERR_TIMEOUT
// after ~500 ms without spinning, the request still valid and running; the
// peer's later send completes it.
int waitTimeoutWorker(const std::string& url, int rank, Flags& flags) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "wait-timeout", rank, 2));
  if (rank == 0) {
    int32_t box[3] = {0, 0, 0};
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_recv_async(m.world, box, 3, MW_INT32, 1, &r));
    mw_request_set_user_data(r, 77);
    std::this_thread::sleep_for(200ms);
    const long cpu0 = cpuMs();
    const auto t0 = Clock::now();
    mw_status_t s = mw_wait(r, 500);
    const long wall = msSince(t0), cpu = cpuMs() - cpu0;
    std::fprintf(stderr, "mw_wait(500 ms) on a pending recv: %s after %ld ms, %ld ms CPU\n", mw_status_string(s),
                 wall, cpu);
    MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_TIMEOUT, "mw_wait on a pending recv"));
    MWT_REQUIRE(wall >= 450);
    MWT_REQUIRE(wall < 3000);
    MWT_REQUIRE(cpu < kIdleCpuLimitMs);
    MWT_REQUIRE(mw_test(r) == MW_IN_PROGRESS);
    MWT_REQUIRE(mw_request_user_data(r) == 77);
    MWT_REQUIRE(mw_wait(r, 0) == MW_ERR_TIMEOUT);
    flags[0] = 1;  // now send
    MWT_CHECK(mw_wait(r, kWaitMs));
    MWT_REQUIRE(box[0] == 5 && box[1] == 6 && box[2] == 7);
    MWT_REQUIRE(mw_test(r) == MW_OK);
    // Reported by mw_wait: not delivered by mw_poll.
    MWT_REQUIRE(pollNothingFor(m.ctx, 200ms, "after mw_wait") == 0);
    mw_request_free(r);
  } else {
    MWT_REQUIRE(awaitFlag(flags[0], 1));
    const int32_t data[3] = {5, 6, 7};
    mw_request_t* s = nullptr;
    MWT_CHECK(mw_send_async(m.world, data, 3, MW_INT32, 0, &s));
    MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
  }
  mw_request_t* b = nullptr;
  MWT_CHECK(mw_barrier_async(m.world, &b));
  MWT_CHECK(mwtest::waitAndFree(b, kWaitMs));
  return 0;
}

// One process in two worlds with the same peer. On world A rank 0 posts a
// recv that rank 1 satisfies only after 3 s; meanwhile 200 round trips on
// world B, collected with mw_poll, finish long before.
int slowWorldWorker(const std::string& url, int rank) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "slow-a", rank, 2));
  mw_world_t* b = nullptr;
  MWT_REQUIRE(m.create("fast-b", rank, 2, &b));
  struct DestroyB {
    mw_world_t* w;
    ~DestroyB() { mw_world_destroy(w); }
  } destroy_b{b};
  {
    mw_request_t *ba = nullptr, *bb = nullptr;
    MWT_CHECK(mw_barrier_async(m.world, &ba));
    MWT_CHECK(mw_barrier_async(b, &bb));
    MWT_CHECK(mwtest::waitAndFree(ba, kWaitMs));
    MWT_CHECK(mwtest::waitAndFree(bb, kWaitMs));
  }
  constexpr int kRounds = 200;
  constexpr auto kDelay = 3000ms;
  const auto t0 = Clock::now();
  if (rank == 1) {
    // Echo on B (value + 1), then satisfy A after the delay.
    for (int i = 0; i < kRounds; ++i) {
      int32_t v[2] = {0, 0};
      mw_request_t* r = nullptr;
      MWT_CHECK(mw_recv_async(b, v, 2, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
      v[0] += 1;
      v[1] += 1;
      MWT_CHECK(mw_send_async(b, v, 2, MW_INT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    }
    std::this_thread::sleep_until(t0 + kDelay);
    const int32_t late = 31337;
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_send_async(m.world, &late, 1, MW_INT32, 0, &r));
    MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
  } else {
    int32_t late = 0;
    mw_request_t* ra = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &late, 1, MW_INT32, 1, &ra));
    constexpr uint64_t kA = 0xAAAA;
    mw_request_set_user_data(ra, kA);
    long b_done_ms = -1, a_done_ms = -1;
    int failures = 0;
    int32_t out[2], in[2];
    int round = 0;
    bool round_issued = false;
    int round_left = 0;
    mw_request_t* round_reqs[2] = {nullptr, nullptr};
    const auto deadline = t0 + 30s;
    while (a_done_ms < 0 || b_done_ms < 0) {
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "rank 0: stuck: %d rounds on B, A %s\n", round, a_done_ms < 0 ? "pending" : "done");
        return 1;
      }
      if (b_done_ms < 0 && !round_issued) {
        out[0] = round * 3;
        out[1] = -round;
        in[0] = in[1] = 0;
        MWT_CHECK(mw_recv_async(b, in, 2, MW_INT32, 1, &round_reqs[1]));
        MWT_CHECK(mw_send_async(b, out, 2, MW_INT32, 1, &round_reqs[0]));
        mw_request_set_user_data(round_reqs[0], 2u * static_cast<uint64_t>(round));
        mw_request_set_user_data(round_reqs[1], 2u * static_cast<uint64_t>(round) + 1);
        round_issued = true;
        round_left = 2;
      }
      mw_completion_t c[4];
      size_t n = 0;
      MWT_CHECK(mw_poll(m.ctx, c, 4, 1000, &n));
      for (size_t i = 0; i < n; ++i) {
        if (c[i].status != MW_OK) {
          std::fprintf(stderr, "rank 0: completion %#" PRIx64 " failed: %s\n", c[i].user_data,
                       mw_status_string(c[i].status));
          ++failures;
        }
        if (c[i].user_data == kA) {
          MWT_REQUIRE(c[i].request == ra && c[i].world == m.world && a_done_ms < 0);
          a_done_ms = msSince(t0);
          continue;
        }
        const uint64_t want_send = 2u * static_cast<uint64_t>(round);
        MWT_REQUIRE(round_issued && c[i].world == b);
        MWT_REQUIRE((c[i].user_data == want_send && c[i].request == round_reqs[0]) ||
                    (c[i].user_data == want_send + 1 && c[i].request == round_reqs[1]));
        mw_request_free(c[i].request);
        if (--round_left == 0) {
          if (in[0] != round * 3 + 1 || in[1] != -round + 1) {
            std::fprintf(stderr, "rank 0: round %d echoed %d %d\n", round, in[0], in[1]);
            ++failures;
          }
          round_issued = false;
          if (++round == kRounds) b_done_ms = msSince(t0);
        }
      }
    }
    mw_request_free(ra);
    std::fprintf(stderr, "rank 0: %d round trips on world B done after %ld ms; world A's recv after %ld ms\n",
                 kRounds, b_done_ms, a_done_ms);
    MWT_REQUIRE(failures == 0);
    MWT_REQUIRE(late == 31337);
    MWT_REQUIRE(b_done_ms < 2000);
    MWT_REQUIRE(b_done_ms < a_done_ms);
    MWT_REQUIRE(a_done_ms >= 2900);
  }
  mw_request_t *ba = nullptr, *bb = nullptr;
  MWT_CHECK(mw_barrier_async(m.world, &ba));
  MWT_CHECK(mw_barrier_async(b, &bb));
  MWT_CHECK(mwtest::waitAndFree(ba, kWaitMs));
  MWT_CHECK(mwtest::waitAndFree(bb, kWaitMs));
  return 0;
}

int nextEventTimeoutWorker(const std::string& url) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "quiet", 0, 1));
  mw_event_t ev;
  auto t0 = Clock::now();
  mw_status_t s = mw_next_event(m.ctx, &ev, 0);
  MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_TIMEOUT, "mw_next_event(0) with nothing happening"));
  MWT_REQUIRE(msSince(t0) < 100);
  t0 = Clock::now();
  s = mw_next_event(m.ctx, &ev, 400);
  const long wall = msSince(t0);
  std::fprintf(stderr, "mw_next_event(400 ms): %s after %ld ms\n", mw_status_string(s), wall);
  MWT_REQUIRE(mwtest::expectStatus(s, MW_ERR_TIMEOUT, "mw_next_event(400) with nothing happening"));
  MWT_REQUIRE(wall >= 350);
  MWT_REQUIRE(wall < 3000);
  return 0;
}

int userDataWorker(const std::string& url) {
  mwtest::Member m;
  MWT_REQUIRE(m.join(url, "userdata", 0, 1));
  int32_t in = 0, out = 99;
  mw_request_t *r = nullptr, *s = nullptr;
  MWT_CHECK(mw_recv_async(m.world, &in, 1, MW_INT32, 0, &r));
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}, uint64_t{1} << 63, uint64_t{0xDEADBEEFCAFEF00Dull}}) {
    mw_request_set_user_data(r, v);
    MWT_REQUIRE(mw_request_user_data(r) == v);
  }
  MWT_CHECK(mw_send_async(m.world, &out, 1, MW_INT32, 0, &s));
  mw_request_set_user_data(s, 0x0123456789ABCDEFull);
  MWT_REQUIRE(mw_request_user_data(s) == 0x0123456789ABCDEFull);
  MWT_REQUIRE(mw_request_user_data(r) == 0xDEADBEEFCAFEF00Dull);

  std::map<uint64_t, mw_request_t*> want = {{0xDEADBEEFCAFEF00Dull, r}, {0x0123456789ABCDEFull, s}};
  while (!want.empty()) {
    mw_completion_t c[4];
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 4, kWaitMs, &n));
    MWT_REQUIRE(n >= 1);
    for (size_t i = 0; i < n; ++i) {
      auto it = want.find(c[i].user_data);
      MWT_REQUIRE(it != want.end());
      MWT_REQUIRE(c[i].request == it->second);
      MWT_REQUIRE(c[i].world == m.world);
      MWT_REQUIRE(c[i].status == MW_OK);
      MWT_REQUIRE(mw_request_user_data(c[i].request) == c[i].user_data);
      want.erase(it);
    }
  }
  MWT_REQUIRE(in == 99);
  mw_request_free(r);
  mw_request_free(s);

  // Once the world is destroyed, its completions carry world == NULL:
  // finished ones with their status, pending ones MW_ERR_CANCELLED.
  int32_t a = 0, a_out = 5, never = 0;
  mw_request_t *ra = nullptr, *sa = nullptr, *fence = nullptr, *pending = nullptr;
  MWT_CHECK(mw_recv_async(m.world, &a, 1, MW_INT32, 0, &ra));
  MWT_CHECK(mw_send_async(m.world, &a_out, 1, MW_INT32, 0, &sa));
  mw_request_set_user_data(ra, 10);
  mw_request_set_user_data(sa, 11);
  MWT_CHECK(mw_barrier_async(m.world, &fence));
  MWT_CHECK(mw_wait(fence, kWaitMs));  // sa is done too (sends and collectives run in issue order)
  {
    // ra is done once a later receive from the same peer is (one lane each).
    int32_t f_in = 0, f_out = 6;
    mw_request_t *fr = nullptr, *fs = nullptr;
    MWT_CHECK(mw_recv_async(m.world, &f_in, 1, MW_INT32, 0, &fr));
    MWT_CHECK(mw_send_async(m.world, &f_out, 1, MW_INT32, 0, &fs));
    MWT_CHECK(mwtest::waitAndFree(fr, kWaitMs));
    MWT_CHECK(mwtest::waitAndFree(fs, kWaitMs));
  }
  MWT_CHECK(mw_recv_async(m.world, &never, 1, MW_INT32, 0, &pending));
  mw_request_set_user_data(pending, 12);
  MWT_CHECK(mw_world_destroy(m.world));
  m.world = nullptr;
  std::map<uint64_t, mw_status_t> got;
  const auto deadline = Clock::now() + 10s;
  while (got.size() < 3 && Clock::now() < deadline) {
    mw_completion_t c[4];
    size_t n = 0;
    MWT_CHECK(mw_poll(m.ctx, c, 4, 1000, &n));
    for (size_t i = 0; i < n; ++i) {
      MWT_REQUIRE(c[i].world == nullptr);
      MWT_REQUIRE(got.emplace(c[i].user_data, c[i].status).second);
    }
  }
  MWT_REQUIRE(got.size() == 3);
  MWT_REQUIRE(got[10] == MW_OK && got[11] == MW_OK);
  MWT_REQUIRE(mwtest::expectStatus(got[12], MW_ERR_CANCELLED, "pending recv of a destroyed world"));
  MWT_REQUIRE(mw_test(pending) == MW_ERR_CANCELLED);
  MWT_REQUIRE(a == 5);
  mw_request_free(ra);
  mw_request_free(sa);
  mw_request_free(fence);
  mw_request_free(pending);
  return 0;
}

// ------------------------------------------------------------ tests

TEST(Completion, PollDeliversEachCompletionExactlyOnce) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return exactlyOnceWorker(redis.url(), rank); }, kGroupTimeout));
}

TEST(Completion, StatusSeenByTestOrWaitIsNotPolled) {
  mwtest::RedisServer redis;
  mwlab::Shared<Flags> flags;
  EXPECT_TRUE(
      mwtest::runRanks(2, [&](int rank) { return reportedWorker(redis.url(), rank, *flags); }, kGroupTimeout));
}

TEST(Completion, FreedRequestIsNeverPolled) {
  mwtest::RedisServer redis;
  mwlab::Shared<Flags> flags;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return freedWorker(redis.url(), rank, *flags); }, kGroupTimeout));
}

TEST(Completion, PollSleepsWithoutSpinningAndWakesForAnotherThread) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(1, [&](int) { return pollSleepsWorker(redis.url()); }, kGroupTimeout));
}

TEST(Completion, WaitTimeoutLeavesRequestValidWithoutSpinning) {
  mwtest::RedisServer redis;
  mwlab::Shared<Flags> flags;
  EXPECT_TRUE(
      mwtest::runRanks(2, [&](int rank) { return waitTimeoutWorker(redis.url(), rank, *flags); }, kGroupTimeout));
}

TEST(Completion, SlowWorldDoesNotDelayAnother) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return slowWorldWorker(redis.url(), rank); }, kGroupTimeout));
}

TEST(Completion, NextEventTimesOut) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(1, [&](int) { return nextEventTimeoutWorker(redis.url()); }, kGroupTimeout));
}

TEST(Completion, UserDataAndCompletionWorld) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(1, [&](int) { return userDataWorker(redis.url()); }, kGroupTimeout));
}

}  // namespace
