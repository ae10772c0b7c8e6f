// The metrics machinery alone (core/metrics): counters and histograms under
// concurrent updates and snapshots (run under TSan too), the registry's
// series, the text exposition, the Redis copy and what its reader refuses,
// and the library's metric set as a world and a context update it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/metrics/context_metrics.h"
#include "core/metrics/exposition.h"
#include "core/metrics/merge.h"
#include "core/metrics/wire.h"

namespace mw::metrics {
namespace {

using std::chrono::nanoseconds;

constexpr int kThreads = 4;
constexpr uint64_t kPerThread = 200000;

const Family* family(const Snapshot& s, const std::string& name) {
  for (const Family& f : s.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Sample* series(const Snapshot& s, const std::string& name, const std::vector<std::string>& values) {
  const Family* f = family(s, name);
  if (!f) return nullptr;
  for (const Sample& sample : f->samples) {
    if (sample.label_values == values) return &sample;
  }
  return nullptr;
}

TEST(Metrics, CounterLosesNothingUnderConcurrentAddsAndReads) {
  Counter c;
  std::atomic<bool> done{false};
  uint64_t last = 0;
  bool monotonic = true;
  std::thread reader([&] {
    while (!done) {
      const uint64_t v = c.value();
      monotonic = monotonic && v >= last;
      last = v;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (uint64_t i = 0; i < kPerThread; ++i) c.add(2);
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(c.value(), 2 * kThreads * kPerThread);
  EXPECT_TRUE(monotonic);
}

TEST(Metrics, HistogramBucketsAreInclusiveUpperBounds) {
  Layout l = Layout::ofSeconds({1e-6, 1e-3});
  Histogram h(l);
  h.observe(1000);     // exactly 1 us: the first bucket
  h.observe(1001);     // just past it: the second
  h.observe(1000000);  // exactly 1 ms: the second
  h.observe(1000001);  // past every bound: +Inf only
  HistogramReading r = h.read();
  EXPECT_EQ(r.count, 4u);
  EXPECT_EQ(r.sum, 1000u + 1001u + 1000000u + 1000001u);
  EXPECT_EQ(r.cumulative, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(l.exposed, (std::vector<double>{1e-6, 1e-3}));
}

TEST(Metrics, HistogramCountsEveryObservationOfConcurrentThreads) {
  Layout l = Layout::ofSeconds({1e-6, 1e-5, 1e-4});
  Histogram h(l);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      HistogramReading r = h.read();
      EXPECT_LE(r.cumulative[0], r.cumulative[1]);
      EXPECT_LE(r.cumulative[2], r.count);
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) h.observe(static_cast<uint64_t>(t) * 40000);  // 0, 40 us, 80 us, 120 us
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  HistogramReading r = h.read();
  EXPECT_EQ(r.count, kThreads * kPerThread);
  EXPECT_EQ(r.cumulative, (std::vector<uint64_t>{kPerThread, kPerThread, 3 * kPerThread}));
  EXPECT_EQ(r.sum, kPerThread * (0 + 40000 + 80000 + 120000));
}

TEST(Metrics, RegistryMakesASeriesOnceAndShowsItFromItsFirstCount) {
  Registry r;
  const auto f = r.add({"t_total", "help", Kind::Counter, {"a"}, nullptr});
  Counter& x = r.counter(f, {"x"});
  EXPECT_EQ(&x, &r.counter(f, {"x"}));
  EXPECT_TRUE(r.read().empty());  // no series counted yet: no family
  x.add(3);
  std::vector<Family> read = r.read();
  ASSERT_EQ(read.size(), 1u);
  ASSERT_EQ(read[0].samples.size(), 1u);
  EXPECT_EQ(read[0].samples[0].label_values, std::vector<std::string>{"x"});
  EXPECT_EQ(read[0].samples[0].value, 3);
  EXPECT_THROW(r.counter(f, {"x", "y"}), Error);  // a wrong number of labels
  EXPECT_THROW(r.histogram(f, {"x"}), Error);     // the other kind
}

TEST(Metrics, RegistrySnapshotsWhileSeriesAreMadeAndUpdated) {
  Registry r;
  const Layout l = Layout::ofSeconds({1e-3});
  const auto h = r.add({"t_seconds", "help", Kind::Histogram, {"n"}, &l});
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) r.read();
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) r.histogram(h, {std::to_string((t * 2000 + i) % 50)}).observe(5);
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  std::vector<Family> read = r.read();
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].samples.size(), 50u);
  uint64_t total = 0;
  for (const Sample& s : read[0].samples) total += s.count;
  EXPECT_EQ(total, kThreads * 2000u);
}

TEST(Metrics, ExpositionWritesPrometheusText) {
  Snapshot s;
  s.families.push_back({"mw_x_total", "Counts \\ things\nand more.", Kind::Counter, {"path", "world"}, {},
                        {{{"tag", "a\"b\\c\nd"}, 42, 0, {}}}});
  s.families.push_back({"mw_up", "Up.", Kind::Gauge, {}, {}, {{{}, 1, 0, {}}}});
  s.families.push_back({"mw_t_seconds", "Time.", Kind::Histogram, {"op"}, {1e-6, 0.25},
                        {{{"send"}, 1.5e-6, 3, {1, 2}}}});
  EXPECT_EQ(exposition(s),
            "# HELP mw_x_total Counts \\\\ things\\nand more.\n"
            "# TYPE mw_x_total counter\n"
            "mw_x_total{path=\"tag\",world=\"a\\\"b\\\\c\\nd\"} 42\n"
            "# HELP mw_up Up.\n"
            "# TYPE mw_up gauge\n"
            "mw_up 1\n"
            "# HELP mw_t_seconds Time.\n"
            "# TYPE mw_t_seconds histogram\n"
            "mw_t_seconds_bucket{op=\"send\",le=\"1e-06\"} 1\n"
            "mw_t_seconds_bucket{op=\"send\",le=\"0.25\"} 2\n"
            "mw_t_seconds_bucket{op=\"send\",le=\"+Inf\"} 3\n"
            "mw_t_seconds_sum{op=\"send\"} 1.5e-06\n"
            "mw_t_seconds_count{op=\"send\"} 3\n");
}

Snapshot sample() {
  Snapshot s;
  s.families.push_back({"mw_x_total", "Tabs\tand\nlines \\ kept.", Kind::Counter, {"path", "world"}, {},
                        {{{"tag", "w\t1"}, 42, 0, {}}, {{"ring", ""}, 7, 0, {}}}});
  s.families.push_back({"mw_g", "", Kind::Gauge, {}, {}, {{{}, -2.5, 0, {}}}});
  s.families.push_back({"mw_t_seconds", "Time.", Kind::Histogram, {"op"}, {1e-6, 0.25},
                        {{{"send"}, 1.5e-6, 3, {1, 2}}}});
  return s;
}

TEST(Metrics, WireReadsBackWhatItWrote) {
  const Snapshot s = sample();
  const Snapshot back = decode(encode(s));
  EXPECT_EQ(exposition(back), exposition(s));
  ASSERT_EQ(back.families.size(), 3u);
  EXPECT_EQ(back.families[0].help, s.families[0].help);
  EXPECT_EQ(back.families[0].samples[0].label_values, s.families[0].samples[0].label_values);
  EXPECT_EQ(back.families[2].bounds, s.families[2].bounds);
  EXPECT_EQ(back.families[2].samples[0].cumulative, (std::vector<uint64_t>{1, 2}));
}

TEST(Metrics, WireRefusesWhatItWouldNotWrite) {
  const std::string good = encode(sample());
  auto refused = [](const std::string& text) {
    try {
      decode(text);
    } catch (const Error& e) {
      return e.status() == Status::Store;
    }
    return false;
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_FALSE(refused(good));
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused("mw-metrics 2\n"));
  EXPECT_TRUE(refused(replaced("mw_x_total", "9bad")));            // a metric name
  EXPECT_TRUE(refused(replaced("\tpath,world\t", "\tpa-th,world\t")));  // a label name
  EXPECT_TRUE(refused(replaced("S\t42\t", "S\tforty\t")));          // a number
  EXPECT_TRUE(refused(replaced("S\t42\t", "S\t-42\t")));            // a negative count
  EXPECT_TRUE(refused(replaced("\tw\\t1", "")));                   // a label value short
  EXPECT_TRUE(refused(replaced("3\t1,2", "3\t2,1")));              // buckets decreasing
  EXPECT_TRUE(refused(replaced("3\t1,2", "1\t1,2")));              // past the count
  EXPECT_TRUE(refused(replaced("1e-06,0.25", "0.25,1e-06")));      // bounds not increasing
  EXPECT_TRUE(refused(replaced("\t3\tTime.", "\t4\tTime.")));       // a kind
  EXPECT_TRUE(refused(replaced("w\\t1", "w\\x1")));                // an escape
  EXPECT_TRUE(refused("mw-metrics 1\nS\t1\t0\t\n"));               // a series before a family
  EXPECT_TRUE(refused(std::string(kMaxWireBytes + 1, 'x')));
}

TEST(Metrics, AWorldCountsItsOperationsBytesAndBreak) {
  ContextMetrics cm(false);
  auto ucx = cm.forWorld(Backend::Ucx, "a");
  EXPECT_EQ(ucx, cm.forWorld(Backend::Ucx, "b"));  // no world labels: one set per backend
  auto gloo = cm.forWorld(Backend::Gloo, "a");
  ucx->completed(OpKind::Send, Status::Ok, nanoseconds(2000), 64);
  ucx->completed(OpKind::Send, Status::WorldBroken, nanoseconds(3000), 64);
  ucx->sent(DataPath::Ring, 64);
  ucx->receivedOnRail(1, 100);
  gloo->completed(OpKind::Recv, Status::Ok, nanoseconds(5000), 16);
  ucx->broke(BreakCause::PeerExit, std::chrono::milliseconds(30));
  cm.formed(std::chrono::milliseconds(20));
  PathChange down;
  down.index = 1;
  down.failover_stall = std::chrono::milliseconds(150);
  cm.pathChanged("a", down, false);

  ContextMetrics::Readings now;
  now.worlds[static_cast<int>(Backend::Ucx) - 1][1] = 1;
  now.store_up = false;
  const Snapshot s = cm.snapshot(now);
  ASSERT_NE(series(s, "mw_ops_total", {"ucx", "send"}), nullptr);
  EXPECT_EQ(series(s, "mw_ops_total", {"ucx", "send"})->value, 2);
  EXPECT_EQ(series(s, "mw_op_seconds", {"ucx", "send"})->count, 2u);
  EXPECT_DOUBLE_EQ(series(s, "mw_op_seconds", {"ucx", "send"})->value, 5e-6);
  EXPECT_EQ(series(s, "mw_op_errors_total", {"ucx", "send", "world_broken"})->value, 1);
  EXPECT_EQ(series(s, "mw_bytes_sent_total", {"ucx", "ring"})->value, 64);  // UCX counts its transfers only
  EXPECT_EQ(series(s, "mw_bytes_sent_total", {"ucx", "tag"}), nullptr);
  EXPECT_EQ(series(s, "mw_bytes_received_total", {"ucx", "rail1"})->value, 100);
  EXPECT_EQ(series(s, "mw_bytes_received_total", {"gloo", "tcp"})->value, 16);  // Gloo: its p2p payloads
  EXPECT_EQ(series(s, "mw_world_breaks_total", {"ucx", "peer_exit"})->value, 1);
  // 30 ms: not within 25 ms (bound 4), within 50 ms (bound 5).
  EXPECT_EQ(series(s, "mw_break_detection_seconds", {"peer_exit"})->cumulative[4], 0u);
  EXPECT_EQ(series(s, "mw_break_detection_seconds", {"peer_exit"})->cumulative[5], 1u);
  EXPECT_EQ(series(s, "mw_world_formations_total", {})->value, 1);
  EXPECT_EQ(series(s, "mw_path_changes_total", {"rail1", "down"})->value, 1);
  EXPECT_EQ(series(s, "mw_failover_stall_seconds", {})->count, 1u);
  EXPECT_EQ(series(s, "mw_worlds", {"ucx", "broken"})->value, 1);
  EXPECT_EQ(series(s, "mw_worlds", {"gloo", "ready"})->value, 0);
  EXPECT_EQ(series(s, "mw_worlds", {"nccl", "ready"}), nullptr);  // never used
  EXPECT_EQ(series(s, "mw_store_up", {})->value, 0);
  EXPECT_EQ(family(s, "mw_store_round_trip_seconds"), nullptr);  // nothing observed yet
  // Rare events show at zero, so that a rate sees their first one.
  EXPECT_EQ(series(s, "mw_world_breaks_total", {"gloo", "heartbeat"})->value, 0);
  EXPECT_EQ(series(s, "mw_events_dropped_total", {})->value, 0);
  EXPECT_EQ(series(s, "mw_store_failovers_total", {})->value, 0);
}

TEST(Metrics, WorldLabelsGiveEachWorldNameItsSeries) {
  ContextMetrics cm(true);
  auto a = cm.forWorld(Backend::Ucx, "a");
  auto b = cm.forWorld(Backend::Ucx, "b");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, cm.forWorld(Backend::Ucx, "a"));  // a name formed again continues its counts
  a->completed(OpKind::Barrier, Status::Ok, nanoseconds(1), 0);
  b->completed(OpKind::Barrier, Status::Cancelled, nanoseconds(1), 0);
  b->broke(BreakCause::Heartbeat, nanoseconds(1));
  const Snapshot s = cm.snapshot({});
  EXPECT_EQ(family(s, "mw_ops_total")->label_names, (std::vector<std::string>{"backend", "op", "world"}));
  EXPECT_EQ(series(s, "mw_ops_total", {"ucx", "barrier", "a"})->value, 1);
  EXPECT_EQ(series(s, "mw_op_errors_total", {"ucx", "barrier", "cancelled", "b"})->value, 1);
  EXPECT_EQ(series(s, "mw_world_breaks_total", {"ucx", "heartbeat", "b"})->value, 1);
  EXPECT_EQ(series(s, "mw_break_detection_seconds", {"heartbeat"})->count, 1u);  // no world label here
}

TEST(Metrics, WorldsCountConcurrentlyWhileSnapshotsAreTaken) {
  ContextMetrics cm(false);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) exposition(cm.snapshot({}));
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      auto w = cm.forWorld(Backend::Ucx, "w" + std::to_string(t));
      for (int i = 0; i < 20000; ++i) {
        w->completed(OpKind::Allreduce, i % 100 ? Status::Ok : Status::Timeout, nanoseconds(i), 0);
        w->sent(DataPath::Tag, 8);
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  const Snapshot s = cm.snapshot({});
  EXPECT_EQ(series(s, "mw_ops_total", {"ucx", "allreduce"})->value, kThreads * 20000);
  EXPECT_EQ(series(s, "mw_op_errors_total", {"ucx", "allreduce", "timeout"})->value, kThreads * 200);
  EXPECT_EQ(series(s, "mw_bytes_sent_total", {"ucx", "tag"})->value, kThreads * 20000 * 8);
}

TEST(Metrics, NumbersReadTheSameInEveryLocale) {
  EXPECT_EQ(formatNumber(0.5), "0.5");
  EXPECT_EQ(formatNumber(1e-6), "1e-06");
  EXPECT_EQ(formatNumber(123456789), "123456789");
  EXPECT_EQ(formatNumber(1.0 / 0.0), "+Inf");
}

}  // namespace
}  // namespace mw::metrics

namespace mw::metrics {
namespace {

TEST(Metrics, MergeLabelsEachMembersSeriesAndLeavesOutWhatDisagrees) {
  Snapshot a, b;
  a.families.push_back({"mw_x_total", "X.", Kind::Counter, {"op"}, {}, {{{"send"}, 1, 0, {}}}});
  b.families.push_back({"mw_x_total", "X.", Kind::Counter, {"op"}, {}, {{{"send"}, 2, 0, {}}}});
  b.families.push_back({"mw_y", "Y.", Kind::Gauge, {}, {}, {{{}, 3, 0, {}}}});
  Snapshot c;  // another version: the same name with other labels
  c.families.push_back({"mw_x_total", "X.", Kind::Counter, {"op", "extra"}, {}, {{{"send", "e"}, 4, 0, {}}}});
  Merge m;
  m.add(a, {"member", "pid"}, {"m1", "10"});
  m.add(b, {"member", "pid"}, {"m2", "20"});
  m.add(c, {"member", "pid"}, {"m3", "30"});
  EXPECT_EQ(m.conflicts(), 1u);
  EXPECT_EQ(exposition(m.result()),
            "# HELP mw_x_total X.\n# TYPE mw_x_total counter\n"
            "mw_x_total{member=\"m1\",pid=\"10\",op=\"send\"} 1\n"
            "mw_x_total{member=\"m2\",pid=\"20\",op=\"send\"} 2\n"
            "# HELP mw_y Y.\n# TYPE mw_y gauge\n"
            "mw_y{member=\"m2\",pid=\"20\"} 3\n");
}

}  // namespace
}  // namespace mw::metrics
