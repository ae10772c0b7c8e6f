#include "bench/faults_report.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include <multiworld/multiworld.h>

#include "bench/suite_common.h"
#include "tools/lab/stats.h"

namespace mwbench {
namespace faults {
namespace {

using common::jsonString;
using mwlab::median;
using mwlab::percentile;

// Part 2 over all reps: the medians, the worst ratio, the reps whose
// destroy hung.
struct HealthySummary {
  double before = 0, during = 0, ratio = 0, ratio_min = 0;
  int hung = 0;
};

HealthySummary summarize(const std::vector<Rep>& reps) {
  std::vector<double> before, during, ratio;
  HealthySummary s;
  for (const Rep& r : reps) {
    before.push_back(r.before);
    during.push_back(r.during);
    ratio.push_back(r.ratio);
    s.hung += r.destroy_hung;
  }
  s.before = median(before);
  s.during = median(during);
  s.ratio = median(ratio);
  s.ratio_min = ratio.empty() ? 0 : *std::min_element(ratio.begin(), ratio.end());
  return s;
}

std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// kill9's kernel column; the other kinds have none.
std::string kernelText(const std::vector<double>& ms, double q) {
  if (ms.empty()) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", percentile(ms, q));
  return text;
}

std::string kernelJson(const std::vector<double>& ms, double q) {
  return ms.empty() ? "null" : jsonNumber(percentile(ms, q));
}

}  // namespace

void printDetectHeader(const BenchOptions& opt, const std::string& machine, const Partition* partition) {
  const char* dev = partition ? partition->link.a.dev.c_str() : nullptr;
  std::printf("# %s on %s: %s\n", common::resultsName("faults", opt).c_str(), machine.c_str(), opt.command.c_str());
  std::printf("# multiworld %s, %s, %s, bind_address 127.0.0.1; Redis %s\n", mw_version_string(),
              opt.ucx ? ("UCX (UCX_TLS " + common::ucxTls() + ", error mode peer)").c_str() : "Gloo",
              common::heartbeatText(opt).c_str(),
              opt.redis_url.empty() ? "private redis-server on a unix socket" : "from --redis");
  std::printf("#\n# 1. detection latency: ms from the fault to the survivor's first sign of the break (a request "
              "completing with MW_ERR_WORLD_BROKEN or an MW_EVENT_WORLD_BROKEN event, whichever came first), "
              "CLOCK_MONOTONIC across processes\n");
  std::printf("#    each trial: a fresh 2-rank world between one survivor process (serving all trials of a kind) and "
              "a new victim process, checked %zu KiB messages both ways (%zu sends + %zu recvs outstanding per "
              "side), then the fault\n",
              kDetectBytes >> 10, kDetectWindow, kDetectWindow);
  std::printf("#    kill9 = SIGKILL the victim; sigstop = SIGSTOP it (SIGKILLed after the trial); partition = victim "
              "in netns %s behind veth %s (%s here, %s there, Redis over TCP to %s), fault = %s down (SIOCSIFFLAGS, "
              "the change `ip link set %s down` makes), back up after the trial\n",
              partition ? partition->ns.c_str() : "mwlab<pid>n<k>", dev ? dev : "ml<pid>v<k>a", kOuterAddr,
              kInnerAddr, kOuterAddr, dev ? dev : "the outer veth", dev ? dev : "<dev>");
  std::printf("#    p50 and p99 are nearest-rank percentiles (the ceil(q*n)-th smallest sample): with fewer than "
              "100 trials p99 is the maximum; first_sign = how the break was first seen, per trial; "
              "destroy_hangs = trials whose survivor was still inside mw_world_destroy %lld s after the break "
              "(killed and replaced; the sample counts); kernel_p50/p99_ms (kill9) = ms from SIGKILL until the "
              "victim's pidfd was readable, the kernel's own notice of the exit, which no detection on one host "
              "can beat\n",
              static_cast<long long>(std::chrono::seconds(kDestroyLimit).count()));
  std::printf("%-10s %6s %9s %9s %9s %9s  %-20s %14s %14s %14s\n", "fault", "trials", "p50_ms", "p99_ms", "min_ms",
              "max_ms", "first_sign", "destroy_hangs", "kernel_p50_ms", "kernel_p99_ms");
  std::fflush(stdout);
}

void printKind(const KindResult& r) {
  if (!r.skipped.empty()) {
    std::printf("%-10s %6s  skipped: %s\n", r.fault.c_str(), "-", r.skipped.c_str());
  } else {
    const auto [mn, mx] = std::minmax_element(r.ms.begin(), r.ms.end());
    std::printf("%-10s %6zu %9.2f %9.2f %9.2f %9.2f  %2d event, %2d request %14d %14s %14s\n", r.fault.c_str(),
                r.ms.size(), percentile(r.ms, 50), percentile(r.ms, 99), *mn, *mx, r.by_event, r.by_request,
                r.destroy_hangs, kernelText(r.exit_ms, 50).c_str(), kernelText(r.exit_ms, 99).c_str());
  }
  std::fflush(stdout);
}

void printHealthyHeader(std::size_t bytes) {
  std::printf("#\n# 2. healthy world during a failure: process X in h = {X, Y} and f = {X, Z}, all streaming checked "
              "%zu-byte messages (%zu sends + %zu recvs outstanding per side and world)\n",
              bytes, kHealthyWindow, kHealthyWindow);
  std::printf("#    msgs/s = messages X received on h per second; before = the 2 s before kill -9 Z; during = the "
              "2 s from the kill (X sees f break and calls mw_world_destroy(f) on the thread that drives h); "
              "f_detect = kill -> X's first sign; f_destroy = duration of that mw_world_destroy (\"hung\": not "
              "returned %lld s after the window; X and Y killed, the rep counts)\n",
              static_cast<long long>(std::chrono::seconds(kDestroyLimit).count()));
  std::printf("%-5s %16s %16s %7s %12s %13s\n", "rep", "before_msgs_s", "during_msgs_s", "ratio", "f_detect_ms",
              "f_destroy_ms");
  std::fflush(stdout);
}

void printRep(int n, const Rep& r) {
  if (r.destroy_hung) {
    std::printf("%-5d %16.0f %16.0f %7.3f %12.2f %13s\n", n, r.before, r.during, r.ratio, r.detect_ms,
                ("hung>" + std::to_string(static_cast<long long>(r.destroy_ms))).c_str());
  } else {
    std::printf("%-5d %16.0f %16.0f %7.3f %12.2f %13.2f\n", n, r.before, r.during, r.ratio, r.detect_ms,
                r.destroy_ms);
  }
  std::fflush(stdout);
}

void printHealthySummary(const std::vector<Rep>& reps, std::size_t bytes) {
  const HealthySummary s = summarize(reps);
  std::printf("healthy_ratio: before %.0f msgs/s, during %.0f msgs/s (medians of %zu), ratio median %.3f, min %.3f "
              "(%.1f MB/s before); destroy hung in %d of %zu reps\n",
              s.before, s.during, reps.size(), s.ratio, s.ratio_min, s.before * static_cast<double>(bytes) / 1e6, s.hung,
              reps.size());
  std::fflush(stdout);
}

bool writeJson(const std::string& path, const BenchOptions& opt, const std::string& machine,
               const std::vector<KindResult>& kinds, const std::vector<Rep>& reps) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "mw_bench faults: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(f, "{\"bench\": %s, \"command\": %s, \"machine\": %s, ",
               jsonString(common::resultsName("faults", opt)).c_str(), jsonString(opt.command).c_str(),
               jsonString(machine).c_str());
  common::JsonRow top = common::backendFields(opt);
  for (auto& field : common::heartbeatFields(opt)) top.push_back(std::move(field));
  for (const auto& [key, value] : top) {
    std::fprintf(f, "%s: %s, ", jsonString(key).c_str(), value.c_str());
  }
  std::fprintf(f, "\"rows\": [");
  const char* sep = "";
  for (const KindResult& r : kinds) {
    if (r.skipped.empty()) {
      const auto [mn, mx] = std::minmax_element(r.ms.begin(), r.ms.end());
      std::fprintf(f,
                   "%s\n  {\"fault\": %s, \"trials\": %zu, \"p50_ms\": %s, \"p99_ms\": %s, \"min_ms\": %s, "
                   "\"max_ms\": %s, \"first_sign_event\": %d, \"first_sign_request\": %d, "
                   "\"destroy_hangs\": %d, \"kernel_p50_ms\": %s, \"kernel_p99_ms\": %s}",
                   sep, jsonString(r.fault).c_str(), r.ms.size(), jsonNumber(percentile(r.ms, 50)).c_str(),
                   jsonNumber(percentile(r.ms, 99)).c_str(), jsonNumber(*mn).c_str(), jsonNumber(*mx).c_str(),
                   r.by_event, r.by_request, r.destroy_hangs, kernelJson(r.exit_ms, 50).c_str(),
                   kernelJson(r.exit_ms, 99).c_str());
    } else {
      std::fprintf(f,
                   "%s\n  {\"fault\": %s, \"trials\": 0, \"p50_ms\": null, \"p99_ms\": null, \"min_ms\": null, "
                   "\"max_ms\": null, \"skipped\": %s}",
                   sep, jsonString(r.fault).c_str(), jsonString(r.skipped).c_str());
    }
    sep = ",";
  }
  const HealthySummary s = summarize(reps);
  std::fprintf(f,
               "%s\n  {\"fault\": \"healthy_ratio\", \"reps\": %zu, \"before_msgs_per_s\": %s, "
               "\"during_msgs_per_s\": %s, \"ratio_median\": %s, \"ratio_min\": %s, \"message_bytes\": %zu, "
               "\"destroy_hangs\": %d}",
               sep, reps.size(), jsonNumber(s.before).c_str(), jsonNumber(s.during).c_str(),
               jsonNumber(s.ratio).c_str(), jsonNumber(s.ratio_min).c_str(), opt.healthy_bytes, s.hung);
  std::fprintf(f, "\n]}\n");
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "mw_bench faults: writing %s failed\n", path.c_str());
  return ok;
}

}  // namespace faults
}  // namespace mwbench
