// The multiworld command-line tool: demo, status, bench.
#include <multiworld/multiworld.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "tools/multiworld/bench_runner.h"
#include "tools/multiworld/demo.h"
#include "tools/multiworld/demo_stage.h"
#include "tools/multiworld/metrics.h"
#include "tools/multiworld/status.h"

namespace {

constexpr const char* kUsage = R"(usage: multiworld <command> [options]

commands:
  demo     the serving-pipeline demo: a leader, stage 1, N stage-2 replicas and
           stage 3, each pair in its own two-rank UCX world; kills a replica and
           scales out while traffic flows, and checks every result
             --replicas N          stage-2 replicas at start (default 2)
             --duration S          seconds of traffic (default 30)
             --kill-after S        kill -9 one replica after S seconds
                                   (default: a third of the duration; -1: never)
             --scale-out-after S   start a new replica after S seconds
                                   (default: halfway from the kill to the end; -1: never)
             --redis URL           Redis to use (default: $MW_REDIS_URL, else a private
                                   redis-server started on a unix socket and stopped at the end)
  status   what Redis holds: live members and worlds, broken and stale ones marked
             --redis URL           (default: $MW_REDIS_URL, else redis://127.0.0.1:6379)
             --namespace NS        key prefix (default mw)
             --watch               refresh every second
  metrics  every live member's metrics (each context publishes them to Redis every
           metrics_publish_ms), labelled member, host and pid, as Prometheus text
             --listen ADDR         serve them at http://ADDR/metrics (host:port) until
                                   SIGINT or SIGTERM
             --once                print them once instead
             --redis URL           (default: $MW_REDIS_URL, else redis://127.0.0.1:6379)
             --namespace NS        key prefix (default mw)
  bench    the benchmarks, ours against raw UCX, Gloo or NCCL in the same run:
           multiworld bench <suite> [--backend ucx|gloo] [--json FILE] ...;
           multiworld bench --help
  version  print the library version

exit codes: 0 success; 1 the command ran and failed (demo: lost or wrong results);
            2 bad usage or an error before the command could run.
)";

int usageError(const std::string& msg) {
  std::fprintf(stderr, "multiworld: %s\n(see multiworld --help)\n", msg.c_str());
  return 2;
}

bool parseNumber(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0';
}

std::string selfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "multiworld";
}

int demo(const std::vector<std::string>& args) {
  mwcli::DemoOptions opt;
  opt.self_exe = selfExe();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= args.size()) return usageError("demo: " + a + " needs a value");
    const char* v = args[++i].c_str();
    double num = 0;
    if (a == "--redis") {
      opt.redis_url = v;
    } else if (!parseNumber(v, &num)) {
      return usageError("demo: " + a + " takes a number, not '" + v + "'");
    } else if (a == "--replicas" && num >= 1 && num <= 64) {
      opt.replicas = static_cast<int>(num);
    } else if (a == "--duration" && num > 0) {
      opt.duration_s = num;
    } else if (a == "--kill-after" && (num >= 0 || num == -1)) {
      opt.kill_after_s = num;
    } else if (a == "--scale-out-after" && (num >= 0 || num == -1)) {
      opt.scale_out_after_s = num;
    } else {
      return usageError("demo: unknown option or bad value: " + a + " " + v);
    }
  }
  if (opt.kill_after_s == -2) opt.kill_after_s = opt.duration_s / 3;
  if (opt.scale_out_after_s == -2) {
    double from = opt.kill_after_s >= 0 ? opt.kill_after_s : 0;
    opt.scale_out_after_s = from + (opt.duration_s - from) / 2;
  }
  if (opt.kill_after_s >= 0 && opt.replicas < 2) return usageError("demo: killing a replica needs --replicas >= 2");
  return mwcli::runDemo(opt);
}

int demoStage(const std::vector<std::string>& args) {
  mwcli::StageArgs s;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--role") s.role = args[i + 1];
    if (args[i] == "--replica") s.replica = std::atoi(args[i + 1].c_str());
    if (args[i] == "--replicas") {
      std::string list = args[i + 1];
      for (size_t p = 0; p < list.size();) {
        size_t q = list.find(',', p);
        s.replicas.push_back(std::atoi(list.substr(p, q - p).c_str()));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    }
  }
  return mwcli::runDemoStage(s);
}

int status(const std::vector<std::string>& args) {
  mwcli::StatusOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (args[i] == "--watch") {
      opt.watch = true;
    } else if ((args[i] == "--redis" || args[i] == "--namespace") && i + 1 < args.size()) {
      (args[i] == "--redis" ? opt.redis_url : opt.ns) = args[i + 1];
      ++i;
    } else {
      return usageError("status: unknown option " + args[i]);
    }
  }
  return mwcli::runStatus(opt);
}

int metrics(const std::vector<std::string>& args) {
  mwcli::MetricsOptions opt;
  bool once = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--once") {
      once = true;
    } else if ((a == "--listen" || a == "--redis" || a == "--namespace") && i + 1 < args.size()) {
      (a == "--listen" ? opt.listen : a == "--redis" ? opt.redis_url : opt.ns) = args[++i];
    } else {
      return usageError("metrics: unknown option or missing value: " + a);
    }
  }
  if (once == !opt.listen.empty()) return usageError("metrics: give exactly one of --listen ADDR and --once");
  return mwcli::runMetrics(opt);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usageError("no command given");
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (cmd == "version" || cmd == "--version") {
      std::printf("multiworld %s\n", mw_version_string());
      return 0;
    }
    if (cmd == "demo") return demo(args);
    if (cmd == "__demo-stage") return demoStage(args);
    if (cmd == "status") return status(args);
    if (cmd == "metrics") return metrics(args);
    if (cmd == "bench") return mwcli::runBench(selfExe(), argc - 2, argv + 2);
    return usageError("unknown command '" + cmd + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multiworld %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
