// mw_bench control, the metrics part: what publishing every member's
// metrics snapshot (metrics_publish_ms) and scraping a namespace
// (`multiworld metrics`) cost Redis.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace mwbench {

struct MetricsLoad {
  int members = 0;
  std::chrono::milliseconds interval{0};
  size_t snapshot_bytes = 0;   // one member's published value
  double sets_s = 0;           // publishing writes per second, all members
  double publish_redis_cpu = 0;  // redis-server CPU while they publish (1 = a core)
  double scrape_ms = 0;          // one scrape of every member: wall time
  double scrape_redis_cpu_s = 0;  // redis-server CPU seconds per scrape
  size_t scraped_series = 0;      // series in one scrape
};

// `members` publish a typical snapshot every `interval`, spread evenly
// over it, each as its watchdog does (SET ... PX 3 intervals, on its own
// connection), measured for `seconds` after a warm-up; then whole scrapes
// of them, back to back, read the way `multiworld metrics` reads them.
MetricsLoad runMetricsLoad(const std::string& redis_url, int members, std::chrono::milliseconds interval,
                           double seconds);

}  // namespace mwbench
