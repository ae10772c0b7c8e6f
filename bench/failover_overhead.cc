#include "bench/failover_overhead.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include <multiworld/multiworld.h>

#include "bench/suite_common.h"
#include "tools/lab/shared.h"
#include "tools/lab/stats.h"

namespace mwbench {

std::unique_ptr<Child> labMember(const std::string& ns, const std::function<int()>& body) {
  return std::make_unique<Child>("member in " + ns, [ns, body] {
    if (!mwlab::NetLab::enter(ns)) {
      std::fprintf(stderr, "mw_bench failover: cannot enter namespace %s\n", ns.c_str());
      return 97;
    }
    return body();
  });
}

namespace {

constexpr int kWindow = 4;
constexpr int kMaxSizes = 16;
constexpr int kMaxRounds = 64;
enum Mode { kOn = 0, kOff = 1 };

struct OverheadBoard {
  double mbps[kMaxSizes][kMaxRounds][2] = {};
  uint64_t link_bytes[kMaxSizes][2][2] = {};  // [size][mode][link], rank 0's ends, all rounds
};

mw_context_t* contextFor(const std::string& redis_url, const std::string& addresses, Mode mode) {
  mw_config_t* cfg = nullptr;
  if (mw_config_new(&cfg) != MW_OK) return nullptr;
  mw_context_t* ctx = nullptr;
  bool ok = mw_config_set(cfg, "redis_url", redis_url.c_str()) == MW_OK &&
            mw_config_set(cfg, "data_addresses", addresses.c_str()) == MW_OK &&
            mw_config_set(cfg, "path_failover", mode == kOn ? "on" : "off") == MW_OK &&
            mw_context_new(cfg, &ctx) == MW_OK;
  mw_config_free(cfg);
  if (!ok) throw SuiteError(std::string("context (path_failover ") + (mode == kOn ? "on" : "off") +
                                    "): " + mw_last_error());
  return ctx;
}

// `iters` messages of `bytes` from rank 0 to rank 1, `kWindow` in flight,
// then a one-word reply: the time rank 0 waited for all of it, in seconds.
double transfer(mw_world_t* w, int rank, std::vector<std::vector<char>>& bufs, std::size_t bytes,
                std::size_t iters) {
  mw_request_t* reqs[kWindow] = {};
  auto finish = [&](mw_request_t*& r) {
    if (!r) return;
    common::mwWait(r, 60000, rank == 0 ? "send" : "recv");
    r = nullptr;
  };
  const double t0 = common::nowSeconds();
  for (std::size_t i = 0; i < iters; ++i) {
    mw_request_t*& r = reqs[i % kWindow];
    finish(r);
    void* buf = bufs[i % kWindow].data();
    common::mwCheck(rank == 0 ? mw_send_async(w, buf, bytes, MW_UINT8, 1, &r)
                              : mw_recv_async(w, buf, bytes, MW_UINT8, 0, &r),
                    "post");
  }
  for (auto& r : reqs) finish(r);
  uint32_t reply = 0;
  mw_request_t* r = nullptr;
  common::mwCheck(rank == 0 ? mw_recv_async(w, &reply, 1, MW_UINT32, 1, &r) : mw_send_async(w, &reply, 1, MW_UINT32, 0, &r),
                  "reply");
  common::mwWait(r, 60000, "reply");
  return common::nowSeconds() - t0;
}

int member(int rank, const BenchOptions& opt, const mwlab::Rails& rails, const std::string& redis_url,
           OverheadBoard& board) {
  const std::string addresses = mwlab::Rails::addresses({0, 1}, rank);
  mw_context_t* ctx[2] = {contextFor(redis_url, addresses, kOn), contextFor(redis_url, addresses, kOff)};
  mw_world_t* world[2] = {};
  const char* names[2] = {"failover-on", "failover-off"};
  for (int m : {kOn, kOff}) {
    common::mwCheck(mw_world_create(ctx[m], names[m], rank, 2, MW_BACKEND_UCX, 0, 60000, &world[m]), "mw_world_create");
  }
  const std::vector<std::size_t> sizes = common::sizesOf(opt);
  std::vector<std::vector<char>> bufs(kWindow, std::vector<char>(opt.max_bytes, static_cast<char>(rank)));
  for (int m : {kOn, kOff}) transfer(world[m], rank, bufs, sizes[0], 8);  // connections up
  const mwlab::NetEnd ends[2] = {{"", rails.link(0, 0).a.dev}, {"", rails.link(0, 1).a.dev}};
  for (std::size_t si = 0; si < sizes.size() && si < kMaxSizes; ++si) {
    const std::size_t bytes = sizes[si];
    const std::size_t iters =
        opt.iters ? opt.iters : std::clamp<std::size_t>((std::size_t{64} << 20) / bytes, 8, 2000);
    for (std::size_t round = 0; round < opt.rounds && round < kMaxRounds; ++round) {
      for (int j = 0; j < 2; ++j) {
        const int m = static_cast<int>((round + static_cast<std::size_t>(j)) % 2);
        mwlab::NetBytes before[2], after[2];
        if (rank == 0) {
          for (int k = 0; k < 2; ++k) before[k] = mwlab::NetLab::bytes(ends[k]);
        }
        const double secs = transfer(world[m], rank, bufs, bytes, iters);
        if (rank != 0) continue;
        board.mbps[si][round][m] = static_cast<double>(bytes * iters) / secs / 1e6;
        for (int k = 0; k < 2; ++k) {
          after[k] = mwlab::NetLab::bytes(ends[k]);
          board.link_bytes[si][m][k] += after[k].tx - before[k].tx + after[k].rx - before[k].rx;
        }
      }
    }
  }
  for (int m : {kOn, kOff}) {
    mw_world_destroy(world[m]);
    mw_context_free(ctx[m]);
  }
  return 0;
}

std::string via(const uint64_t link_bytes[2]) {
  const double total = static_cast<double>(link_bytes[0] + link_bytes[1]);
  if (total > 0 && link_bytes[0] >= 0.9 * total) return "link0";
  if (total > 0 && link_bytes[1] >= 0.9 * total) return "link1";
  return "both";
}

}  // namespace

std::vector<OverheadRow> measureFailoverOverhead(const BenchOptions& opt, mwlab::Rails& rails,
                                                 const std::string& redis_url) {
  mwlab::Shared<OverheadBoard> board;
  std::unique_ptr<Child> members[2];
  for (int r = 0; r < 2; ++r) {
    members[r] = labMember(rails.ns(r), [&, r] { return member(r, opt, rails, redis_url, *board); });
  }
  for (auto& m : members) {
    if (!m->join(std::chrono::minutes(10))) throw SuiteError(m->describe() + " (see stderr above)");
  }
  std::vector<OverheadRow> rows;
  const std::vector<std::size_t> sizes = common::sizesOf(opt);
  for (std::size_t si = 0; si < sizes.size() && si < kMaxSizes; ++si) {
    OverheadRow row;
    row.bytes = sizes[si];
    for (int m : {kOn, kOff}) {
      std::vector<double> v;
      for (std::size_t round = 0; round < opt.rounds && round < kMaxRounds; ++round) v.push_back(board->mbps[si][round][m]);
      (m == kOn ? row.on_mbps : row.off_mbps) = mwlab::median(v);
      (m == kOn ? row.on_via : row.off_via) = via(board->link_bytes[si][m]);
    }
    std::vector<double> ratios;
    for (std::size_t round = 0; round < opt.rounds && round < kMaxRounds; ++round) {
      const double on = board->mbps[si][round][kOn], off = board->mbps[si][round][kOff];
      if (off > 0) ratios.push_back(on / off);
    }
    row.ratio = ratios.empty() ? 0 : mwlab::median(ratios);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace mwbench
