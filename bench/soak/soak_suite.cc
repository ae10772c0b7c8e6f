#include "bench/soak/soak_suite.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/fault_processes.h"
#include "bench/soak/soak_driver.h"
#include "bench/suite_common.h"
#include "tools/lab/netns.h"
#include "tools/lab/stats.h"

namespace mwbench {

namespace {

using namespace soak;
using common::jnum;
using common::jsonString;

bool needsRails(FaultKind k) { return k == FaultKind::CutOneRail || k == FaultKind::CutAllRails; }

std::string jsonObject(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? ", " : "") + jsonString(fields[i].first) + ": " + fields[i].second;
  return out + "}";
}

std::string jsonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + jsonString(items[i]);
  return out + "]";
}

// The command that replays this run: the same options, with its seed.
std::string replayCommand(const BenchOptions& opt, const SoakConfig& cfg) {
  char minutes[32];
  std::snprintf(minutes, sizeof minutes, "%g", cfg.minutes);
  std::string c = "mw_bench soak --backend " + std::string(opt.ucx ? "ucx" : "gloo") + " --seed " +
                  std::to_string(cfg.seed) + " --minutes " + minutes + " --processes " +
                  std::to_string(cfg.processes) + " --rails " + std::to_string(cfg.rails);
  if (!opt.faults.empty()) {
    c += " --faults ";
    for (size_t i = 0; i < opt.faults.size(); ++i) c += (i ? "," : "") + opt.faults[i];
  }
  for (const auto& [k, v] : cfg.heartbeat) c += " --" + std::string(k == "heartbeat_interval_ms" ? "heartbeat-interval-ms" : "heartbeat-timeout-ms") + " " + v;
  return c;
}

void printResult(const SoakResult& r, const std::string& replay) {
  std::printf("# faults:");
  for (const auto& [k, n] : r.faults) std::printf(" %s=%d", k.c_str(), n);
  std::printf("\n# traffic: %lld messages and iterations checked, %lld incarnations formed, %lld creates failed and "
              "retried, cancels: %lld taken back, %lld too late; path down/up %lld/%lld, store down/up %lld/%lld\n",
              static_cast<long long>(r.delivered), static_cast<long long>(r.incarnations),
              static_cast<long long>(r.create_failures), static_cast<long long>(r.cancels_taken_back),
              static_cast<long long>(r.cancels_too_late), static_cast<long long>(r.path_down),
              static_cast<long long>(r.path_up), static_cast<long long>(r.store_down),
              static_cast<long long>(r.store_up));
  std::printf("# breaks: %d by faults, %d by churn, %d by cancels\n", r.fault_breaks, r.churn_breaks, r.cancel_breaks);
  for (const auto& [k, v] : r.detect_ms) {
    std::printf("# detection %s: n=%zu p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", k.c_str(), v.size(),
                mwlab::percentile(v, 50), mwlab::percentile(v, 99), mwlab::percentile(v, 100));
  }
  if (!r.kill_exit_ms.empty()) {
    std::printf("# kill9 exits: the kernel finished each one p50 %.1f ms, p99 %.1f ms, max %.1f ms after the SIGKILL "
                "(a kill's bound counts from there)\n",
                mwlab::percentile(r.kill_exit_ms, 50), mwlab::percentile(r.kill_exit_ms, 99),
                mwlab::percentile(r.kill_exit_ms, 100));
  }
  std::printf("# redis: %lld PINGs, %lld failed, %lld slower than 50 ms, worst %.1f ms\n",
              static_cast<long long>(r.pings), static_cast<long long>(r.ping_failures),
              static_cast<long long>(r.ping_slow), r.ping_worst_ms);
  if (r.growth.processes == 0) {
    std::printf("# leaks: not judged: no member process was sampled long enough after its warm-up\n");
  } else {
    std::printf("# leaks over %d processes: fd_growth %d, thread_growth %d, maps_growth %d, rss_growth_pct %.2f, "
                "private_growth_pct %.2f (%+.0f KiB/h), %s; %s: %s\n",
                r.growth.processes, r.growth.fds, r.growth.threads, r.growth.maps, r.growth.rss_pct,
                r.growth.private_pct, r.growth.private_kib_per_hour, r.growth.leak ? "a leak" : "no leak",
                r.growth.leak ? "leaking" : "largest", r.growth.worst.c_str());
  }
  std::printf("soak: duration %.0f s, crashes %d, lost %lld, duplicated %lld, reordered %lld, corrupt %lld, "
              "false_breaks %d, missed_breaks %d, violations %zu\n",
              r.duration_s, r.crashes, static_cast<long long>(r.lost), static_cast<long long>(r.duplicated),
              static_cast<long long>(r.reordered), static_cast<long long>(r.corrupt), r.false_breaks,
              r.missed_breaks, r.violations.size());
  if (r.violations.empty()) return;
  std::printf("# violations:\n");
  for (const auto& v : r.violations) std::printf("#   %s\n", v.c_str());
  std::printf("# replay: %s\n# the schedule up to the first violation:\n", replay.c_str());
  for (const auto& line : r.fault_log) {
    std::printf("#   %s\n", line.c_str());
    if (line.rfind("fault " + std::to_string(r.first_violation_fault) + " ", 0) == 0) break;
  }
}

bool writeResult(const BenchOptions& opt, const SoakConfig& cfg, const SoakResult& r, const std::string& replay) {
  common::JsonRow top = common::backendFields(opt);
  auto push = [&](const char* k, const std::string& v) { top.push_back({k, v}); };
  push("seed", std::to_string(cfg.seed));
  push("processes", jnum(cfg.processes));
  push("rails", jnum(cfg.rails));
  for (auto& f : common::heartbeatFields(opt)) top.push_back(f);
  push("duration_s", jnum(r.duration_s));
  std::vector<std::pair<std::string, std::string>> faults, detect;
  for (int k = 0; k < kFaultKinds; ++k) {
    const char* name = faultName(static_cast<FaultKind>(k));
    auto it = r.faults.find(name);
    faults.push_back({name, jnum(it == r.faults.end() ? 0 : it->second)});
  }
  for (const auto& [k, v] : r.detect_ms) detect.push_back({k, jnum(mwlab::percentile(v, 99))});
  push("faults", jsonObject(faults));
  push("crashes", jnum(r.crashes));
  push("lost", jnum(static_cast<double>(r.lost)));
  push("duplicated", jnum(static_cast<double>(r.duplicated)));
  push("reordered", jnum(static_cast<double>(r.reordered)));
  push("corrupt", jnum(static_cast<double>(r.corrupt)));
  push("false_breaks", jnum(r.false_breaks));
  push("missed_breaks", jnum(r.missed_breaks));
  push("detect_p99_ms", jsonObject(detect));
  if (!r.kill_exit_ms.empty()) push("kill9_exit_p99_ms", jnum(mwlab::percentile(r.kill_exit_ms, 99)));
  push("fd_growth", jnum(r.growth.fds));
  push("thread_growth", jnum(r.growth.threads));
  push("rss_growth_pct", jnum(r.growth.rss_pct));
  push("maps_growth", jnum(r.growth.maps));
  push("private_growth_pct", jnum(r.growth.private_pct));
  push("private_growth_kib_per_hour", jnum(r.growth.private_kib_per_hour));
  push("leak", r.growth.leak ? "true" : "false");
  push("leak_processes", jnum(r.growth.processes));
  push("checked", jnum(static_cast<double>(r.delivered)));
  push("redis_ping_worst_ms", jnum(r.ping_worst_ms));
  push("redis_ping_slow", jnum(static_cast<double>(r.ping_slow)));
  push("violations", jsonList(r.violations));
  push("replay", jsonString(replay));
  std::vector<common::JsonRow> rows;
  for (const auto& [k, v] : r.detect_ms) {
    rows.push_back({{"fault", jsonString(k)}, {"detections", jnum(static_cast<double>(v.size()))},
                    {"p50_ms", jnum(mwlab::percentile(v, 50))}, {"p99_ms", jnum(mwlab::percentile(v, 99))},
                    {"max_ms", jnum(mwlab::percentile(v, 100))}});
  }
  return common::writeJson(opt.json_path, "soak", opt.command, common::machineName(), rows, top);
}

}  // namespace

int runSoakSuite(const BenchOptions& opt) {
  SoakConfig cfg;
  cfg.backend = common::backendOf(opt);
  cfg.processes = opt.processes;
  cfg.rails = opt.rails;
  cfg.minutes = opt.minutes;
  cfg.seed = opt.seed_given ? opt.seed
                            : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
                                  static_cast<uint64_t>(getpid());
  if (const std::string bad = common::heartbeatProblem(opt); !bad.empty()) {
    std::fprintf(stderr, "mw_bench soak: %s\n", bad.c_str());
    return 2;
  }
  const common::Heartbeat hb = common::heartbeatInForce(opt);
  cfg.heartbeat_interval_ms = static_cast<int>(hb.interval.count());
  cfg.heartbeat_timeout_ms = static_cast<int>(hb.timeout.count());
  cfg.heartbeat = common::heartbeatSettings(opt);
  std::vector<std::string> notes;
  if (cfg.rails == 2 && !opt.ucx) {
    cfg.rails = 1;
    notes.push_back("gloo worlds have one data path: runs as --rails 1");
  }
  if (cfg.rails == 2) {
    if (const std::string why = mwlab::netnsUnavailable(); !why.empty()) {
      cfg.rails = 1;
      notes.push_back("runs as --rails 1: " + why);
    }
  }
  std::vector<FaultKind> wanted;
  if (opt.faults.empty()) {
    // shrink only when asked for (--faults): the seeds of the runs on
    // record keep their schedules.
    for (int k = 0; k < kFaultKinds; ++k) {
      if (static_cast<FaultKind>(k) != FaultKind::Shrink) wanted.push_back(static_cast<FaultKind>(k));
    }
  } else {
    for (const auto& name : opt.faults) {
      FaultKind k;
      faultFromName(name, &k);  // the parser checked the names
      wanted.push_back(k);
    }
  }
  for (FaultKind k : wanted) {
    if (needsRails(k) && cfg.rails < 2) {
      notes.push_back(std::string(faultName(k)) + " skipped: it needs --rails 2");
    } else {
      cfg.kinds.push_back(k);
    }
  }
  if (cfg.kinds.empty()) {
    std::fprintf(stderr, "mw_bench soak: no fault kind can run here\n");
    return 2;
  }
  const std::string replay = replayCommand(opt, cfg);
  std::printf("# soak on %s: %s\n", common::machineName().c_str(), opt.command.c_str());
  std::printf("# multiworld %s, %s, %d processes, %d rail%s, %s; seed %llu\n", mw_version_string(),
              common::backendName(opt), cfg.processes, cfg.rails, cfg.rails == 1 ? "" : "s",
              common::heartbeatText(opt).c_str(), static_cast<unsigned long long>(cfg.seed));
  for (const auto& n : notes) std::printf("# %s\n", n.c_str());
  std::printf("# replay: %s\n", replay.c_str());
  std::fflush(stdout);
  SignalGuard signals;
  // A Redis server killed on purpose closes the sockets the lab's clients
  // write to: an error to handle, not a reason to die.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe {};
  sigaction(SIGPIPE, &ignore, &old_pipe);
  SoakResult r;
  try {
    r = runSoak(cfg);
  } catch (const std::exception& e) {
    sigaction(SIGPIPE, &old_pipe, nullptr);
    std::fflush(stdout);
    std::fprintf(stderr, "mw_bench soak: %s\nmw_bench soak: FAILED (seed %llu; replay: %s)\n", e.what(),
                 static_cast<unsigned long long>(cfg.seed), replay.c_str());
    return 1;
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  printResult(r, replay);
  if (!opt.json_path.empty() && !writeResult(opt, cfg, r, replay)) return 1;
  std::fflush(stdout);
  return r.violations.empty() ? 0 : 1;
}

}  // namespace mwbench
