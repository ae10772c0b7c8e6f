#include "bench/soak/soak_leaks.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mwbench {
namespace soak {

namespace {

int countEntries(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

int countLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return -1;
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

bool sampleProc(pid_t pid, ProcSample* out) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream status(dir + "/status");
  if (!status) return false;
  bool threads = false, rss = false, anon = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) threads = std::sscanf(line.c_str(), "Threads: %d", &out->threads) == 1;
    if (line.rfind("VmRSS:", 0) == 0) rss = std::sscanf(line.c_str(), "VmRSS: %ld", &out->rss_kib) == 1;
    if (line.rfind("RssAnon:", 0) == 0) anon = std::sscanf(line.c_str(), "RssAnon: %ld", &out->private_kib) == 1;
  }
  out->fds = countEntries(dir + "/fd");
  out->maps = countLines(dir + "/maps");
  return threads && rss && anon && out->fds >= 0 && out->maps >= 0;
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

// The least number of samples, and the least time they span, that a
// process's growth is judged on.
constexpr size_t kLeastSamples = 6;
constexpr int64_t kLeastSpanNs = 60LL * 1000000000;

ProcSample least(const std::vector<ProcSample>& v, size_t from, size_t to) {
  ProcSample out = v[from];
  for (size_t i = from; i < to; ++i) {
    out.fds = std::min(out.fds, v[i].fds);
    out.threads = std::min(out.threads, v[i].threads);
    out.maps = std::min(out.maps, v[i].maps);
    out.rss_kib = std::min(out.rss_kib, v[i].rss_kib);
    out.private_kib = std::min(out.private_kib, v[i].private_kib);
  }
  return out;
}

double mean(const std::vector<int64_t>& v, size_t from, size_t to) {
  double sum = 0;
  for (size_t i = from; i < to; ++i) sum += static_cast<double>(v[i]);
  return sum / static_cast<double>(to - from);
}

// Past `bound` from the first third to the last, and still growing in the
// last: at least a quarter of the growth comes after the middle third.
bool leaks(double first, double middle, double last, double bound) {
  const double grew = last - first;
  return grew > bound && last > middle && 4 * (last - middle) >= grew;
}

}  // namespace

void LeakWatch::sample(int member, pid_t pid, int64_t now_ns) {
  ProcSample s;
  if (sampleProc(pid, &s)) record(member, pid, now_ns, s);
}

void LeakWatch::record(int member, pid_t pid, int64_t now_ns, const ProcSample& s) {
  auto it = procs_.find(pid);
  if (it == procs_.end() || it->second.member != member || now_ns - it->second.started_ns < warmup_ns_) return;
  it->second.at_ns.push_back(now_ns);
  it->second.samples.push_back(s);
}

Growth LeakWatch::growth(const LeakBounds& bounds) const {
  Growth g;
  double worst_score = -1;
  bool worst_leaks = false;
  for (const auto& [pid, p] : procs_) {
    const size_t n = p.samples.size();
    if (n < kLeastSamples || p.at_ns.back() - p.at_ns.front() < kLeastSpanNs) continue;
    const size_t third = n / 3;
    const ProcSample a = least(p.samples, 0, third), b = least(p.samples, third, n - third),
                     c = least(p.samples, n - third, n);
    const double base = static_cast<double>(std::max(a.rss_kib, 1L));
    const double rss = 100.0 * (c.rss_kib - a.rss_kib) / base;
    const double priv = 100.0 * (c.private_kib - a.private_kib) / base;
    const double hours = (mean(p.at_ns, n - third, n) - mean(p.at_ns, 0, third)) / 3.6e12;
    const double priv_per_hour = hours > 0 ? (c.private_kib - a.private_kib) / hours : 0;
    const bool leak = leaks(a.fds, b.fds, c.fds, bounds.fds) || leaks(a.threads, b.threads, c.threads, bounds.threads) ||
                      leaks(a.maps, b.maps, c.maps, bounds.maps) ||
                      leaks(static_cast<double>(a.private_kib), static_cast<double>(b.private_kib),
                            static_cast<double>(c.private_kib), base * bounds.private_pct / 100.0);
    g.fds = std::max(g.fds, c.fds - a.fds);
    g.threads = std::max(g.threads, c.threads - a.threads);
    g.maps = std::max(g.maps, c.maps - a.maps);
    g.rss_pct = std::max(g.rss_pct, rss);
    if (priv >= g.private_pct || g.processes == 0) {
      g.private_pct = priv;
      g.private_kib_per_hour = priv_per_hour;
    }
    g.leak = g.leak || leak;
    ++g.processes;
    const double score = (c.fds - a.fds) + (c.threads - a.threads) * 10 + (c.maps - a.maps) + priv;
    if ((leak && !worst_leaks) || (leak == worst_leaks && score > worst_score)) {
      worst_score = score;
      worst_leaks = leak;
      char text[400];
      std::snprintf(text, sizeof text,
                    "member %d (pid %d) over %.0f s: fds %d -> %d -> %d, threads %d -> %d -> %d, maps %d -> %d -> %d, "
                    "private %ld -> %ld -> %ld KiB (%+.1f%% of RSS, %+.0f KiB/h), rss %ld -> %ld -> %ld KiB, %s",
                    p.member, static_cast<int>(pid), (p.at_ns.back() - p.at_ns.front()) / 1e9, a.fds, b.fds, c.fds,
                    a.threads, b.threads, c.threads, a.maps, b.maps, c.maps, a.private_kib, b.private_kib,
                    c.private_kib, priv, priv_per_hour, a.rss_kib, b.rss_kib, c.rss_kib,
                    leak ? "still growing" : "levelled off");
      g.worst = text;
    }
  }
  return g;
}

}  // namespace soak
}  // namespace mwbench
