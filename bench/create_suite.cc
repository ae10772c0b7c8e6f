#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#if MWBENCH_HAVE_REDIS_STORE
#include <gloo/rendezvous/redis_store.h>
using RawStore = gloo::rendezvous::RedisStore;
#define MWBENCH_RAW_STORE_NAME "gloo::rendezvous::RedisStore (tcp 127.0.0.1)"
#endif
#include <gloo/transport/tcp/device.h>

#include "bench/extra_suites.h"
#include "tools/lab/private_redis.h"
#include "bench/suite_common.h"
#include "tools/lab/ports.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::percentile;

constexpr int kTimeoutMs = 60000;
constexpr int kConcurrentWorlds = 64;

enum Case : int32_t { kSeq2 = 0, kSeq8 = 1, kConcurrent = 2 };
const char* caseName(int32_t c) {
  switch (c) {
    case kSeq2: return "seq_size2";
    case kSeq8: return "seq_size8";
    default: return "concurrent_64x2_total";
  }
}

struct Row {
  int32_t which = 0;
  int32_t trials = 0;
  double ours_p50 = 0, ours_p99 = 0, raw_p50 = 0, raw_p99 = 0;
};

struct Setup {
  std::string redis_url, ns, store_dir;
  int redis_port = 0;
  size_t trials = 0, concurrent_trials = 0;
  std::string run_id;
  std::string raw_store_dir;  // FileStore fallback
  mw_backend_t backend = MW_BACKEND_UCX;
};

#if !MWBENCH_HAVE_REDIS_STORE
// Built without hiredis.h: the raw baseline rendezvouses through a FileStore.
struct RawStore : gloo::rendezvous::FileStore {
  RawStore(const std::string& dir, int) : gloo::rendezvous::FileStore(dir) {}
};
#define MWBENCH_RAW_STORE_NAME "gloo::rendezvous::FileStore (NOT the same redis: built without hiredis.h)"
#endif

std::unique_ptr<RawStore> makeRawStore(const Setup& su) {
#if MWBENCH_HAVE_REDIS_STORE
  return std::make_unique<RawStore>("127.0.0.1", su.redis_port);
#else
  return std::make_unique<RawStore>(su.raw_store_dir, 0);
#endif
}

int worker(int rank, int procs, const Setup& su, int fd) {
  mw_context_t* ctx = newContext(su.redis_url, su.ns, kTimeoutMs);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  // Control: a raw context of its own over the file store, for barriers.
  auto ctl = std::make_shared<gloo::rendezvous::Context>(rank, procs);
  ctl->setTimeout(std::chrono::milliseconds(kTimeoutMs));
  {
    gloo::rendezvous::FileStore store(su.store_dir);
    ctl->connectFullMesh(store, device);
  }
  auto barrier = [&] {
    gloo::BarrierOptions b(ctl);
    b.setTag(9);
    gloo::barrier(b);
  };
  auto redis_store = makeRawStore(su);
  auto& redis = *redis_store;
  const std::string tag = std::to_string(procs);

  // Sequential creates of fresh names.
  std::vector<double> ours, raw;
  for (size_t t = 0; t < su.trials; ++t) {
    for (int pass = 0; pass < 2; ++pass) {
      const bool do_ours = (pass == 0) == (t % 2 == 0);
      barrier();
      if (do_ours) {
        const std::string name = "seq" + tag + "-" + std::to_string(t);
        mw_world_t* w = nullptr;
        double t0 = nowSeconds();
        mwCheck(mw_world_create(ctx, name.c_str(), rank, procs, su.backend, 0, kTimeoutMs, &w),
                "mw_world_create");
        ours.push_back((nowSeconds() - t0) * 1e3);
        barrier();
        mw_world_destroy(w);
      } else {
        gloo::rendezvous::PrefixStore store(su.run_id + "/seq" + tag + "-" + std::to_string(t), redis);
        double t0 = nowSeconds();
        auto c = std::make_shared<gloo::rendezvous::Context>(rank, procs);
        c->setTimeout(std::chrono::milliseconds(kTimeoutMs));
        c->connectFullMesh(store, device);
        raw.push_back((nowSeconds() - t0) * 1e3);
        barrier();
      }
    }
  }
  if (rank == 0) {
    Row row;
    row.which = procs == 2 ? kSeq2 : kSeq8;
    row.trials = static_cast<int32_t>(su.trials);
    row.ours_p50 = percentile(ours, 50);
    row.ours_p99 = percentile(ours, 99);
    row.raw_p50 = percentile(raw, 50);
    row.raw_p99 = percentile(raw, 99);
    writeRecord(fd, &row, sizeof row);
  }

  if (procs == 2) {
    // 64 worlds at once: a thread per world in each process.
    std::vector<double> ours_c, raw_c;
    std::vector<std::unique_ptr<RawStore>> stores;
    for (int j = 0; j < kConcurrentWorlds; ++j) stores.push_back(makeRawStore(su));
    for (size_t t = 0; t < su.concurrent_trials; ++t) {
      for (int pass = 0; pass < 2; ++pass) {
        const bool do_ours = (pass == 0) == (t % 2 == 0);
        std::vector<mw_world_t*> worlds(kConcurrentWorlds, nullptr);
        std::vector<std::shared_ptr<gloo::rendezvous::Context>> ctxs(kConcurrentWorlds);
        std::atomic<int> failures{0};
        std::string first_error;
        std::atomic<bool> have_error{false};
        barrier();
        double t0 = nowSeconds();
        std::vector<std::thread> threads;
        for (int j = 0; j < kConcurrentWorlds; ++j) {
          threads.emplace_back([&, j] {
            const std::string name = "conc-" + std::to_string(t) + "-" + std::to_string(j);
            try {
              if (do_ours) {
                if (mw_world_create(ctx, name.c_str(), rank, 2, su.backend, 0, kTimeoutMs, &worlds[j]) != MW_OK)
                  throw Error("mw_world_create " + name + " failed: " + mw_last_error());
              } else {
                gloo::rendezvous::PrefixStore store(su.run_id + "/" + name, *stores[j]);
                auto c = std::make_shared<gloo::rendezvous::Context>(rank, 2);
                c->setTimeout(std::chrono::milliseconds(kTimeoutMs));
                c->connectFullMesh(store, device);
                ctxs[j] = c;
              }
            } catch (const std::exception& e) {
              if (!have_error.exchange(true)) first_error = e.what();
              ++failures;
            }
          });
        }
        for (auto& th : threads) th.join();
        const double ms = (nowSeconds() - t0) * 1e3;
        if (failures) throw Error(std::to_string(failures.load()) + " concurrent creates failed, first: " + first_error);
        (do_ours ? ours_c : raw_c).push_back(ms);
        barrier();
        for (auto* w : worlds) mw_world_destroy(w);
        ctxs.clear();
        barrier();
      }
    }
    if (rank == 0) {
      Row row;
      row.which = kConcurrent;
      row.trials = static_cast<int32_t>(su.concurrent_trials);
      row.ours_p50 = percentile(ours_c, 50);
      row.ours_p99 = percentile(ours_c, 99);
      row.raw_p50 = percentile(raw_c, 50);
      row.raw_p99 = percentile(raw_c, 99);
      writeRecord(fd, &row, sizeof row);
    }
  }
  barrier();
  mw_context_free(ctx);
  ctl.reset();
  return 0;
}

double ratioOf(const Row& r) { return r.raw_p50 > 0 ? r.ours_p50 / r.raw_p50 : 0; }

}  // namespace

int runCreateSuite(const BenchOptions& opt) {
  if (opt.trials == 0) {
    std::fprintf(stderr, "mw_bench create: --trials must be at least 1\n");
    return 2;
  }
  const std::string machine = machineName();
  const std::string name = resultsName("create", opt);
  std::vector<Row> rows;
  bool ok = true;
  try {
    mwlab::TempDir dir("mw-bench-");
    Setup su;
    su.redis_port = mwlab::freeLoopbackPort();
    PrivateRedis redis(dir.path(), {"--port", std::to_string(su.redis_port), "--bind", "127.0.0.1"});
    su.redis_url = redis.url();
    su.run_id = "mwbench.create." + std::to_string(getpid());
    su.raw_store_dir = dir.path() + "/raw-store";
    std::filesystem::create_directory(su.raw_store_dir);
    su.trials = opt.trials;
    su.backend = backendOf(opt);
    su.concurrent_trials = std::max<size_t>(3, opt.trials / 6);
    std::printf("# %s on %s: %s\n", name.c_str(), machine.c_str(), opt.command.c_str());
    std::printf("# ours = mw_world_create (%s, 127.0.0.1), raw = new gloo::rendezvous::Context + connectFullMesh "
                "over a %s on port %d of the private redis-server that ours uses (ours via its "
                "unix socket); raw reuses one tcp device per process; ms on rank 0 after a barrier; seq: %zu "
                "creates of fresh names per size, alternating; concurrent: 64 threads per process each forming a "
                "distinct 2-rank world, total wall ms, %zu trials; ratio = ours_p50 / raw_p50\n",
                backendName(opt), MWBENCH_RAW_STORE_NAME, su.redis_port, su.trials, su.concurrent_trials);
    std::printf("%-22s %6s %11s %11s %11s %11s %7s\n", "case", "trials", "ours_p50_ms", "ours_p99_ms", "raw_p50_ms",
                "raw_p99_ms", "ratio");
    std::fflush(stdout);
    for (int procs : {2, 8}) {
      su.store_dir = dir.path() + "/gloo-store-" + std::to_string(procs);
      std::filesystem::create_directory(su.store_dir);
      su.ns = su.run_id + "." + std::to_string(procs);
      bool good = runWorkers(
          "create", procs, sizeof(Row), [&](int rank, int fd) { return worker(rank, procs, su, fd); },
          [&](const char* rec) {
            Row r;
            std::memcpy(&r, rec, sizeof r);
            rows.push_back(r);
            std::printf("%-22s %6d %11.2f %11.2f %11.2f %11.2f %7.3f\n", caseName(r.which), r.trials, r.ours_p50,
                        r.ours_p99, r.raw_p50, r.raw_p99, ratioOf(r));
            std::fflush(stdout);
          });
      if (!good) {
        ok = false;
        break;
      }
    }
    if (ok && rows.size() != 3) {
      std::fprintf(stderr, "mw_bench create: got %zu of 3 rows\n", rows.size());
      ok = false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench create: %s\n", e.what());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "mw_bench create: FAILED\n");
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"case", jsonString(caseName(r.which))},
                    {"trials", jnum(r.trials)},
                    {"ours_p50_ms", jnum(r.ours_p50)},
                    {"ours_p99_ms", jnum(r.ours_p99)},
                    {"raw_p50_ms", jnum(r.raw_p50)},
                    {"raw_p99_ms", jnum(r.raw_p99)},
                    {"ratio", jnum(ratioOf(r))}});
    }
    if (!writeJson(opt.json_path, name, opt.command, machine, jr, backendFields(opt, "gloo"))) return 1;
  }
  return 0;
}

}  // namespace mwbench
