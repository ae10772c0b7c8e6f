// mw_bench control: what the control plane costs Redis, and how many
// members one Redis serves.
//
// Members are simulated: each is what one context's watchdog does to
// Redis, with the watchdog's own code (core/liveness/heartbeat_round.h,
// the keys of core/store/keys.h), each on its own connection (plus an idle
// subscriber, as a context has), at the default heartbeat settings; every
// member is in two two-rank worlds with its neighbours on a ring. Real
// contexts (the C API) measured the same way show the simulation is
// faithful. Three measurements, on a private redis-server on TCP
// 127.0.0.1:
//   paced     1, 4, 100 and 1000 members, each beating every 100 ms:
//             Redis commands per second per member, the round trip of one
//             heartbeat round (write own beat, read peers' beats and the
//             worlds' break markers), and redis-server's CPU;
//   capacity  what one core of redis-server does of this load: the paced
//             1000 members' commands per CPU second of redis-server
//             (Redis runs commands on one thread; this load generator, on
//             the same machine, cannot saturate it); and, as a best case,
//             rounds pipelined back to back from two connections;
//   served    members one Redis serves at <= 50% of that capacity;
//   metrics   1000 members publishing their metrics every 10 s (the
//             default metrics_publish_ms): redis-server's CPU for it, and
//             what one scrape of all of them (`multiworld metrics`) costs
//             (bench/control_metrics.h).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/control_metrics.h"
#include "bench/extra_suites.h"
#include "bench/suite_common.h"
#include "core/liveness/heartbeat_round.h"
#include "core/store/keys.h"
#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"
#include "core/store/redis_values.h"
#include "tools/lab/ports.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::percentile;
using Clock = std::chrono::steady_clock;

// The library's defaults (core/config.h) and the watchdog's TTL refresh
// (core/liveness/watchdog.cc).
constexpr std::chrono::milliseconds kInterval{100};
constexpr std::chrono::milliseconds kTimeout{1000};
constexpr int kRefreshEveryTicks = 10;
constexpr std::chrono::milliseconds kWorldKeyTtl{60000};

class Sim {
 public:
  Sim(const mw::RedisUrl& url, const std::string& ns, int members) : keys_(ns) {
    char host[256] = {0};
    host_ = gethostname(host, sizeof host - 1) == 0 ? host : "bench";
    for (int i = 0; i < members; ++i) {
      Member m;
      m.id = "sim" + std::to_string(i);
      // Ring: world i joins member i and i+1; one member is alone in a
      // one-rank world.
      m.worlds.push_back("ring" + std::to_string(i));
      if (members > 1) {
        m.worlds.push_back("ring" + std::to_string((i + members - 1) % members));
        m.peers.push_back("sim" + std::to_string((i + 1) % members));
        if (members > 2) m.peers.push_back("sim" + std::to_string((i + members - 1) % members));
      }
      m.conn = mw::RedisConnection::connect(url, std::chrono::seconds(5));
      m.sub = mw::RedisConnection::connect(url, std::chrono::seconds(5));
      m.sub->command({"SUBSCRIBE", keys_.eventsChannel()});
      members_.push_back(std::move(m));
    }
  }

  size_t size() const { return members_.size(); }

  mw::HeartbeatRound round(size_t i) {
    Member& m = members_[i];
    mw::HeartbeatRound r;
    r.heartbeat_key = keys_.heartbeat(m.id);
    const long long unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
    r.heartbeat_value = mw::formatHeartbeat(mw::Heartbeat{++m.beat, host_, getpid(), unix_ms});
    r.heartbeat_ttl = kTimeout;
    for (const auto& p : m.peers) r.peer_keys.push_back(keys_.heartbeat(p));
    for (const auto& w : m.worlds) r.marker_keys.push_back(keys_.worldEpoch(w, 1, "broken"));
    if (++m.ticks % kRefreshEveryTicks == 0) {
      r.refresh_ttl = kWorldKeyTtl;
      for (const auto& w : m.worlds) {
        r.refresh_keys.push_back(keys_.worldMeta(w));
        r.refresh_keys.push_back(keys_.worldEpoch(w, 1, "members"));
      }
    }
    return r;
  }
  mw::RedisConnection& conn(size_t i) { return *members_[i].conn; }

 private:
  struct Member {
    std::string id;
    std::vector<std::string> peers, worlds;
    std::unique_ptr<mw::RedisConnection> conn, sub;
    uint64_t beat = 0;
    int ticks = 0;
  };
  const mw::Keys keys_;
  std::string host_;
  std::vector<Member> members_;
};

// What Redis says about itself: total commands processed and CPU seconds.
struct RedisMeter {
  explicit RedisMeter(const mw::RedisUrl& url) : conn(mw::RedisConnection::connect(url, std::chrono::seconds(5))) {}
  std::string info(const char* section) { return mw::replyString(conn->command({"INFO", section}).get()); }
  static double field(const std::string& info, const std::string& name) {
    size_t at = info.find(name + ":");
    return at == std::string::npos ? 0 : std::atof(info.c_str() + at + name.size() + 1);
  }
  struct Sample {
    double commands, cpu_s, at_s;
  };
  Sample sample() {
    const std::string stats = info("stats"), cpu = info("cpu");
    return {field(stats, "total_commands_processed"), field(cpu, "used_cpu_sys") + field(cpu, "used_cpu_user"),
            nowSeconds()};
  }
  std::unique_ptr<mw::RedisConnection> conn;
};

struct Paced {
  int members = 0;
  double commands_per_member_s = 0, commands_s = 0;
  double redis_commands_s = 0, redis_cpu = 0;  // as redis-server counts them, and its CPU (1 = a core)
  double rtt_p50_us = 0, rtt_p99_us = 0, rtt_max_us = 0;
  double late_pct = 0;  // rounds that started over a quarter interval late
};

// Every member beats every kInterval, members spread evenly over it, from
// a few threads; measured for `seconds` after one second of warm-up.
Paced runPaced(const mw::RedisUrl& url, int members, double seconds) {
  Sim sim(url, "ctl" + std::to_string(members), members);
  RedisMeter meter(url);
  const int threads = std::min(members, 4);
  const auto start = Clock::now() + std::chrono::milliseconds(50);
  const auto measure_from = start + std::chrono::seconds(1);
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::vector<double>> rtts(threads);
  std::vector<long> late(threads, 0), rounds(threads, 0), commands(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (long tick = 0;; ++tick) {
        for (int i = t; i < members; i += threads) {
          auto due = start + tick * kInterval + kInterval * i / members;
          if (due >= end) return;
          std::this_thread::sleep_until(due);
          const mw::HeartbeatRound round = sim.round(static_cast<size_t>(i));
          mw::RedisConnection& conn = sim.conn(static_cast<size_t>(i));
          auto t0 = Clock::now();
          const size_t sent = mw::appendHeartbeatRound(conn, round);
          mw::readHeartbeatRound(conn, round);
          auto t1 = Clock::now();
          if (due < measure_from) continue;
          rtts[t].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          ++rounds[t];
          commands[t] += static_cast<long>(sent);
          if (t0 - due > kInterval / 4) ++late[t];
        }
      }
    });
  }
  std::this_thread::sleep_until(measure_from);
  auto a = meter.sample();
  std::this_thread::sleep_until(end);
  auto b = meter.sample();
  for (auto& th : pool) th.join();

  Paced p;
  p.members = members;
  const double wall = b.at_s - a.at_s;
  // What the members sent for the beats due in the window (Redis's own
  // count would also hold beats that ran late into it).
  std::vector<double> all;
  long late_total = 0, rounds_total = 0, commands_total = 0;
  for (int t = 0; t < threads; ++t) {
    all.insert(all.end(), rtts[t].begin(), rtts[t].end());
    late_total += late[t];
    rounds_total += rounds[t];
    commands_total += commands[t];
  }
  p.commands_s = static_cast<double>(commands_total) / seconds;
  p.commands_per_member_s = p.commands_s / members;
  p.redis_commands_s = (b.commands - a.commands - 2) / wall;  // less the meter's own INFO
  p.redis_cpu = (b.cpu_s - a.cpu_s) / wall;
  p.rtt_p50_us = percentile(all, 50);
  p.rtt_p99_us = percentile(all, 99);
  p.rtt_max_us = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  p.late_pct = rounds_total ? 100.0 * late_total / rounds_total : 0;
  return p;
}

struct Pipelined {
  double commands_s = 0, redis_cpu = 0;
};

// The same rounds, pipelined back to back (64 members' rounds per round
// trip) from two connections, so that Redis is the limit if anything is.
Pipelined runPipelined(const mw::RedisUrl& url, double seconds) {
  constexpr int kConnections = 2, kMembersEach = 500, kBatch = 64;
  std::vector<std::unique_ptr<Sim>> sims;
  for (int c = 0; c < kConnections; ++c) sims.push_back(std::make_unique<Sim>(url, "cap" + std::to_string(c), kMembersEach));
  RedisMeter meter(url);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int c = 0; c < kConnections; ++c) {
    pool.emplace_back([&, c] {
      Sim& sim = *sims[c];
      mw::RedisConnection& conn = sim.conn(0);
      std::vector<mw::HeartbeatRound> batch(kBatch);
      for (size_t next = 0; !stop.load();) {
        for (auto& r : batch) r = sim.round(next++ % sim.size());
        for (auto& r : batch) mw::appendHeartbeatRound(conn, r);
        for (auto& r : batch) mw::readHeartbeatRound(conn, r);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto a = meter.sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto b = meter.sample();
  stop.store(true);
  for (auto& th : pool) th.join();
  Pipelined out;
  const double wall = b.at_s - a.at_s;
  out.commands_s = (b.commands - a.commands - 2) / wall;
  out.redis_cpu = (b.cpu_s - a.cpu_s) / wall;
  return out;
}

// Real contexts through the C API, each in two two-rank worlds of a ring,
// idle: the commands per second per member that Redis sees.
double realContextsCommandsPerMember(const std::string& redis_url, const mw::RedisUrl& url, int members,
                                     const BenchOptions& opt, double seconds) {
  std::vector<mw_context_t*> ctxs(members);
  for (int i = 0; i < members; ++i) ctxs[i] = newContext(redis_url, "real", 0);
  std::vector<std::vector<mw_world_t*>> worlds(members);
  std::vector<std::thread> creators;
  for (int i = 0; i < members; ++i) {
    creators.emplace_back([&, i] {
      // In increasing world order, so the ring's creations never wait in a circle.
      std::vector<std::pair<int, int>> mine = {{i, 0}, {(i + members - 1) % members, 1}};
      std::sort(mine.begin(), mine.end());
      for (auto [w, rank] : mine) {
        mw_world_t* world = nullptr;
        mwCheck(mw_world_create(ctxs[i], ("ring" + std::to_string(w)).c_str(), rank, 2, backendOf(opt), 0, 30000,
                                &world),
                "creating a ring world");
        worlds[i].push_back(world);
      }
    });
  }
  for (auto& c : creators) c.join();
  RedisMeter meter(url);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto a = meter.sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  auto b = meter.sample();
  for (int i = 0; i < members; ++i) {
    for (auto* w : worlds[i]) mw_world_destroy(w);
    mw_context_free(ctxs[i]);
  }
  return (b.commands - a.commands - 2) / (b.at_s - a.at_s) / members;
}

std::string fmt(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void raiseFdLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

int runControlSuite(const BenchOptions& opt) {
  const double seconds = opt.seconds > 0 ? opt.seconds : 5.0;
  try {
    raiseFdLimit();  // 1000 members hold 2000 connections; the private redis-server inherits it
    mwlab::TempDir dir("mw-bench-");
    const int port = mwlab::freeLoopbackPort();
    PrivateRedis redis(dir.path(), {"--port", std::to_string(port), "--bind", "127.0.0.1", "--maxclients", "10000"});
    const std::string redis_url = "redis://127.0.0.1:" + std::to_string(port);
    const mw::RedisUrl url = mw::parseRedisUrl(redis_url);
    RedisMeter meter(url);
    const std::string version = [&] {
      std::string server = meter.info("server");
      size_t at = server.find("redis_version:");
      return at == std::string::npos ? std::string("?") : server.substr(at + 14, server.find('\r', at) - at - 14);
    }();
    std::printf("control: redis-server %s on tcp 127.0.0.1 (private), heartbeat_interval_ms %lld, "
                "heartbeat_timeout_ms %lld (the defaults); every member in two two-rank worlds of a ring; "
                "%.0f s per measurement\n",
                version.c_str(), static_cast<long long>(kInterval.count()), static_cast<long long>(kTimeout.count()),
                seconds);

    const double real = realContextsCommandsPerMember(redis_url, url, 4, opt, seconds);
    std::printf("real contexts (C API, %s worlds): 4 members, %.1f Redis commands/s per member\n",
                backendName(opt), real);

    std::vector<Paced> paced;
    std::printf("%8s %14s %12s %14s %10s %12s %12s %12s %8s\n", "members", "cmds/s/member", "cmds/s",
                "redis_cmds/s", "redis_cpu", "rtt_p50_us", "rtt_p99_us", "rtt_max_us", "late_%");
    for (int n : {1, 4, 100, 1000}) {
      Paced p = runPaced(url, n, seconds);
      std::printf("%8d %14.1f %12.0f %14.0f %9.1f%% %12.0f %12.0f %12.0f %8.2f\n", p.members,
                  p.commands_per_member_s, p.commands_s, p.redis_commands_s, 100 * p.redis_cpu, p.rtt_p50_us,
                  p.rtt_p99_us, p.rtt_max_us, p.late_pct);
      std::fflush(stdout);
      paced.push_back(p);
    }
    const Paced& big = paced.back();
    // Redis runs commands on one thread: one CPU second of it is its capacity.
    const double capacity = big.redis_cpu > 0 ? big.redis_commands_s / big.redis_cpu : 0;
    const double per_member = big.commands_per_member_s;
    const double served = per_member > 0 ? 0.5 * capacity / per_member : 0;
    Pipelined best = runPipelined(url, seconds);
    std::printf("capacity: %.0f commands/s per core of redis-server for this load (%d members: %.0f commands/s at "
                "%.1f%% of a core); pipelined best case: %.0f commands/s at %.0f%% of a core\n",
                capacity, big.members, big.redis_commands_s, 100 * big.redis_cpu, best.commands_s,
                100 * best.redis_cpu);
    std::printf("served: one Redis serves %.0f members at <= 50%% of its capacity (%.1f commands/s each)\n", served,
                per_member);
    const MetricsLoad ml = runMetricsLoad(redis_url, 1000, std::chrono::milliseconds(10000), seconds);
    std::printf("metrics: %d members publishing every %lld ms (a snapshot of %zu bytes): %.0f writes/s, "
                "redis-server at %.2f%% of a core; one scrape of them all (%zu series): %.0f ms, %.1f ms of "
                "redis-server CPU (%.2f%% of a core at a 15 s scrape interval)\n",
                ml.members, static_cast<long long>(ml.interval.count()), ml.snapshot_bytes, ml.sets_s,
                100 * ml.publish_redis_cpu, ml.scraped_series, ml.scrape_ms, 1000 * ml.scrape_redis_cpu_s,
                100 * ml.scrape_redis_cpu_s / 15);

    if (!opt.json_path.empty()) {
      std::vector<JsonRow> rows;
      for (const auto& p : paced) {
        rows.push_back({{"members", std::to_string(p.members)},
                        {"commands_per_member_s", jnum(p.commands_per_member_s)},
                        {"commands_s", jnum(p.commands_s)},
                        {"redis_commands_s", jnum(p.redis_commands_s)},
                        {"redis_cpu", jnum(p.redis_cpu)},
                        {"rtt_p50_us", jnum(p.rtt_p50_us)},
                        {"rtt_p99_us", jnum(p.rtt_p99_us)},
                        {"rtt_max_us", jnum(p.rtt_max_us)},
                        {"late_pct", jnum(p.late_pct)}});
      }
      JsonRow top = backendFields(opt);
      top.push_back({"redis_version", jsonString(version)});
      top.push_back({"heartbeat_interval_ms", std::to_string(kInterval.count())});
      top.push_back({"real_contexts_commands_per_member_s", jnum(real)});
      top.push_back({"capacity_commands_s", jnum(capacity)});
      top.push_back({"pipelined_commands_s", jnum(best.commands_s)});
      top.push_back({"pipelined_redis_cpu", jnum(best.redis_cpu)});
      top.push_back({"members_served_at_half_capacity", fmt(served)});
      top.push_back({"metrics_members", std::to_string(ml.members)});
      top.push_back({"metrics_publish_ms", std::to_string(ml.interval.count())});
      top.push_back({"metrics_snapshot_bytes", std::to_string(ml.snapshot_bytes)});
      top.push_back({"metrics_writes_s", jnum(ml.sets_s)});
      top.push_back({"metrics_publish_redis_cpu", jnum(ml.publish_redis_cpu)});
      top.push_back({"metrics_scrape_ms", jnum(ml.scrape_ms)});
      top.push_back({"metrics_scrape_redis_cpu_s", jnum(ml.scrape_redis_cpu_s)});
      if (!writeJson(opt.json_path, "control", opt.command, machineName(), rows, top)) return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench control: %s\n", e.what());
    return 1;
  }
}

}  // namespace mwbench
