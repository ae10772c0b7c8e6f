#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/fanin_process.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::median;
using fanin::Impl;

constexpr size_t kDefaultMessages = 1000;
constexpr size_t kRounds = 3;

// RAW is raw UCX with the UCX backend, raw Gloo with Gloo (GLOO unused).
struct Row {
  int64_t senders = 0, messages = 0;
  double ours_gbps = 0, raw_gbps = 0, gloo_gbps = 0;
};

int worker(int rank, int senders, size_t m, const BenchOptions& opt, const std::string& url, const std::string& ns,
           const std::string& store_dir, int fd) {
  fanin::Process p(rank, senders, m, opt, url, ns, store_dir);
  const std::vector<Impl> all = opt.ucx ? std::vector<Impl>{Impl::Ours, Impl::Ucx, Impl::Gloo}
                                        : std::vector<Impl>{Impl::Ours, Impl::Gloo};
  std::map<Impl, std::vector<double>> seconds;
  for (size_t round = 0; round < kRounds; ++round) {
    // Each round starts with the next implementation.
    for (size_t k = 0; k < all.size(); ++k) {
      const Impl impl = all[(k + round) % all.size()];
      seconds[impl].push_back(p.pass(impl));
    }
  }
  if (rank == 0) {
    const double bits = static_cast<double>(senders) * static_cast<double>(m) * fanin::kMsgBytes * 8;
    auto gbps = [&](Impl impl) { return bits / std::max(median(seconds[impl]), 1e-9) / 1e9; };
    Row row;
    row.senders = senders;
    row.messages = static_cast<int64_t>(m);
    row.ours_gbps = gbps(Impl::Ours);
    row.raw_gbps = gbps(opt.ucx ? Impl::Ucx : Impl::Gloo);
    if (opt.ucx) row.gloo_gbps = gbps(Impl::Gloo);
    writeRecord(fd, &row, sizeof row);
  }
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
  const std::string name = resultsName("fanin", opt);
  std::vector<Row> rows;
  try {
    mwlab::TempDir dir("mw-bench-");
    SuiteRedis redis(opt.redis_url, dir.path());
    const std::string& url = redis.url();
    std::printf("# %s on %s: %s\n", name.c_str(), machine.c_str(), opt.command.c_str());
    std::printf("# one leader, K senders each streaming %zu messages of %zu bytes (%zu outstanding per sender); "
                "ours = K 2-rank multiworld %s worlds (spin_us %s), leader completes through mw_poll; ",
                m, fanin::kMsgBytes, fanin::kWindow, backendName(opt), spinText(opt).c_str());
    if (opt.ucx) {
      std::printf("raw = one raw ucp worker per process (UCX_TLS %s, error mode peer as ours), leader polls its "
                  "K*%zu tagged receives without pause, senders spin 20 us then sleep on the worker's fd, as ours; "
                  "gloo = ",
                  ucxTls().c_str(), fanin::kWindow);
    } else {
      std::printf("raw = ");
    }
    std::printf("one gloo::rendezvous::Context of K+1 (tcp on 127.0.0.1), leader waits round robin; gbps = 1e9 "
                "bit/s aggregate at the leader; median of %zu rounds, each starting with the next implementation\n",
                kRounds);
    if (opt.ucx) {
      std::printf("%7s %10s %10s %7s %10s\n", "senders", "ours_gbps", "raw_gbps", "ratio", "gloo_gbps");
    } else {
      std::printf("%7s %10s %10s %7s\n", "senders", "ours_gbps", "raw_gbps", "ratio");
    }
    std::fflush(stdout);
    for (int k : counts) {
      const std::string store_dir = dir.path() + "/gloo-store-" + std::to_string(k);
      std::filesystem::create_directory(store_dir);
      const std::string ns = "mwbench.fanin." + std::to_string(getpid()) + "." + std::to_string(k);
      bool ok = runWorkers(
          "fanin", k + 1, sizeof(Row),
          [&](int rank, int fd) { return worker(rank, k, m, opt, url, ns, store_dir, fd); },
          [&](const char* rec) {
            Row r;
            std::memcpy(&r, rec, sizeof r);
            rows.push_back(r);
            std::printf("%7lld %10.3f %10.3f %7.3f", static_cast<long long>(r.senders), r.ours_gbps, r.raw_gbps,
                        ratioOf(r));
            if (opt.ucx) std::printf(" %10.3f", r.gloo_gbps);
            std::printf("\n");
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
      JsonRow j = {{"senders", jnum(static_cast<double>(r.senders))},
                   {"messages_per_sender", jnum(static_cast<double>(r.messages))},
                   {"ours_gbps", jnum(r.ours_gbps)},
                   {"raw_gbps", jnum(r.raw_gbps)},
                   {"ratio", jnum(ratioOf(r))}};
      if (opt.ucx) j.push_back({"gloo_gbps", jnum(r.gloo_gbps)});
      jr.push_back(std::move(j));
    }
    JsonRow top = backendFields(opt, backendName(opt));
    if (opt.ucx) top.push_back({"raw_error_mode", jsonString("peer")});
    if (!writeJson(opt.json_path, name, opt.command, machine, jr, top)) return 1;
  }
  return 0;
}

}  // namespace mwbench
