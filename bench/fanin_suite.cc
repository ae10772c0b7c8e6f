#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include "bench/extra_suites.h"
#include "bench/suite_common.h"

namespace mwbench {
namespace {

using namespace common;
using UB = gloo::transport::UnboundBuffer;

constexpr int kTimeoutMs = 120000;
constexpr size_t kMsgBytes = 64 << 10;
constexpr size_t kWindow = 4;  // per sender: sends outstanding, receives posted at the leader
constexpr size_t kDefaultMessages = 1000;
constexpr size_t kRounds = 3;
constexpr uint64_t kSlot = 0x3000;

struct Row {
  int64_t senders = 0, messages = 0;
  double ours_gbps = 0, raw_gbps = 0;
};

struct Header {
  uint64_t sender, seq, check;
};

uint64_t checkOf(uint64_t sender, uint64_t seq) { return (sender << 40 ^ seq) * 0x9e3779b97f4a7c15ULL + 17; }
unsigned char fillOf(uint64_t sender) { return static_cast<unsigned char>(0x40 + sender); }

void stamp(char* p, uint64_t sender, uint64_t seq) {
  Header h{sender, seq, checkOf(sender, seq)};
  std::memcpy(p, &h, sizeof h);
}

void check(const char* p, uint64_t sender, uint64_t seq, bool full) {
  Header h;
  std::memcpy(&h, p, sizeof h);
  if (h.sender != sender || h.seq != seq || h.check != checkOf(sender, seq)) {
    throw Error("message " + std::to_string(seq) + " from sender " + std::to_string(sender) + " arrived wrong");
  }
  if (full) {
    for (size_t i = sizeof h; i < kMsgBytes; ++i) {
      if (static_cast<unsigned char>(p[i]) != fillOf(sender)) {
        throw Error("payload of message " + std::to_string(seq) + " from sender " + std::to_string(sender) +
                    " is wrong at byte " + std::to_string(i));
      }
    }
  }
}

int worker(int rank, int senders, size_t m, const std::string& url, const std::string& ns,
           const std::string& store_dir, int fd) {
  const int procs = senders + 1;
  mw_context_t* ctx = newContext(url, ns, kTimeoutMs);
  // OURS: sender k (rank k, 1-based) shares world "fan-<k>" with the leader.
  std::vector<mw_world_t*> worlds;
  if (rank == 0) {
    for (int k = 1; k <= senders; ++k) {
      mw_world_t* w = nullptr;
      mwCheck(mw_world_create(ctx, ("fan-" + std::to_string(k)).c_str(), 0, 2, MW_BACKEND_GLOO, 0, kTimeoutMs, &w),
              "mw_world_create");
      worlds.push_back(w);
    }
  } else {
    mw_world_t* w = nullptr;
    mwCheck(mw_world_create(ctx, ("fan-" + std::to_string(rank)).c_str(), 1, 2, MW_BACKEND_GLOO, 0, kTimeoutMs, &w),
            "mw_world_create");
    worlds.push_back(w);
  }
  // RAW: everyone in one context.
  auto raw = rawGlooContext(rank, procs, store_dir, kTimeoutMs);
  auto barrier = [&] {
    gloo::BarrierOptions b(raw);
    b.setTag(11);
    gloo::barrier(b);
  };
  const std::chrono::milliseconds timeout(kTimeoutMs);

  // Buffers: the leader has kWindow per sender, a sender kWindow.
  const size_t nbuf = rank == 0 ? static_cast<size_t>(senders) * kWindow : kWindow;
  std::vector<char> mem(nbuf * kMsgBytes);
  auto buf = [&](size_t i) { return mem.data() + i * kMsgBytes; };
  if (rank != 0) std::memset(mem.data(), fillOf(static_cast<uint64_t>(rank)), mem.size());
  std::vector<std::unique_ptr<UB>> ubs;
  for (size_t i = 0; i < nbuf; ++i) ubs.push_back(raw->createUnboundBuffer(buf(i), kMsgBytes));

  std::vector<double> ours_t, raw_t;
  for (size_t round = 0; round < kRounds; ++round) {
    for (int pass = 0; pass < 2; ++pass) {
      const bool ours = (pass == 0) == (round % 2 == 0);
      if (rank == 0) {
        // Leader: kWindow receives posted per sender, reposted as they complete.
        std::memset(mem.data(), 0, mem.size());
        std::vector<uint64_t> next(static_cast<size_t>(senders) + 1, 0);
        auto slotOf = [&](int k, uint64_t seq) { return static_cast<size_t>(k - 1) * kWindow + seq % kWindow; };
        auto postOurs = [&](int k, uint64_t seq) {
          mw_request_t* r = nullptr;
          mwCheck(mw_recv_async(worlds[static_cast<size_t>(k - 1)], buf(slotOf(k, seq)), kMsgBytes, MW_UINT8, 1, &r),
                  "mw_recv_async");
          mw_request_set_user_data(r, static_cast<uint64_t>(k) << 32 | seq);
        };
        for (int k = 1; k <= senders; ++k) {
          for (uint64_t s = 0; s < std::min<uint64_t>(m, kWindow); ++s) {
            if (ours) {
              postOurs(k, s);
            } else {
              ubs[slotOf(k, s)]->recv(k, kSlot, 0, kMsgBytes);
            }
          }
        }
        barrier();
        const double t0 = nowSeconds();
        const uint64_t total = static_cast<uint64_t>(senders) * m;
        uint64_t done = 0;
        if (ours) {
          mw_completion_t comp[64];
          while (done < total) {
            size_t got = 0;
            mwCheck(mw_poll(ctx, comp, 64, kTimeoutMs, &got), "mw_poll");
            if (got == 0) throw Error("leader: no completion in time");
            for (size_t i = 0; i < got; ++i) {
              if (comp[i].status != MW_OK) throw Error(std::string("recv failed: ") + mw_status_string(comp[i].status));
              const int k = static_cast<int>(comp[i].user_data >> 32);
              const uint64_t seq = comp[i].user_data & 0xffffffffu;
              mw_request_free(comp[i].request);
              check(buf(slotOf(k, seq)), static_cast<uint64_t>(k), seq, seq + 1 == m);
              ++done;
              if (seq + kWindow < m) postOurs(k, seq + kWindow);
            }
          }
        } else {
          // Round robin over the senders' oldest receives.
          while (done < total) {
            for (int k = 1; k <= senders; ++k) {
              uint64_t& seq = next[static_cast<size_t>(k)];
              if (seq >= m) continue;
              UB& b = *ubs[slotOf(k, seq)];
              if (!b.waitRecv(nullptr, timeout)) throw Error("raw recv aborted");
              check(buf(slotOf(k, seq)), static_cast<uint64_t>(k), seq, seq + 1 == m);
              if (seq + kWindow < m) b.recv(k, kSlot, 0, kMsgBytes);
              ++seq;
              ++done;
            }
          }
        }
        (ours ? ours_t : raw_t).push_back(nowSeconds() - t0);
        barrier();
      } else {
        barrier();
        std::deque<mw_request_t*> inflight;
        std::deque<UB*> raw_inflight;
        for (uint64_t seq = 0; seq < m; ++seq) {
          char* p = buf(seq % kWindow);
          if (ours) {
            if (inflight.size() >= kWindow) {
              mwWait(inflight.front(), kTimeoutMs, "send");
              inflight.pop_front();
            }
            stamp(p, static_cast<uint64_t>(rank), seq);
            mw_request_t* r = nullptr;
            mwCheck(mw_send_async(worlds[0], p, kMsgBytes, MW_UINT8, 0, &r), "mw_send_async");
            inflight.push_back(r);
          } else {
            if (raw_inflight.size() >= kWindow) {
              if (!raw_inflight.front()->waitSend(nullptr, timeout)) throw Error("raw send aborted");
              raw_inflight.pop_front();
            }
            stamp(p, static_cast<uint64_t>(rank), seq);
            UB* b = ubs[seq % kWindow].get();
            b->send(0, kSlot, 0, kMsgBytes);
            raw_inflight.push_back(b);
          }
        }
        for (auto* r : inflight) mwWait(r, kTimeoutMs, "send");
        for (auto* b : raw_inflight)
          if (!b->waitSend(nullptr, timeout)) throw Error("raw send aborted");
        barrier();
      }
    }
  }
  if (rank == 0) {
    Row row;
    row.senders = senders;
    row.messages = static_cast<int64_t>(m);
    const double bits = static_cast<double>(senders) * static_cast<double>(m) * kMsgBytes * 8;
    row.ours_gbps = bits / std::max(median(ours_t), 1e-9) / 1e9;
    row.raw_gbps = bits / std::max(median(raw_t), 1e-9) / 1e9;
    writeRecord(fd, &row, sizeof row);
  }
  barrier();
  for (auto* w : worlds) mw_world_destroy(w);
  barrier();
  mw_context_free(ctx);
  ubs.clear();
  raw.reset();
  return 0;
}

double ratioOf(const Row& r) { return r.raw_gbps > 0 ? r.ours_gbps / r.raw_gbps : 0; }

}  // namespace

int runFaninSuite(const BenchOptions& opt) {
  const size_t m = opt.iters ? opt.iters : kDefaultMessages;
  if (m >= (1ULL << 32)) {
    std::fprintf(stderr, "mw_bench fanin: --iters too large\n");
    return 2;
  }
  std::vector<int> counts;
  for (int k : {1, 4, 16, 32})
    if (static_cast<size_t>(k) <= opt.max_senders) counts.push_back(k);
  if (counts.empty()) {
    std::fprintf(stderr, "mw_bench fanin: --max-senders must be at least 1\n");
    return 2;
  }
  const std::string machine = machineName();
  std::vector<Row> rows;
  try {
    TempDir dir;
    SuiteRedis redis(opt.redis_url, dir.path());
    const std::string& url = redis.url();
    std::printf("# fanin on %s: %s\n", machine.c_str(), opt.command.c_str());
    std::printf("# one leader, K senders each streaming %zu messages of %zu bytes (%zu outstanding per sender); "
                "ours = K 2-rank multiworld Gloo worlds, leader completes through mw_poll; raw = one "
                "gloo::rendezvous::Context of K+1, leader waits round robin; tcp on 127.0.0.1; gbps = 1e9 bit/s "
                "aggregate at the leader; median of %zu alternating rounds\n",
                m, kMsgBytes, kWindow, kRounds);
    std::printf("%7s %10s %10s %7s\n", "senders", "ours_gbps", "raw_gbps", "ratio");
    std::fflush(stdout);
    for (int k : counts) {
      const std::string store_dir = dir.path() + "/gloo-store-" + std::to_string(k);
      std::filesystem::create_directory(store_dir);
      const std::string ns = "mwbench.fanin." + std::to_string(getpid()) + "." + std::to_string(k);
      bool ok = runWorkers(
          "fanin", k + 1, sizeof(Row), [&](int rank, int fd) { return worker(rank, k, m, url, ns, store_dir, fd); },
          [&](const char* rec) {
            Row r;
            std::memcpy(&r, rec, sizeof r);
            rows.push_back(r);
            std::printf("%7lld %10.3f %10.3f %7.3f\n", static_cast<long long>(r.senders), r.ours_gbps, r.raw_gbps,
                        ratioOf(r));
            std::fflush(stdout);
          });
      if (!ok) {
        std::fprintf(stderr, "mw_bench fanin: FAILED\n");
        return 1;
      }
    }
    if (rows.size() != counts.size()) {
      std::fprintf(stderr, "mw_bench fanin: got %zu of %zu rows\nmw_bench fanin: FAILED\n", rows.size(), counts.size());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench fanin: %s\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"senders", jnum(static_cast<double>(r.senders))},
                    {"messages_per_sender", jnum(static_cast<double>(r.messages))},
                    {"ours_gbps", jnum(r.ours_gbps)},
                    {"raw_gbps", jnum(r.raw_gbps)},
                    {"ratio", jnum(ratioOf(r))}});
    }
    if (!writeJson(opt.json_path, "fanin", opt.command, machine, jr)) return 1;
  }
  return 0;
}

}  // namespace mwbench
