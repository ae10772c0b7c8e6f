// mw_bench failover: what a cut link costs a UCX world whose members have
// two paths (issue 16). Members run in network namespaces joined by two
// links (two members: two veth pairs; three: two bridges, one port each);
// Redis is on a unix socket, which no cut touches.
//  - Stall: checked traffic (a sequence-numbered p2p stream both ways, or an
//    allreduce loop on 3 members) runs paced while the link that carries it
//    (read from its byte counters) is cut, by taking it down or by dropping
//    every packet; stall = from the moment the cut command returned to the
//    first delivery of a message (an iteration) posted after that, the worst
//    of the members. The cut is then undone, and the next one waits until the
//    path is reported up again. Lost, duplicated, reordered and corrupt
//    messages are counted by the receivers over the whole run.
//  - Overhead: p2p throughput over a world with path_failover on (sequence
//    numbers, acknowledgements) against one with it off, same two links.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/failover_overhead.h"
#include "bench/suite_common.h"
#include "tools/lab/checked_traffic.h"
#include "tools/lab/netns.h"
#include "tools/lab/shared.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {

using namespace common;
using mwlab::percentile;

namespace {

using mwlab::MemberBoard;
using mwlab::NetCut;

constexpr std::size_t kStallMessageBytes = 64 * 1024;
constexpr int kStallWindow = 4;
constexpr int kStallIntervalUs = 1000;  // per direction: 1000 messages (iterations) per second
constexpr int kNoDeliveryLimitMs = 10000;

struct StallBoard {
  std::atomic<int> stop{0};
  MemberBoard m[3];
};

struct StallRow {
  std::string kind;
  NetCut how = NetCut::LinkDown;
  std::vector<double> stalls_ms;
  int64_t lost = 0, duplicated = 0, reordered = 0, corrupt = 0;
  int breaks = 0, path_down = 0, path_up = 0;
  int cuts_on[2] = {0, 0};
  std::string failure;  // why the run could not go on, "" when it did
};

// One kind and cut method: `cuts` cuts of member 0's active link.
StallRow runStall(const std::string& kind, NetCut how, std::size_t cuts, const std::string& redis_url) {
  StallRow row;
  row.kind = kind;
  row.how = how;
  const int n = kind == "p2p" ? 2 : 3;
  mwlab::Rails rails(n, 2);
  mwlab::Shared<StallBoard> b;
  std::vector<std::unique_ptr<Child>> members;
  const std::string world = "failover-" + kind + "-" + mwlab::netCutName(how);
  for (int r = 0; r < n; ++r) {
    members.push_back(labMember(rails.ns(r), [&, r] {
      mwlab::TrafficSpec s;
      s.redis_url = redis_url;
      s.world = world;
      s.rank = r;
      s.size = n;
      s.message_bytes = kStallMessageBytes;
      s.window = kStallWindow;
      s.interval_us = kStallIntervalUs;
      s.settings = {{"data_addresses", mwlab::Rails::addresses({0, 1}, r)}};
      return kind == "p2p" ? mwlab::runCheckedStream(s, b->m[r], b->stop)
                           : mwlab::runCheckedAllreduce(s, b->m[r], b->stop);
    }));
  }
  std::vector<Child*> watch;
  for (auto& m : members) watch.push_back(m.get());
  // Progress is in shared memory, with nothing to block on: short looks
  // (sleepMs ends the run on a signal).
  auto waitFor = [&](const std::function<bool()>& cond, int limit_ms) {
    const int64_t end = mwlab::monotonicNs() + limit_ms * 1000000LL;
    while (!cond()) {
      for (Child* c : watch) {
        if (!c->running()) return cond();  // a member that left: its board says why
      }
      if (mwlab::monotonicNs() >= end) return false;
      sleepMs(2);
    }
    return true;
  };
  auto all = [&](const std::function<bool(const MemberBoard&)>& f) {
    for (int r = 0; r < n; ++r) {
      if (!f(b->m[r])) return false;
    }
    return true;
  };
  auto events = [&](int64_t since) {
    std::string out;
    for (int r = 0; r < n; ++r) out += " [member " + std::to_string(r) + ": " + b->m[r].eventText(since) + "]";
    return out;
  };
  auto anyBroken = [&] { return !all([](const MemberBoard& m) { return m.broken_ns.load() == 0; }); };
  if (!waitFor([&] { return all([](const MemberBoard& m) { return m.delivered.load() >= 50; }); }, 60000)) {
    row.failure = "the traffic did not start within 60 s";
  }
  for (std::size_t c = 0; row.failure.empty() && c < cuts; ++c) {
    const uint64_t before[2] = {rails.bytes(0, 0), rails.bytes(0, 1)};
    sleepMs(200);
    const uint64_t moved[2] = {rails.bytes(0, 0) - before[0], rails.bytes(0, 1) - before[1]};
    const int link = moved[0] >= moved[1] ? 0 : 1;
    ++row.cuts_on[link];
    const int ups = b->m[0].countEvents(MW_EVENT_PATH_UP);
    // The cut is in place once the command returned: from then on, what is
    // posted cannot cross the link. (The stall is short by the moments
    // between the kernel's change and the command's exit.)
    if (!rails.lab().setCut(rails.link(0, link), how, true)) throw std::runtime_error("cannot cut a link");
    const int64_t at = mwlab::monotonicNs();
    for (int r = 0; r < n; ++r) b->m[r].markCut(at);
    const int slot = static_cast<int>(c);
    if (!waitFor([&] { return anyBroken() || all([&](const MemberBoard& m) { return m.resumed_ns[slot].load() != 0; }); },
                 kNoDeliveryLimitMs) ||
        anyBroken()) {
      row.failure = "cut " + std::to_string(c) + " of link " + std::to_string(link) + ": " +
                    (anyBroken() ? "the world broke" : "no delivery within 10 s") + "; events:" + events(at);
      break;
    }
    int64_t last = 0;
    for (int r = 0; r < n; ++r) last = std::max(last, b->m[r].resumed_ns[slot].load());
    row.stalls_ms.push_back((last - at) / 1e6);
    sleepMs(300);  // the traffic runs over the other link a while
    if (!rails.lab().setCut(rails.link(0, link), how, false)) throw std::runtime_error("cannot restore a link");
    if (!waitFor([&] { return b->m[0].countEvents(MW_EVENT_PATH_UP) > ups || anyBroken(); }, kNoDeliveryLimitMs) ||
        anyBroken()) {
      row.failure = "cut " + std::to_string(c) + ": the path did not come back up within 10 s; events:" + events(at);
      break;
    }
    sleepMs(200);
  }
  b->stop.store(1);
  for (auto& m : members) {
    if (!m->join(std::chrono::seconds(60)) && row.failure.empty()) row.failure = m->describe();
  }
  for (int r = 0; r < n; ++r) {
    const MemberBoard& m = b->m[r];
    row.lost += m.lost.load();
    row.duplicated += m.duplicated.load();
    row.reordered += m.reordered.load();
    row.corrupt += m.corrupt.load();
    row.breaks += m.broken_ns.load() != 0;
    row.path_down += m.countEvents(MW_EVENT_PATH_DOWN);
    row.path_up += m.countEvents(MW_EVENT_PATH_UP);
  }
  return row;
}

bool partChosen(const BenchOptions& opt, const std::string& part) {
  return opt.parts.empty() || std::find(opt.parts.begin(), opt.parts.end(), part) != opt.parts.end();
}

}  // namespace

int runFailoverSuite(const BenchOptions& opt) {
  if (opt.min_bytes == 0 || opt.min_bytes > opt.max_bytes || opt.rounds == 0) {
    std::fprintf(stderr, "mw_bench failover: need 0 < --min-bytes <= --max-bytes and --rounds >= 1\n");
    return 2;
  }
  const std::string machine = machineName();
  const std::string why_not = mwlab::netnsUnavailable();
  JsonRow top = backendFields(opt);
  if (!why_not.empty()) {
    std::printf("# failover skipped: %s\n", why_not.c_str());
    top.push_back({"skipped", jsonString(why_not)});
    return opt.json_path.empty() || writeJson(opt.json_path, "failover", opt.command, machine, {}, top) ? 0 : 1;
  }
  std::vector<StallRow> stalls;
  std::vector<OverheadRow> overhead;
  bool ok = true;
  std::string drop_method;
  try {
    SignalGuard on_signal;  // a run ended by a signal still removes its namespaces
    mwlab::TempDir dir("mw-bench-");
    PrivateRedis redis(dir.path());
    std::printf("# failover on %s: %s\n", machine.c_str(), opt.command.c_str());
    std::printf("# stall: %zu cuts per row of the link carrying paced checked traffic (%zu KiB messages, one per "
                "ms per direction; allreduce: 3 members, one iteration per ms); from the cut (its command returned) to "
                "the first delivery of something posted after it, worst member\n",
                opt.trials, kStallMessageBytes / 1024);
    std::printf("%-10s %-10s %5s %9s %9s %9s %5s %5s %5s %5s %6s %5s %5s\n", "kind", "cut", "cuts", "p50_ms",
                "p99_ms", "max_ms", "lost", "dup", "reord", "corr", "breaks", "on_l0", "on_l1");
    std::fflush(stdout);
    for (const char* kind : {"p2p", "allreduce"}) {
      if (!partChosen(opt, kind)) continue;
      for (NetCut how : {NetCut::LinkDown, NetCut::Drop}) {
        StallRow r = runStall(kind, how, opt.trials, redis.url());
        std::printf("%-10s %-10s %5zu %9.1f %9.1f %9.1f %5lld %5lld %5lld %5lld %6d %5d %5d\n", kind,
                    mwlab::netCutName(how), r.stalls_ms.size(), percentile(r.stalls_ms, 50),
                    percentile(r.stalls_ms, 99), percentile(r.stalls_ms, 100), static_cast<long long>(r.lost),
                    static_cast<long long>(r.duplicated), static_cast<long long>(r.reordered),
                    static_cast<long long>(r.corrupt), r.breaks, r.cuts_on[0], r.cuts_on[1]);
        if (!r.failure.empty()) std::fprintf(stderr, "mw_bench failover: %s %s: %s\n", kind, mwlab::netCutName(how), r.failure.c_str());
        std::fflush(stdout);
        ok = ok && r.failure.empty() && r.lost + r.duplicated + r.reordered + r.corrupt == 0 && r.breaks == 0;
        stalls.push_back(std::move(r));
      }
    }
    mwlab::Rails rails(2, 2);
    drop_method = rails.lab().dropMethod();
    if (partChosen(opt, "overhead")) {
      std::printf("# overhead: p2p MB/s (10^6 bytes/s) with path_failover on against off, two members, two links, "
                  "%d in flight, %zu alternating rounds; ratio: median of the rounds' on/off\n", 4, opt.rounds);
      std::printf("%10s %10s %10s %8s %7s %7s\n", "bytes", "on_MBps", "off_MBps", "ratio", "on_via", "off_via");
      overhead = measureFailoverOverhead(opt, rails, redis.url());
      for (const auto& o : overhead) {
        std::printf("%10zu %10.1f %10.1f %8.3f %7s %7s\n", o.bytes, o.on_mbps, o.off_mbps, o.ratio, o.on_via.c_str(),
                    o.off_via.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench failover: %s\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> rows;
    for (const StallRow& r : stalls) {
      rows.push_back({{"part", jsonString("stall")},
                      {"kind", jsonString(r.kind)},
                      {"cut", jsonString(mwlab::netCutName(r.how))},
                      {"cuts", jnum(static_cast<double>(r.stalls_ms.size()))},
                      {"stall_p50_ms", jnum(percentile(r.stalls_ms, 50))},
                      {"stall_p99_ms", jnum(percentile(r.stalls_ms, 99))},
                      {"stall_max_ms", jnum(percentile(r.stalls_ms, 100))},
                      {"lost", jnum(static_cast<double>(r.lost))},
                      {"duplicated", jnum(static_cast<double>(r.duplicated))},
                      {"reordered", jnum(static_cast<double>(r.reordered))},
                      {"corrupt", jnum(static_cast<double>(r.corrupt))},
                      {"breaks", jnum(r.breaks)},
                      {"path_down_events", jnum(r.path_down)},
                      {"path_up_events", jnum(r.path_up)},
                      {"cuts_link0", jnum(r.cuts_on[0])},
                      {"cuts_link1", jnum(r.cuts_on[1])},
                      {"failure", jsonString(r.failure)}});
    }
    for (const OverheadRow& o : overhead) {
      rows.push_back({{"part", jsonString("overhead")},
                      {"kind", jsonString("p2p")},
                      {"bytes", jnum(static_cast<double>(o.bytes))},
                      {"on_mbps", jnum(o.on_mbps)},
                      {"off_mbps", jnum(o.off_mbps)},
                      {"overhead_ratio", jnum(o.ratio)},
                      {"on_via", jsonString(o.on_via)},
                      {"off_via", jsonString(o.off_via)}});
    }
    top.push_back({"drop_method", jsonString(drop_method)});
    top.push_back({"stall_message_bytes", jnum(static_cast<double>(kStallMessageBytes))});
    top.push_back({"stall_interval_us", jnum(kStallIntervalUs)});
    top.push_back({"settings", jsonString("library defaults (path_timeout_ms 100, heartbeat 100/1000 ms)")});
    if (!writeJson(opt.json_path, "failover", opt.command, machine, rows, top)) return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "mw_bench failover: FAILED (a failure, a break, or a message lost, duplicated, reordered "
                         "or corrupt)\n");
    return 1;
  }
  return 0;
}

}  // namespace mwbench
