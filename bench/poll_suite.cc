#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::median;

constexpr int kTimeoutMs = 60000;
constexpr size_t kMsgBytes = 64;
constexpr size_t kWindow = 8;  // receives (and sends) outstanding
// World counts measured; the threads of both processes are counted at each.
constexpr int kWorldCounts[] = {1, 64, 256};
constexpr size_t kDefaultMessages = 10000;
constexpr size_t kRounds = 3;

// Rank 1 sends the measurements; rank 0 only its thread count (first: it
// writes before it starts sending, rank 1 after it received everything).
struct Row {
  int64_t rank = 0;
  int64_t worlds = 0;
  int64_t messages = 0;
  int64_t threads = 0;       // of the process that wrote the record
  int64_t send_threads = 0;  // the sender's, filled in by the parent
  double poll_ns = 0, test_ns = 0, poll_cpu_ns = 0, test_cpu_ns = 0;
};

struct Msg {
  uint64_t seq;
  uint64_t check;
  unsigned char fill[kMsgBytes - 16];
};
static_assert(sizeof(Msg) == kMsgBytes, "message layout");

uint64_t checkOf(uint64_t seq) { return seq * 0x9e3779b97f4a7c15ULL ^ 0x5bd1e995ULL; }

void syncWorld(mw_world_t* w) {
  mw_request_t* r = nullptr;
  mwCheck(mw_barrier_async(w, &r), "mw_barrier_async");
  mwWait(r, kTimeoutMs, "barrier");
}

// Rank 0: streams n messages with kWindow sends outstanding.
void sendStream(mw_world_t* w, size_t n) {
  std::vector<Msg> bufs(kWindow);
  std::deque<mw_request_t*> inflight;
  syncWorld(w);
  for (size_t i = 0; i < n; ++i) {
    if (inflight.size() >= kWindow) {
      mwWait(inflight.front(), kTimeoutMs, "send");
      inflight.pop_front();
    }
    Msg& m = bufs[i % kWindow];
    m.seq = i;
    m.check = checkOf(i);
    std::memset(m.fill, static_cast<int>(i & 0xff), sizeof m.fill);
    mw_request_t* r = nullptr;
    mwCheck(mw_send_async(w, &m, kMsgBytes, MW_UINT8, 1, &r), "mw_send_async");
    inflight.push_back(r);
  }
  while (!inflight.empty()) {
    mwWait(inflight.front(), kTimeoutMs, "send");
    inflight.pop_front();
  }
  syncWorld(w);
}

void checkMsg(const Msg& m, uint64_t seq) {
  if (m.seq != seq || m.check != checkOf(seq)) {
    throw Error("message " + std::to_string(seq) + " arrived wrong (seq field " + std::to_string(m.seq) + ")");
  }
  for (unsigned char c : m.fill) {
    if (c != static_cast<unsigned char>(seq & 0xff)) throw Error("payload of message " + std::to_string(seq) + " is wrong");
  }
}

// Rank 1: receives n messages, completing them through mw_poll (use_poll)
// or by spinning mw_test on the oldest. Returns {wall s, cpu s}.
std::pair<double, double> recvStream(mw_context_t* ctx, mw_world_t* w, size_t n, bool use_poll) {
  std::vector<Msg> bufs(kWindow);
  std::deque<mw_request_t*> inflight;  // test mode
  size_t posted = 0;
  auto post = [&] {
    Msg& m = bufs[posted % kWindow];
    std::memset(&m, 0xA5, sizeof m);
    mw_request_t* r = nullptr;
    mwCheck(mw_recv_async(w, &m, kMsgBytes, MW_UINT8, 0, &r), "mw_recv_async");
    mw_request_set_user_data(r, posted);
    if (!use_poll) inflight.push_back(r);
    ++posted;
  };
  while (posted < std::min(n, kWindow)) post();
  syncWorld(w);
  const double t0 = nowSeconds(), c0 = cpuSeconds();
  size_t done = 0;
  if (use_poll) {
    mw_completion_t comp[kWindow];
    while (done < n) {
      size_t got = 0;
      mwCheck(mw_poll(ctx, comp, kWindow, kTimeoutMs, &got), "mw_poll");
      if (got == 0) throw Error("no completion within " + std::to_string(kTimeoutMs) + " ms");
      for (size_t i = 0; i < got; ++i) {
        if (comp[i].status != MW_OK) throw Error(std::string("recv failed: ") + mw_status_string(comp[i].status));
        const uint64_t seq = comp[i].user_data;
        mw_request_free(comp[i].request);
        checkMsg(bufs[seq % kWindow], seq);
        ++done;
        if (posted < n) post();
      }
    }
  } else {
    const double deadline = t0 + kTimeoutMs / 1e3;
    while (done < n) {
      mw_request_t* r = inflight.front();
      mw_status_t s;
      uint64_t spins = 0;
      while ((s = mw_test(r)) == MW_IN_PROGRESS) {
        if ((++spins & 0xfffff) == 0 && nowSeconds() > deadline) throw Error("mw_test: no completion in time");
      }
      if (s != MW_OK) throw Error(std::string("recv failed: ") + mw_status_string(s));
      const uint64_t seq = mw_request_user_data(r);
      mw_request_free(r);
      inflight.pop_front();
      checkMsg(bufs[seq % kWindow], seq);
      ++done;
      if (posted < n) post();
    }
  }
  const double wall = nowSeconds() - t0, cpu = cpuSeconds() - c0;
  syncWorld(w);
  return {wall, cpu};
}

int worker(int rank, const BenchOptions& opt, const std::string& url, const std::string& ns, size_t n, int fd) {
  const mw_backend_t backend = backendOf(opt);
  mw_context_t* ctx = newContext(url, ns, kTimeoutMs, opt.spin_us);
  std::vector<mw_world_t*> worlds;
  auto open = [&](int upto) {
    while (static_cast<int>(worlds.size()) < upto) {
      mw_world_t* w = nullptr;
      const std::string name = "poll-" + std::to_string(worlds.size());
      mwCheck(mw_world_create(ctx, name.c_str(), rank, 2, backend, 0, kTimeoutMs, &w), "mw_world_create");
      worlds.push_back(w);
    }
  };
  for (int count : kWorldCounts) {
    open(count);
    mw_world_t* w = worlds[0];
    syncWorld(w);  // both have every world open
    if (rank == 0) {
      Row row;
      row.worlds = count;
      row.threads = threadCount();
      writeRecord(fd, &row, sizeof row);
    }
    const int threads = threadCount();
    std::vector<double> pw, tw, pc, tc;
    for (size_t round = 0; round < kRounds; ++round) {
      for (int k = 0; k < 2; ++k) {
        const bool use_poll = (k == 0) == (round % 2 == 0);
        if (rank == 0) {
          sendStream(w, n);
        } else {
          auto [wall, cpu] = recvStream(ctx, w, n, use_poll);
          (use_poll ? pw : tw).push_back(wall / static_cast<double>(n) * 1e9);
          (use_poll ? pc : tc).push_back(cpu / static_cast<double>(n) * 1e9);
        }
      }
    }
    if (rank == 1) {
      Row row;
      row.rank = 1;
      row.worlds = count;
      row.threads = threads;
      row.messages = static_cast<int64_t>(n);
      row.poll_ns = median(pw);
      row.test_ns = median(tw);
      row.poll_cpu_ns = median(pc);
      row.test_cpu_ns = median(tc);
      writeRecord(fd, &row, sizeof row);
    }
  }
  syncWorld(worlds[0]);
  for (auto* w : worlds) mw_world_destroy(w);
  mw_context_free(ctx);
  return 0;
}

}  // namespace

int runPollSuite(const BenchOptions& opt) {
  const size_t n = opt.iters ? opt.iters : kDefaultMessages;
  const std::string machine = machineName();
  const std::string name = resultsName("poll", opt);
  std::vector<Row> rows;
  try {
    mwlab::TempDir dir("mw-bench-");
    SuiteRedis redis(opt.redis_url, dir.path());
    const std::string& url = redis.url();
    std::printf("# %s on %s: %s\n", name.c_str(), machine.c_str(), opt.command.c_str());
    std::printf("# no raw baseline (neither Gloo nor UCX has a completion queue of requests); one process pair on "
                "127.0.0.1 with that many 2-rank multiworld %s worlds open (spin_us %s), one world carries "
                "%zu %zu-byte sends with %zu receives outstanding, the others are idle; receiving side: wall ns and "
                "process CPU ns (getrusage, all threads) per completion, completed through mw_poll or by spinning "
                "mw_test on the oldest; median of %zu alternating rounds; threads = /proc/self/task of the sending "
                "and the receiving process with the worlds open\n",
                backendName(opt), spinText(opt).c_str(), n, kMsgBytes, kWindow, kRounds);
    std::printf("%6s %23s %23s %22s %22s %12s %12s\n", "worlds", "ns_per_completion_poll", "ns_per_completion_test",
                "cpu_ns_per_compl_poll", "cpu_ns_per_compl_test", "send_threads", "recv_threads");
    std::fflush(stdout);
    const std::string ns = "mwbench.poll." + std::to_string(getpid());
    std::map<int64_t, int64_t> sender_threads;  // by world count
    bool ok = runWorkers(
        "poll", 2, sizeof(Row), [&](int rank, int fd) { return worker(rank, opt, url, ns, n, fd); },
        [&](const char* rec) {
          Row r;
          std::memcpy(&r, rec, sizeof r);
          if (r.rank == 0) {
            sender_threads[r.worlds] = r.threads;
            return;
          }
          r.send_threads = sender_threads[r.worlds];
          rows.push_back(r);
          std::printf("%6lld %23.0f %23.0f %22.0f %22.0f %12lld %12lld\n", static_cast<long long>(r.worlds),
                      r.poll_ns, r.test_ns, r.poll_cpu_ns, r.test_cpu_ns, static_cast<long long>(r.send_threads),
                      static_cast<long long>(r.threads));
          std::fflush(stdout);
        });
    const size_t expected = std::size(kWorldCounts);
    if (ok && rows.size() != expected) {
      std::fprintf(stderr, "mw_bench poll: got %zu of %zu rows\n", rows.size(), expected);
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "mw_bench poll: FAILED\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench poll: %s\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"worlds", jnum(static_cast<double>(r.worlds))},
                    {"messages", jnum(static_cast<double>(r.messages))},
                    {"ns_per_completion_poll", jnum(r.poll_ns)},
                    {"ns_per_completion_test", jnum(r.test_ns)},
                    {"cpu_ns_per_completion_poll", jnum(r.poll_cpu_ns)},
                    {"cpu_ns_per_completion_test", jnum(r.test_cpu_ns)},
                    {"send_threads", jnum(static_cast<double>(r.send_threads))},
                    {"recv_threads", jnum(static_cast<double>(r.threads))}});
    }
    if (!writeJson(opt.json_path, name, opt.command, machine, jr, backendFields(opt))) return 1;
  }
  return 0;
}

}  // namespace mwbench
