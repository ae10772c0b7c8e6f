#include "bench/p2p_suite.h"

#include "tools/lab/private_redis.h"
#include "bench/suite_common.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/p2p_bench.h"

namespace mwbench {
namespace {

using common::jsonString;
using common::machineName;
using common::sizesOf;
using mwlab::median;

// Seconds one round of one implementation should take at each size when the
// iteration count is calibrated. With 5 rounds that is about 0.9 s per size
// and side, about 25 s for the default 11 sizes, both sides.
constexpr double kBandwidthRoundSeconds = 0.12;
constexpr double kLatencyRoundSeconds = 0.06;
// A calibration probe counts once the faster side took this long.
constexpr double kProbeSeconds = 0.02;
constexpr uint64_t kMinLatencyIters = 3;
constexpr uint64_t kMaxIters = 2000000;

// One size's results, from rank 0 to the parent through a pipe. RAW is raw
// UCX (error mode PEER) with the UCX backend, raw Gloo with the Gloo backend
// (GLOO, SLEEP and SHM unused); SLEEP is raw UCX that waits as ours does;
// SHM is raw UCX without error handling, where has_shm says so.
struct Row {
  uint64_t bytes = 0;
  bool has_shm = false;
  double ours_gbps = 0, raw_gbps = 0, gloo_gbps = 0, shm_gbps = 0, sleep_gbps = 0;
  double ours_lat_us = 0, raw_lat_us = 0, gloo_lat_us = 0, shm_lat_us = 0, sleep_lat_us = 0;
};

// What rank 0 sends the parent before the rows: the lanes of UCX's and
// UCX_SHM's endpoints (P2pPeer::ucxLanes()), NUL-terminated, maybe cut.
struct Lanes {
  char ucx[120] = {};
  char shm[120] = {};
};

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}


// ---- rank 0: what to measure -------------------------------------------------

class Driver {
 public:
  // --metrics compare: RAW is ours with metrics off, and nothing else runs.
  Driver(P2pPeer& peer, const BenchOptions& opt, bool ucx)
      : peer_(peer),
        opt_(opt),
        ucx_(ucx && opt.metrics != "compare"),
        shm_(ucx_ && peer.hasUcxShm()),
        raw_(opt.metrics == "compare" ? Impl::OursMetricsOff : ucx ? Impl::Ucx : Impl::Gloo) {}

  Row measure(uint64_t bytes) {
    // OURS and RAW run the same iteration count, calibrated on both; GLOO,
    // next to UCX often 10x slower, and SHM, often 10x faster, get counts
    // of their own.
    std::vector<Impl> pair = {Impl::Ours, raw_};
    if (ucx_) pair.push_back(Impl::UcxSleep);
    std::vector<std::vector<Impl>> groups = {pair};
    if (ucx_) groups.push_back({Impl::Gloo});
    if (shm_) groups.push_back({Impl::UcxShm});
    std::vector<Impl> all;
    for (const auto& group : groups) all.insert(all.end(), group.begin(), group.end());
    std::map<Impl, uint64_t> bw_iters, lat_iters;
    for (Impl impl : all) bw_iters[impl] = lat_iters[impl] = opt_.iters;
    if (opt_.iters == 0) {
      for (const auto& group : groups) {
        const uint64_t bw = calibrate(Measure::Bandwidth, bytes, kBandwidthRoundSeconds, kWindow, group);
        const uint64_t lat = calibrate(Measure::Latency, bytes, kLatencyRoundSeconds, kMinLatencyIters, group);
        for (Impl impl : group) {
          bw_iters[impl] = bw;
          lat_iters[impl] = lat;
        }
      }
    }
    std::map<Impl, std::vector<double>> gbps, lat_us;
    for (size_t round = 0; round < opt_.rounds; ++round) {
      // Each round starts with the next implementation, so that a drift
      // within a round favours none.
      std::vector<Impl> order;
      for (size_t k = 0; k < all.size(); ++k) order.push_back(all[(k + round) % all.size()]);
      for (Impl impl : order) {
        const uint64_t n = bw_iters[impl];
        gbps[impl].push_back(static_cast<double>(bytes * n) * 8 / run(Measure::Bandwidth, impl, bytes, n) / 1e9);
      }
      for (Impl impl : order) {
        const uint64_t n = lat_iters[impl];
        lat_us[impl].push_back(run(Measure::Latency, impl, bytes, n) / static_cast<double>(n) / 2 * 1e6);
      }
    }
    Row row;
    row.bytes = bytes;
    row.ours_gbps = median(gbps[Impl::Ours]);
    row.raw_gbps = median(gbps[raw_]);
    row.ours_lat_us = median(lat_us[Impl::Ours]);
    row.raw_lat_us = median(lat_us[raw_]);
    if (ucx_) {
      row.gloo_gbps = median(gbps[Impl::Gloo]);
      row.gloo_lat_us = median(lat_us[Impl::Gloo]);
      row.sleep_gbps = median(gbps[Impl::UcxSleep]);
      row.sleep_lat_us = median(lat_us[Impl::UcxSleep]);
    }
    if (shm_) {
      row.has_shm = true;
      row.shm_gbps = median(gbps[Impl::UcxShm]);
      row.shm_lat_us = median(lat_us[Impl::UcxShm]);
    }
    return row;
  }

 private:
  double run(Measure m, Impl impl, uint64_t bytes, uint64_t iters) {
    P2pCommand c;
    c.measure = static_cast<uint32_t>(m);
    c.impl = static_cast<uint32_t>(impl);
    c.bytes = bytes;
    c.iters = iters;
    c.seed = ++seed_;
    return std::max(peer_.run(c), 1e-9);
  }

  // Grows the iteration count until every implementation of `group` took
  // measurable time (this also warms them up), then picks the count at
  // which a round takes about `target` seconds, per the geometric mean of
  // their speeds.
  uint64_t calibrate(Measure m, uint64_t bytes, double target, uint64_t min_iters, const std::vector<Impl>& group) {
    uint64_t n = min_iters;
    for (;;) {
      double fast = 1e300, log_sum = 0;
      for (Impl impl : group) {
        const double t = run(m, impl, bytes, n);
        fast = std::min(fast, t);
        log_sum += std::log(t);
      }
      if (fast >= kProbeSeconds || n >= kMaxIters) {
        const double per_iter = std::exp(log_sum / static_cast<double>(group.size())) / static_cast<double>(n);
        const double want = std::round(target / per_iter);
        return static_cast<uint64_t>(std::clamp(want, static_cast<double>(min_iters), static_cast<double>(kMaxIters)));
      }
      double grow = std::clamp(std::ceil(1.5 * kProbeSeconds / fast), 2.0, 16.0);
      n = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(n) * grow), kMaxIters);
    }
  }

  P2pPeer& peer_;
  const BenchOptions& opt_;
  const bool ucx_, shm_;
  const Impl raw_;
  uint64_t seed_ = 0;
};

int rankMain(int rank, const BenchOptions& opt, const PeerSetup& base, int result_fd) {
  std::unique_ptr<P2pPeer> peer;
  try {
    PeerSetup setup = base;
    setup.rank = rank;
    peer = std::make_unique<P2pPeer>(setup);
    if (rank == 1) {
      peer->serve();
    } else {
      Lanes lanes;
      std::snprintf(lanes.ucx, sizeof lanes.ucx, "%s", peer->ucxLanes().c_str());
      std::snprintf(lanes.shm, sizeof lanes.shm, "%s", peer->ucxShmLanes().c_str());
      if (!writeAll(result_fd, &lanes, sizeof lanes)) throw BenchError("lost the pipe to the parent");
      Driver driver(*peer, opt, base.backend == MW_BACKEND_UCX);
      for (size_t bytes : sizesOf(opt)) {
        Row row = driver.measure(bytes);
        if (!writeAll(result_fd, &row, sizeof row)) throw BenchError("lost the pipe to the parent");
      }
      peer->quit();
    }
    peer.reset();
    return 0;
  } catch (const std::exception& e) {
    // Said before anything else happens: the other rank fails next, and
    // the parent may kill this one. The process exits without tearing the
    // world down; the peer sees its connections close.
    std::fprintf(stderr, "mw_bench p2p: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    (void)peer.release();
    return 1;
  }
}

// ---- the parent: processes and reporting -------------------------------------

double ratioOf(double ours, double raw) { return raw > 0 ? ours / raw : 0; }

// The same-host setting ours runs with: the environment's, else the
// library's default.
std::string sameHostText() {
  const char* path = std::getenv("MW_SAME_HOST_PATH");
  const char* min = std::getenv("MW_SAME_HOST_MIN_BYTES");
  std::string text = (path && *path) ? path : "auto";
  if (text != "off") text += std::string(", same_host_min_bytes ") + ((min && *min) ? min : "65536");
  return text;
}

void printHeader(bool ucx) {
  if (ucx) {
    std::printf("%10s %10s %10s %7s %10s %11s %10s %10s %9s %12s %11s %13s %12s %12s %11s\n", "bytes", "ours_gbps",
                "raw_gbps", "ratio", "sleep_gbps", "ratio_sleep", "gloo_gbps", "shm_gbps", "ratio_shm", "ours_lat_us",
                "raw_lat_us", "added_lat_us", "sleep_lat_us", "gloo_lat_us", "shm_lat_us");
  } else {
    std::printf("%10s %10s %10s %7s %12s %11s %13s\n", "bytes", "ours_gbps", "raw_gbps", "ratio", "ours_lat_us",
                "raw_lat_us", "added_lat_us");
  }
  std::fflush(stdout);
}

void printRow(const Row& r, bool ucx) {
  const auto bytes = static_cast<unsigned long long>(r.bytes);
  const double ratio = ratioOf(r.ours_gbps, r.raw_gbps), added = r.ours_lat_us - r.raw_lat_us;
  if (ucx) {
    char shm_gbps[32] = "-", shm_ratio[32] = "-", shm_lat[32] = "-";
    if (r.has_shm) {
      std::snprintf(shm_gbps, sizeof shm_gbps, "%.3f", r.shm_gbps);
      std::snprintf(shm_ratio, sizeof shm_ratio, "%.3f", ratioOf(r.ours_gbps, r.shm_gbps));
      std::snprintf(shm_lat, sizeof shm_lat, "%.2f", r.shm_lat_us);
    }
    std::printf("%10llu %10.3f %10.3f %7.3f %10.3f %11.3f %10.3f %10s %9s %12.2f %11.2f %13.2f %12.2f %12.2f %11s\n",
                bytes, r.ours_gbps, r.raw_gbps, ratio, r.sleep_gbps, ratioOf(r.ours_gbps, r.sleep_gbps), r.gloo_gbps,
                shm_gbps, shm_ratio, r.ours_lat_us, r.raw_lat_us, added, r.sleep_lat_us, r.gloo_lat_us, shm_lat);
  } else {
    std::printf("%10llu %10.3f %10.3f %7.3f %12.2f %11.2f %13.2f\n", bytes, r.ours_gbps, r.raw_gbps, ratio,
                r.ours_lat_us, r.raw_lat_us, added);
  }
  std::fflush(stdout);
}

std::vector<common::JsonRow> jsonRows(const std::vector<Row>& rows, bool ucx) {
  using common::jnum;
  std::vector<common::JsonRow> out;
  for (const Row& r : rows) {
    common::JsonRow j = {{"bytes", jnum(static_cast<double>(r.bytes))},
                         {"ours_gbps", jnum(r.ours_gbps)},
                         {"raw_gbps", jnum(r.raw_gbps)},
                         {"ratio", jnum(ratioOf(r.ours_gbps, r.raw_gbps))}};
    if (ucx) {
      j.push_back({"sleep_gbps", jnum(r.sleep_gbps)});
      j.push_back({"ratio_sleep", jnum(ratioOf(r.ours_gbps, r.sleep_gbps))});
      j.push_back({"gloo_gbps", jnum(r.gloo_gbps)});
      j.push_back({"shm_gbps", r.has_shm ? jnum(r.shm_gbps) : "null"});
      j.push_back({"ratio_shm", r.has_shm ? jnum(ratioOf(r.ours_gbps, r.shm_gbps)) : "null"});
    }
    j.push_back({"ours_lat_us", jnum(r.ours_lat_us)});
    j.push_back({"raw_lat_us", jnum(r.raw_lat_us)});
    if (ucx) {
      j.push_back({"sleep_lat_us", jnum(r.sleep_lat_us)});
      j.push_back({"gloo_lat_us", jnum(r.gloo_lat_us)});
      j.push_back({"shm_lat_us", r.has_shm ? jnum(r.shm_lat_us) : "null"});
      // How many times ours beats raw Gloo: bandwidth, and latency (lower).
      j.push_back({"vs_gloo_bw", jnum(ratioOf(r.ours_gbps, r.gloo_gbps))});
      j.push_back({"vs_gloo_lat", jnum(ratioOf(r.gloo_lat_us, r.ours_lat_us))});
    }
    out.push_back(std::move(j));
  }
  return out;
}

bool exitedOk(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace

int runP2pSuite(const BenchOptions& opt) {
  if (opt.min_bytes == 0 || opt.min_bytes > opt.max_bytes) {
    std::fprintf(stderr, "mw_bench p2p: need 0 < --min-bytes <= --max-bytes\n");
    return 2;
  }
  if (opt.rounds == 0) {
    std::fprintf(stderr, "mw_bench p2p: --rounds must be at least 1\n");
    return 2;
  }
  const std::string machine = machineName();
  // UCX runs are named by UCX_TLS ("p2p (ucx, default)", "p2p (ucx, tcp)"),
  // so that both fit in one report.
  const std::string name = (opt.ucx ? "p2p (ucx, " + common::ucxTls() + ")" : common::resultsName("p2p", opt)) +
                           (opt.metrics == "compare" ? ", metrics on/off" : "");
  std::vector<Row> rows;
  Lanes lanes;
  bool ok = true;
  // The columns of the raw baselines besides RAW (UCX, not --metrics compare).
  const bool wide = opt.ucx && opt.metrics != "compare";
  try {
    mwlab::TempDir dir("mw-bench-");
    PeerSetup setup;
    setup.backend = common::backendOf(opt);
    setup.spin_us = opt.spin_us;
    setup.metrics = opt.metrics;
    setup.mw_namespace = "mwbench." + std::to_string(getpid());
    setup.file_store_dir = dir.path() + "/gloo-store";
    std::filesystem::create_directory(setup.file_store_dir);

    std::unique_ptr<PrivateRedis> redis;
    setup.redis_url = opt.redis_url;
    if (setup.redis_url.empty()) {
      const char* env = std::getenv("MW_REDIS_URL");
      if (env && *env) setup.redis_url = env;
    }
    if (setup.redis_url.empty()) {
      redis = std::make_unique<PrivateRedis>(dir.path());
      setup.redis_url = redis->url();
    }

    std::printf("# %s on %s: %s\n", name.c_str(), machine.c_str(), opt.command.c_str());
    if (opt.ucx) {
      std::printf("# ours = multiworld UCX world (mw_wait/mw_poll, spin_us %s, same-host path %s: messages of "
                  "same_host_min_bytes and more lent by process_vm_readv, the rest copied through per-pair rings; "
                  "with it off, every message over UCX), raw = a plain ucp tag loop "
                  "polling ucp_worker_progress (own ucp_context, features TAG|WAKEUP, endpoints in error mode peer "
                  "as ours), UCX_TLS %s; sleep = the same raw loop waiting as ours does (polls for ours' spin_us, then sleeps on "
                  "the worker's event fd), ratio_sleep = ours/sleep; gloo = gloo::rendezvous::Context, tcp on 127.0.0.1; shm = raw with "
                  "endpoints in error mode none (shared memory: what peer mode gives up; - where UCX_TLS excludes "
                  "it), ratio_shm = ours/shm; ratio = ours/raw; ",
                  common::spinText(opt).c_str(), sameHostText().c_str(), common::ucxTls().c_str());
    } else {
      std::printf("# ours = multiworld Gloo world, raw = gloo::rendezvous::Context, both tcp on 127.0.0.1; ");
    }
    if (opt.metrics == "compare") {
      std::printf("# --metrics compare: raw = ours again on a second context with metrics off (ours has them on), "
                  "alternating with it; ratio = on/off, added_lat_us = on - off; the other baselines do not run\n");
    } else {
      std::printf("# ours' metrics %s\n", opt.metrics.c_str());
    }
    std::printf("gbps = 1e9 bit/s one way, %zu sends outstanding; lat = half the median ping-pong round trip; "
                "median of %zu rounds, each starting with the next implementation; %s\n",
                kWindow, opt.rounds, opt.iters ? ("iterations " + std::to_string(opt.iters)).c_str()
                                                : "iterations calibrated per size");
    std::fflush(stdout);
    std::fflush(stderr);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw BenchError("pipe failed: " + std::string(std::strerror(errno)));
    pid_t pids[2] = {-1, -1};
    for (int rank = 0; rank < 2; ++rank) {
      pids[rank] = fork();
      if (pids[rank] < 0) {
        for (int r = 0; r < rank; ++r) kill(pids[r], SIGKILL);
        throw BenchError("fork failed: " + std::string(std::strerror(errno)));
      }
      if (pids[rank] == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fds[0]);
        if (rank != 0) close(fds[1]);
        int rc = rankMain(rank, opt, setup, fds[1]);
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(rc);
      }
    }
    close(fds[1]);

    // Print rows as rank 0 finishes them; if a rank fails, the other one
    // may wait for it forever, so it is killed.
    std::string pending;
    bool have_lanes = false, eof = false;
    int status[2] = {0, 0};
    bool reaped[2] = {false, false};
    bool killed = false;
    int failed_rank = -1;
    std::chrono::steady_clock::time_point kill_at;
    while (!(eof && reaped[0] && reaped[1])) {
      if (!eof) {
        pollfd p{fds[0], POLLIN, 0};
        if (poll(&p, 1, 200) > 0) {
          char buf[4096];
          ssize_t n = read(fds[0], buf, sizeof buf);
          if (n > 0) {
            pending.append(buf, static_cast<size_t>(n));
          } else if (n == 0 || errno != EINTR) {
            eof = true;
          }
          if (!have_lanes && pending.size() >= sizeof lanes) {
            std::memcpy(&lanes, pending.data(), sizeof lanes);
            pending.erase(0, sizeof lanes);
            have_lanes = true;
            if (wide) {
              std::printf("# UCX lanes: raw %s (error mode peer, as ours); shm %s\n", lanes.ucx,
                          lanes.shm[0] ? lanes.shm : "-");
            }
            printHeader(wide);
          }
          while (have_lanes && pending.size() >= sizeof(Row)) {
            Row row;
            std::memcpy(&row, pending.data(), sizeof row);
            pending.erase(0, sizeof row);
            rows.push_back(row);
            printRow(row, wide);
          }
        }
      } else {
        poll(nullptr, 0, 100);
      }
      for (int rank = 0; rank < 2; ++rank) {
        if (reaped[rank] || waitpid(pids[rank], &status[rank], WNOHANG) != pids[rank]) continue;
        reaped[rank] = true;
        if (!exitedOk(status[rank])) {
          if (WIFSIGNALED(status[rank]) && !(killed && rank == 1 - failed_rank)) {
            std::fprintf(stderr, "mw_bench p2p: rank %d died of signal %d\n", rank, WTERMSIG(status[rank]));
          }
          if (ok) {
            ok = false;
            failed_rank = rank;
            kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
          }
        }
      }
      // The other rank usually fails on its own once its peer is gone;
      // one still waiting after a grace period is killed.
      if (!ok && !killed && std::chrono::steady_clock::now() >= kill_at) {
        for (int rank = 0; rank < 2; ++rank) {
          if (!reaped[rank]) kill(pids[rank], SIGKILL);
        }
        killed = true;
      }
    }
    close(fds[0]);
    if (ok && rows.size() != sizesOf(opt).size()) {
      std::fprintf(stderr, "mw_bench p2p: got %zu of %zu rows\n", rows.size(), sizesOf(opt).size());
      ok = false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench p2p: %s\n", e.what());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "mw_bench p2p: FAILED\n");
    return 1;
  }
  if (!opt.json_path.empty()) {
    common::JsonRow top = common::backendFields(opt, common::backendName(opt));
    top.push_back({"metrics", jsonString(opt.metrics)});
    if (wide) {
      top.push_back({"raw_error_mode", jsonString("peer")});
      top.push_back({"transport", jsonString(lanes.ucx)});
      top.push_back({"shm_transport", lanes.shm[0] ? jsonString(lanes.shm) : "null"});
    }
    if (!common::writeJson(opt.json_path, name, opt.command, machine, jsonRows(rows, wide), top)) return 1;
  }
  return 0;
}

}  // namespace mwbench
