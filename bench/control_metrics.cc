#include "bench/control_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/metrics/context_metrics.h"
#include "core/metrics/merge.h"
#include "core/metrics/wire.h"
#include "core/store/directory.h"
#include "core/store/keys.h"
#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"
#include "core/store/redis_values.h"
#include "bench/suite_common.h"

namespace mwbench {
namespace {

using Clock = std::chrono::steady_clock;

// A member with one UCX world in use: a few kinds of operation done, bytes
// on three paths, the rare events' zero series; what it publishes.
std::string typicalSnapshot() {
  mw::metrics::ContextMetrics m(false);
  auto w = m.forWorld(mw::Backend::Ucx, "w");
  for (int i = 0; i < 1000; ++i) {
    for (mw::OpKind k : {mw::OpKind::Send, mw::OpKind::Recv, mw::OpKind::Allreduce, mw::OpKind::Barrier}) {
      w->completed(k, mw::Status::Ok, std::chrono::microseconds(5 + i % 300), 4096);
    }
    w->sent(mw::metrics::DataPath::Ring, 4096);
    w->received(mw::metrics::DataPath::Cma, 1 << 20);
    w->sent(mw::metrics::DataPath::Tag, 64);
  }
  m.formed(std::chrono::milliseconds(40));
  m.storeRoundTrip(std::chrono::microseconds(80));
  mw::metrics::ContextMetrics::Readings now;
  now.worlds[static_cast<int>(mw::Backend::Ucx) - 1][0] = 1;
  return mw::metrics::encode(m.snapshot(now));
}

double redisCpu(mw::RedisConnection& c) {
  const std::string info = mw::replyString(c.command({"INFO", "cpu"}).get());
  auto field = [&](const std::string& name) {
    size_t at = info.find(name + ":");
    return at == std::string::npos ? 0 : std::atof(info.c_str() + at + name.size() + 1);
  };
  return field("used_cpu_sys") + field("used_cpu_user");
}

}  // namespace

MetricsLoad runMetricsLoad(const std::string& redis_url, int members, std::chrono::milliseconds interval,
                           double seconds) {
  const mw::RedisUrl url = mw::parseRedisUrl(redis_url);
  MetricsLoad out;
  out.members = members;
  out.interval = interval;
  const std::string value = typicalSnapshot();
  out.snapshot_bytes = value.size();
  const mw::Keys keys("metricsload");
  std::vector<std::unique_ptr<mw::RedisConnection>> conns;
  for (int i = 0; i < members; ++i) {
    conns.push_back(mw::RedisConnection::connect(url, std::chrono::seconds(5)));
    // Live, as `multiworld metrics` serves only members with a heartbeat.
    conns.back()->command({"SET", keys.heartbeat("m" + std::to_string(i)),
                           mw::formatHeartbeat(mw::Heartbeat{1, "bench", getpid(), 1}), "PX", "600000"});
  }
  auto meter = mw::RedisConnection::connect(url, std::chrono::seconds(5));
  const std::string ttl = std::to_string(3 * interval.count());
  const int threads = std::min(members, 4);
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  const auto measure_from = start + std::chrono::seconds(1);
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<long> sets(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (long tick = 0;; ++tick) {
        for (int i = t; i < members; i += threads) {
          // The first publish of each is at once (a context's first tick),
          // the later ones an interval apart, members spread over it.
          const auto due = start + tick * interval + interval * i / members;
          if (due >= end) return;
          std::this_thread::sleep_until(due);
          conns[static_cast<size_t>(i)]->command({"SET", keys.metrics("m" + std::to_string(i)), value, "PX", ttl});
          if (due >= measure_from) ++sets[t];
        }
      }
    });
  }
  std::this_thread::sleep_until(measure_from);
  const double cpu_a = redisCpu(*meter);
  const double at_a = common::nowSeconds();
  std::this_thread::sleep_until(end);
  const double cpu_b = redisCpu(*meter);
  const double wall = common::nowSeconds() - at_a;
  for (auto& th : pool) th.join();
  long total = 0;
  for (long s : sets) total += s;
  out.sets_s = static_cast<double>(total) / seconds;
  out.publish_redis_cpu = (cpu_b - cpu_a) / wall;

  // Whole scrapes: the scan, one pipelined read of every member, and the
  // decoding and merging `multiworld metrics` does.
  constexpr int kScrapes = 5;
  const double scrape_cpu_a = redisCpu(*meter);
  const auto scrape_start = Clock::now();
  size_t series = 0;
  for (int s = 0; s < kScrapes; ++s) {
    mw::Directory dir(redis_url, keys.ns(), std::chrono::seconds(5));
    mw::metrics::Merge merge;
    for (const mw::MemberMetrics& m : dir.memberMetrics()) {
      if (m.snapshot) merge.add(mw::metrics::decode(*m.snapshot), {"member"}, {m.id});
    }
    series = merge.result().sampleCount();
  }
  out.scrape_ms = std::chrono::duration<double, std::milli>(Clock::now() - scrape_start).count() / kScrapes;
  out.scrape_redis_cpu_s = (redisCpu(*meter) - scrape_cpu_a) / kScrapes;
  out.scraped_series = series;
  return out;
}

}  // namespace mwbench
