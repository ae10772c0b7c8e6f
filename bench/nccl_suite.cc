// The nccl suite: multiworld's NCCL worlds against raw NCCL in the same
// configuration, in three parts (bench/nccl_parts.h): a size-1 world in
// one process, two ranks each in its own process, and a kill -9 of a peer
// next to a world that must not notice. This process only coordinates: it
// starts Redis, forks each part's processes and never touches CUDA, since
// a process that initialised CUDA cannot hand it to a forked child. Every
// part runs under a time limit; a part that fails says so and the next
// one runs.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/nccl_parts.h"
#include "bench/suite_common.h"
#include "tools/lab/clock.h"
#include "tools/lab/shared.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using namespace gpu;

// The pair part's sizes; those within --min-bytes..--max-bytes run.
constexpr size_t kPairSizes[] = {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20, size_t{256} << 20};
// Time limits, so that a hung part ends and the suite stays within ~4 min.
constexpr double kSingleLimitS = 90;  // per 5 rounds
constexpr double kPairBudgetS = 70, kPairLimitS = 100;
constexpr double kKillLimitS = 50;

int64_t g_start_ns = 0;

void say(const std::string& line) {
  std::fprintf(stderr, "mw_bench nccl: [%5.1f s] %s\n", secondsSince(g_start_ns), line.c_str());
  std::fflush(stderr);
}

int skipped(const BenchOptions& opt, const std::string& machine, const std::string& why) {
  std::printf("# nccl: skipped: %s\n", why.c_str());
  std::fflush(stdout);
  if (!opt.json_path.empty() &&
      !writeJson(opt.json_path, "nccl", opt.command, machine, {}, {{"skipped", jsonString(why)}})) {
    return 1;
  }
  return 0;
}

JsonRow jsonOf(const Row& r) {
  return {{"op", jsonString(r.op)},
          {"bytes", jnum(static_cast<double>(r.bytes))},
          {"iters", jnum(static_cast<double>(r.iters))},
          {"ours_gbps", jnum(r.oursGbps())},
          {"raw_gbps", jnum(r.rawGbps())},
          {"ratio", jnum(r.ratio())},
          {"ours_us", jnum(r.ours_s * 1e6)},
          {"raw_us", jnum(r.raw_s * 1e6)}};
}

std::string orNull(double v, bool known) { return known ? jnum(v) : "null"; }

std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

std::vector<size_t> pairSizes(const BenchOptions& opt) {
  std::vector<size_t> sizes;
  for (size_t b : kPairSizes) {
    if (b >= opt.min_bytes && b <= opt.max_bytes) sizes.push_back(b);
  }
  // A brief run (--max-bytes below 1 MiB) still runs one size.
  if (sizes.empty()) sizes.push_back(sizesOf(opt).back());
  return sizes;
}

// The pair part: prints its table, adds its rows and fields to the JSON.
bool pairPart(const BenchOptions& opt, const std::string& url, int devices, std::vector<JsonRow>* rows,
              JsonRow* top) {
  PairSetup s;
  s.redis_url = url;
  s.devices = devices;
  s.one_gpu = opt.device;
  s.sizes = pairSizes(opt);
  s.rounds = opt.rounds;
  s.iters = opt.iters;
  s.budget_s = kPairBudgetS;
  s.limit_s = kPairLimitS;
  const std::string placement = placementText(2, devices, opt.device);
  say("2 ranks: starting; " + placement);
  std::vector<Row> got;
  std::string note, why;
  try {
    why = runPair(s, &got, &note);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::printf("# nccl, 2 ranks: ours = a 2-rank multiworld NCCL world, completion by mw_wait; raw = a 2-rank "
              "ncclComm made by the same processes (ncclCommInitRank), on a stream of its own, completion by "
              "cudaStreamSynchronize; %s; allreduce = float32 sum, broadcast from rank 0, p2p = rank 0 sends and "
              "rank 1 receives; results checked once per op and size; a timed run: iters operations back to back "
              "on each rank, from a barrier to the slower rank's last completion; %s; median of %zu alternating "
              "rounds; gbps = 1e9 bit/s of buffer per op\n",
              placement.c_str(),
              (opt.iters ? "iterations " + std::to_string(opt.iters) : pairCalibration()).c_str(), s.rounds);
  printTableHeader();
  for (const Row& r : got) {
    printRow(r);
    JsonRow j = jsonOf(r);
    j.push_back({"procs", "2"});
    rows->push_back(j);
  }
  top->push_back({"pair_placement", jsonString(placement)});
  if (!note.empty()) {
    std::printf("# nccl, 2 ranks: %s\n", note.c_str());
    top->push_back({"pair_note", jsonString(note)});
  }
  if (!why.empty()) {
    std::printf("# nccl, 2 ranks: FAILED: %s\n", why.c_str());
    top->push_back({"pair_error", jsonString(why)});
  }
  std::fflush(stdout);
  say(why.empty() ? "2 ranks: done" : "2 ranks: FAILED: " + why);
  return why.empty();
}

// The kill part: prints its lines, adds its fields to the JSON.
bool killPart(const BenchOptions& opt, const std::string& url, int devices, JsonRow* top) {
  KillSetup s;
  s.redis_url = url;
  s.devices = devices;
  s.one_gpu = opt.device;
  s.limit_s = kKillLimitS;
  const std::string placement = placementText(3, devices, opt.device);
  say("kill: starting; " + placement);
  KillReport r;
  std::string why;
  try {
    why = runKill(s, &r);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::printf("# nccl, kill -9 isolation: %s; A and B share the world \"doomed\", A and C the world \"kept\"; A "
              "runs float32 allreduces of %zu bytes on \"kept\", %zu per window (~1 s), while its recv from B is "
              "pending on \"doomed\" and B sits idle; after a warm-up and %d baseline windows B is killed, then "
              "%d windows more; detect_ms: from the kill to the pending recv's completion (target < 100); "
              "kept_ratio: \"kept\"'s gbps after the kill / before (target >= 0.95)\n",
              placement.c_str(), r.bytes, r.ops_per_window, kKillBaselineWindows, kKillAfterWindows);
  std::string windows;
  for (size_t w = 0; w < r.window_gbps.size(); ++w) {
    const char* sep = w == 0                          ? "warm-up "
                      : w == 1                        ? " | baseline "
                      : w == 1 + kKillBaselineWindows ? " | after kill "
                                                      : " ";
    char num[32];
    std::snprintf(num, sizeof num, "%.4g", r.window_gbps[w]);
    windows += sep + std::string(num);
  }
  const bool ratios = r.baseline_gbps > 0;
  std::printf("kill9 window_gbps %s\n", windows.empty() ? "(none)" : windows.c_str());
  std::printf("kill9 detect_ms %s (%s)\n", r.detect_ms >= 0 ? fixed(r.detect_ms, 2).c_str() : "-",
              r.recv_status.c_str());
  std::printf("kill9 kept_ratio %s (first window after the kill %s)\n", ratios ? fixed(r.keptRatio(), 3).c_str() : "-",
              ratios ? fixed(r.firstRatio(), 3).c_str() : "-");
  std::printf("kill9 destroy_ms %s\n", r.destroy_ms >= 0 ? fixed(r.destroy_ms, 2).c_str() : "-");
  if (!why.empty()) std::printf("# nccl, kill -9 isolation: FAILED: %s\n", why.c_str());
  std::fflush(stdout);

  std::string list = "[";
  for (double g : r.window_gbps) list += (list.size() > 1 ? "," : "") + jnum(g);
  top->insert(top->end(), {{"kill9_placement", jsonString(placement)},
                           {"kill9_bytes", jnum(static_cast<double>(r.bytes))},
                           {"kill9_ops_per_window", jnum(static_cast<double>(r.ops_per_window))},
                           {"kill9_window_gbps", list + "]"},
                           {"kill9_detect_ms", orNull(r.detect_ms, r.detect_ms >= 0)},
                           {"kill9_recv_status", jsonString(r.recv_status)},
                           {"kill9_kept_baseline_gbps", orNull(r.baseline_gbps, ratios)},
                           {"kill9_kept_ratio", orNull(r.keptRatio(), ratios)},
                           {"kill9_kept_ratio_first_window", orNull(r.firstRatio(), ratios)},
                           {"kill9_destroy_ms", orNull(r.destroy_ms, r.destroy_ms >= 0)}});
  if (!why.empty()) top->push_back({"kill9_error", jsonString(why)});
  say(why.empty() ? "kill: done" : "kill: FAILED: " + why);
  return why.empty();
}

}  // namespace

int runNcclSuite(const BenchOptions& opt) {
  if (opt.min_bytes == 0 || opt.min_bytes % sizeof(float) != 0 || opt.min_bytes > opt.max_bytes ||
      opt.rounds == 0 || opt.device < 0) {
    std::fprintf(stderr,
                 "mw_bench nccl: need 0 < --min-bytes <= --max-bytes, --min-bytes a multiple of 4 (float32), "
                 "--rounds >= 1 and --device >= 0\n");
    return 2;
  }
  g_start_ns = mwlab::monotonicNs();
  std::vector<JsonRow> rows;
  JsonRow top;
  std::string machine = machineName();
  bool ok = true;
  try {
    mwlab::TempDir dir("mw-bench-");
    std::unique_ptr<SuiteRedis> redis;
    std::string redis_error;
    try {
      redis = std::make_unique<SuiteRedis>(opt.redis_url, dir.path());
    } catch (const std::exception& e) {
      redis_error = e.what();
    }
    const std::string url = redis ? redis->url() : "";

    mwlab::Shared<SingleBoard> single;
    std::string why;
    {
      say("size 1: starting");
      const double limit_s = kSingleLimitS * static_cast<double>((opt.rounds + 4) / 5);
      Child p("nccl size 1", [&] {
        runSingle(opt, url, redis_error, *single);
        return 0;
      });
      std::atomic<int> failed{0};
      why = joinAll({&p}, mwlab::monotonicNs() + static_cast<int64_t>(limit_s * 1e9), &failed, 0);
    }
    if (single->machine[0]) machine = single->machine;
    const int outcome = single->outcome;
    if (outcome == SingleBoard::kSkipped) return skipped(opt, machine, single->why);
    if (outcome == SingleBoard::kBadOptions) return 2;
    // Its own error first; else how its process ended, even after a result.
    if (outcome == SingleBoard::kFailed) why = single->why;
    if (outcome != SingleBoard::kMeasured && why.empty()) why = "its process ended without a result";
    if (!why.empty()) {
      std::fprintf(stderr, "mw_bench nccl: size 1: %s\nmw_bench nccl: size 1: FAILED\n", why.c_str());
      top.push_back({"single_error", jsonString(why)});
      ok = false;
    }
    for (const Row& r : single->rows.list()) rows.push_back(jsonOf(r));
    say("size 1: done");

    if (!redis) throw Error(redis_error);
    const int devices = single->devices;
    if (devices <= 0) throw Error("the GPU count is unknown, so the 2-rank and kill parts cannot run");
    ok = pairPart(opt, url, devices, &rows, &top) && ok;
    ok = killPart(opt, url, devices, &top) && ok;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench nccl: %s\nmw_bench nccl: FAILED\n", e.what());
    ok = false;
  }
  say(ok ? "all parts done" : "done; some part FAILED (see above)");
  if (!opt.json_path.empty() && !writeJson(opt.json_path, "nccl", opt.command, machine, rows, top)) return 1;
  return ok ? 0 : 1;
}

}  // namespace mwbench
