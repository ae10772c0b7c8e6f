#include "bench/soak/soak_leaks.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mwbench {
namespace soak {

bool sampleProc(pid_t pid, ProcSample* out) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream status(dir + "/status");
  if (!status) return false;
  bool threads = false, rss = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) threads = std::sscanf(line.c_str(), "Threads: %d", &out->threads) == 1;
    if (line.rfind("VmRSS:", 0) == 0) rss = std::sscanf(line.c_str(), "VmRSS: %ld", &out->rss_kib) == 1;
  }
  std::error_code ec;
  out->fds = 0;
  for (auto it = std::filesystem::directory_iterator(dir + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++out->fds;
  }
  return threads && rss && !ec;
}

bool processExiting(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return false;
  std::istringstream fields(stat.substr(comm_end + 2));
  std::string field;
  unsigned long flags = 0;
  // Fields 3 (state) to 8, then 9 (flags).
  for (int i = 3; i <= 8; ++i) fields >> field;
  if (!(fields >> flags)) return false;
  constexpr unsigned long kPfExiting = 0x4;
  return (flags & kPfExiting) != 0;
}

void LeakWatch::started(int member, pid_t pid, int64_t started_ns) {
  Proc& p = procs_[pid];
  p = Proc();
  p.member = member;
  p.started_ns = started_ns;
}

namespace {

// Samples at each end that a process's growth is taken between, and the
// least time between the two ends.
constexpr size_t kEndSamples = 3;
constexpr int64_t kLeastSpanNs = 60LL * 1000000000;

ProcSample least(const std::vector<ProcSample>& v, size_t from, size_t to) {
  ProcSample out = v[from];
  for (size_t i = from; i < to; ++i) {
    out.fds = std::min(out.fds, v[i].fds);
    out.threads = std::min(out.threads, v[i].threads);
    out.rss_kib = std::min(out.rss_kib, v[i].rss_kib);
  }
  return out;
}

}  // namespace

void LeakWatch::sample(int member, pid_t pid, int64_t now_ns) {
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.member != member || now_ns - it->second.started_ns < warmup_ns_) return;
  ProcSample s;
  if (!sampleProc(pid, &s)) return;
  it->second.at_ns.push_back(now_ns);
  it->second.samples.push_back(s);
}

Growth LeakWatch::growth() const {
  Growth g;
  double worst_score = -1;
  for (const auto& [pid, p] : procs_) {
    const size_t n = p.samples.size();
    if (n < 2 * kEndSamples || p.at_ns[n - kEndSamples] - p.at_ns[kEndSamples - 1] < kLeastSpanNs) continue;
    const ProcSample base = least(p.samples, 0, kEndSamples), last = least(p.samples, n - kEndSamples, n);
    const int fds = last.fds - base.fds, threads = last.threads - base.threads;
    const double rss = base.rss_kib > 0 ? 100.0 * (last.rss_kib - base.rss_kib) / base.rss_kib : 0;
    g.fds = std::max(g.fds, fds);
    g.threads = std::max(g.threads, threads);
    g.rss_pct = std::max(g.rss_pct, rss);
    ++g.processes;
    const double score = fds + threads * 10 + rss;
    if (score > worst_score) {
      worst_score = score;
      char text[240];
      std::snprintf(text, sizeof text, "member %d (pid %d): fds %d -> %d, threads %d -> %d, rss %ld -> %ld KiB over %.0f s",
                    p.member, static_cast<int>(pid), base.fds, last.fds, base.threads, last.threads, base.rss_kib,
                    last.rss_kib, (p.at_ns.back() - p.at_ns.front()) / 1e9);
      g.worst = text;
    }
  }
  return g;
}

}  // namespace soak
}  // namespace mwbench
