#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>

#include "bench/extra_suites.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::median;

constexpr int kTimeoutMs = 120000;
// Elements processed per timed round and side, so small sizes get many
// iterations and 64 MiB a few.
constexpr double kRoundBytes = 16.0 * (1 << 20);
constexpr size_t kMinIters = 2, kMaxIters = 300;

struct Row {
  uint64_t procs = 0, bytes = 0;
  double ours_gbps = 0, raw_gbps = 0, ours_lat_us = 0, raw_lat_us = 0;
};

size_t itersFor(const BenchOptions& opt, size_t bytes) {
  if (opt.iters) return opt.iters;
  double n = kRoundBytes / static_cast<double>(bytes);
  return static_cast<size_t>(std::clamp(n, static_cast<double>(kMinIters), static_cast<double>(kMaxIters)));
}

void sumFloats(void* c, const void* a, const void* b, size_t n) {
  float* out = static_cast<float*>(c);
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

// Element i of rank r's input: small integers, exact in float32.
float inputOf(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1)); }

void verify(const float* out, size_t count, int procs, const char* what) {
  const int s = procs * (procs + 1) / 2;
  for (size_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(s * static_cast<int>(i % 13 + 1));
    if (out[i] != want) {
      throw Error(std::string(what) + ": element " + std::to_string(i) + " of " + std::to_string(count) + " is " +
                  std::to_string(out[i]) + ", expected " + std::to_string(want));
    }
  }
}

int worker(int rank, int procs, const BenchOptions& opt, const std::string& redis_url, const std::string& ns,
           const std::string& store_dir, int fd) {
  const bool compare = opt.metrics == "compare";
  mw_context_t* ctx = newContext(redis_url, ns, kTimeoutMs, opt.spin_us, opt.metrics != "off");
  mw_world_t* world = nullptr;
  mwCheck(mw_world_create(ctx, ("allreduce-" + std::to_string(procs)).c_str(), rank, procs, backendOf(opt), 0,
                          kTimeoutMs, &world),
          "mw_world_create");
  // --metrics compare: "raw" is ours again, on a context with metrics off.
  mw_context_t* ctx_off = compare ? newContext(redis_url, ns, kTimeoutMs, opt.spin_us, false) : nullptr;
  mw_world_t* world_off = nullptr;
  if (compare) {
    mwCheck(mw_world_create(ctx_off, ("allreduce-off-" + std::to_string(procs)).c_str(), rank, procs,
                            backendOf(opt), 0, kTimeoutMs, &world_off),
            "mw_world_create");
  }
  auto raw = rawGlooContext(rank, procs, store_dir, kTimeoutMs);
  auto barrier = [&] {
    gloo::BarrierOptions b(raw);
    b.setTag(7);
    gloo::barrier(b);
  };
  uint32_t tag = 100;

  for (size_t bytes : sizesOf(opt)) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = inputOf(rank, i);
    const size_t iters = itersFor(opt, bytes);

    auto runOn = [&](mw_world_t* w, size_t n, bool check) {
      barrier();
      double t0 = nowSeconds();
      for (size_t k = 0; k < n; ++k) {
        if (check && k + 1 == n) std::memset(out.data(), 0xff, count * sizeof(float));
        mw_request_t* r = nullptr;
        mwCheck(mw_allreduce_async(w, in.data(), out.data(), count, MW_FLOAT32, MW_SUM, &r), "mw_allreduce_async");
        mwWait(r, kTimeoutMs, "ours allreduce");
      }
      double t = nowSeconds() - t0;
      if (check) verify(out.data(), count, procs, "ours allreduce");
      return t;
    };
    auto runOurs = [&](size_t n, bool check) { return runOn(world, n, check); };
    auto runRaw = [&](size_t n, bool check) {
      if (compare) return runOn(world_off, n, check);
      gloo::AllreduceOptions o(raw);
      o.setInput(in.data(), count);
      o.setOutput(out.data(), count);
      o.setReduceFunction(&sumFloats);
      o.setTimeout(std::chrono::milliseconds(kTimeoutMs));
      barrier();
      double t0 = nowSeconds();
      for (size_t k = 0; k < n; ++k) {
        if (check && k + 1 == n) std::memset(out.data(), 0xff, count * sizeof(float));
        o.setTag(tag++);
        gloo::allreduce(o);
      }
      double t = nowSeconds() - t0;
      if (check) verify(out.data(), count, procs, "raw allreduce");
      return t;
    };
    // Warm-up, checked.
    runOurs(1, true);
    runRaw(1, true);
    std::vector<double> ours, raw_t;
    for (size_t round = 0; round < opt.rounds; ++round) {
      const bool last = round + 1 == opt.rounds;
      if (round % 2 == 0) {
        ours.push_back(runOurs(iters, last));
        raw_t.push_back(runRaw(iters, last));
      } else {
        raw_t.push_back(runRaw(iters, last));
        ours.push_back(runOurs(iters, last));
      }
    }
    if (rank == 0) {
      Row row;
      row.procs = static_cast<uint64_t>(procs);
      row.bytes = bytes;
      const double to = std::max(median(ours), 1e-9) / static_cast<double>(iters);
      const double tr = std::max(median(raw_t), 1e-9) / static_cast<double>(iters);
      row.ours_gbps = static_cast<double>(bytes) * 8 / to / 1e9;
      row.raw_gbps = static_cast<double>(bytes) * 8 / tr / 1e9;
      row.ours_lat_us = to * 1e6;
      row.raw_lat_us = tr * 1e6;
      writeRecord(fd, &row, sizeof row);
    }
  }
  barrier();
  // Everyone is past the last operation: leave.
  mw_world_destroy(world);
  if (world_off) mw_world_destroy(world_off);
  barrier();
  mw_context_free(ctx);
  if (ctx_off) mw_context_free(ctx_off);
  raw.reset();
  return 0;
}

double ratioOf(const Row& r) { return r.raw_gbps > 0 ? r.ours_gbps / r.raw_gbps : 0; }

}  // namespace

int runAllreduceSuite(const BenchOptions& opt) {
  if (opt.min_bytes == 0 || opt.min_bytes > opt.max_bytes || opt.rounds == 0) {
    std::fprintf(stderr, "mw_bench allreduce: need 0 < --min-bytes <= --max-bytes and --rounds >= 1\n");
    return 2;
  }
  const std::string machine = machineName();
  const std::string name = resultsName("allreduce", opt) + (opt.metrics == "compare" ? ", metrics on/off" : "");
  std::vector<Row> rows;
  size_t expected = 0;
  bool ok = true;
  try {
    mwlab::TempDir dir("mw-bench-");
    SuiteRedis redis(opt.redis_url, dir.path());
    const std::string& url = redis.url();
    std::printf("# %s on %s: %s\n", name.c_str(), machine.c_str(), opt.command.c_str());
    std::printf("# ours = mw_allreduce_async+mw_wait on a multiworld %s world%s, raw = gloo::allreduce on a "
                "gloo::rendezvous::Context, tcp on 127.0.0.1; float32 sum, one op at a time; "
                "gbps = 1e9 bit/s of buffer per op; lat = time per op; median of %zu alternating rounds; %s\n",
                backendName(opt),
                opt.ucx ? (" (UCX_TLS " + ucxTls() + ", error mode peer)").c_str() : " (tcp on 127.0.0.1)",
                opt.rounds, opt.iters ? ("iterations " + std::to_string(opt.iters)).c_str()
                                      : "iterations = clamp(16 MiB / bytes, 2, 300)");
    if (opt.metrics == "compare") {
      std::printf("# --metrics compare: raw = ours again on a context with metrics off, ours with them on; "
                  "ratio = on/off\n");
    } else {
      std::printf("# ours' metrics %s\n", opt.metrics.c_str());
    }
    std::printf("%5s %10s %10s %10s %7s %12s %11s\n", "procs", "bytes", "ours_gbps", "raw_gbps", "ratio",
                "ours_lat_us", "raw_lat_us");
    std::fflush(stdout);
    for (int procs : {2, 4}) {
      const std::string store_dir = dir.path() + "/gloo-store-" + std::to_string(procs);
      std::filesystem::create_directory(store_dir);
      const std::string ns = "mwbench.ar." + std::to_string(getpid()) + "." + std::to_string(procs);
      expected += sizesOf(opt).size();
      bool good = runWorkers(
          "allreduce", procs, sizeof(Row),
          [&](int rank, int fd) { return worker(rank, procs, opt, url, ns, store_dir, fd); },
          [&](const char* rec) {
            Row r;
            std::memcpy(&r, rec, sizeof r);
            rows.push_back(r);
            std::printf("%5llu %10llu %10.4g %10.4g %7.3f %12.2f %11.2f\n", static_cast<unsigned long long>(r.procs),
                        static_cast<unsigned long long>(r.bytes), r.ours_gbps, r.raw_gbps, ratioOf(r), r.ours_lat_us,
                        r.raw_lat_us);
            std::fflush(stdout);
          });
      if (!good) {
        ok = false;
        break;
      }
    }
    if (ok && rows.size() != expected) {
      std::fprintf(stderr, "mw_bench allreduce: got %zu of %zu rows\n", rows.size(), expected);
      ok = false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench allreduce: %s\n", e.what());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "mw_bench allreduce: FAILED\n");
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"procs", jnum(static_cast<double>(r.procs))},
                    {"bytes", jnum(static_cast<double>(r.bytes))},
                    {"ours_gbps", jnum(r.ours_gbps)},
                    {"raw_gbps", jnum(r.raw_gbps)},
                    {"ratio", jnum(ratioOf(r))},
                    {"ours_lat_us", jnum(r.ours_lat_us)},
                    {"raw_lat_us", jnum(r.raw_lat_us)}});
    }
    JsonRow top = backendFields(opt, opt.metrics == "compare" ? "ours_metrics_off" : "gloo");
    top.push_back({"metrics", jsonString(opt.metrics)});
    if (!writeJson(opt.json_path, name, opt.command, machine, jr, top)) return 1;
  }
  return 0;
}

}  // namespace mwbench
