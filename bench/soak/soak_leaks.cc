#include "bench/soak/soak_leaks.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

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

void LeakWatch::started(int member, pid_t pid, int64_t started_ns) {
  Proc& p = procs_[pid];
  p = Proc();
  p.member = member;
  p.started_ns = started_ns;
}

void LeakWatch::sample(int member, pid_t pid, int64_t now_ns) {
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.member != member || now_ns - it->second.started_ns < warmup_ns_) return;
  ProcSample s;
  if (!sampleProc(pid, &s)) return;
  Proc& p = it->second;
  if (!p.has_base) {
    p.has_base = true;
    p.base = s;
    p.base_ns = now_ns;
  }
  p.last = s;
  p.last_ns = now_ns;
}

Growth LeakWatch::growth() const {
  Growth g;
  double worst_score = -1;
  for (const auto& [pid, p] : procs_) {
    if (!p.has_base || p.last_ns <= p.base_ns) continue;
    const int fds = p.last.fds - p.base.fds, threads = p.last.threads - p.base.threads;
    const double rss = p.base.rss_kib > 0 ? 100.0 * (p.last.rss_kib - p.base.rss_kib) / p.base.rss_kib : 0;
    g.fds = std::max(g.fds, fds);
    g.threads = std::max(g.threads, threads);
    g.rss_pct = std::max(g.rss_pct, rss);
    const double score = fds + threads * 10 + rss;
    if (score > worst_score) {
      worst_score = score;
      char text[240];
      std::snprintf(text, sizeof text, "member %d (pid %d): fds %d -> %d, threads %d -> %d, rss %ld -> %ld KiB over %.0f s",
                    p.member, static_cast<int>(pid), p.base.fds, p.last.fds, p.base.threads, p.last.threads,
                    p.base.rss_kib, p.last.rss_kib, (p.last_ns - p.base_ns) / 1e9);
      g.worst = text;
    }
  }
  return g;
}

}  // namespace soak
}  // namespace mwbench
