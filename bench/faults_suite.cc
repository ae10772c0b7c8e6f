#include "bench/faults_suite.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/fault_processes.h"
#include "bench/faults_detect.h"
#include "bench/faults_env.h"
#include "bench/faults_healthy.h"
#include "bench/faults_report.h"
#include "bench/suite_common.h"
#include "tools/lab/ports.h"
#include "tools/lab/private_redis.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {

int runFaultsSuite(const BenchOptions& opt) {
  using namespace faults;
  if (opt.trials == 0) {
    std::fprintf(stderr, "mw_bench faults: --trials must be at least 1\n");
    return 2;
  }
  if (const std::string bad = common::heartbeatProblem(opt); !bad.empty()) {
    std::fprintf(stderr, "mw_bench faults: %s\n", bad.c_str());
    return 2;
  }
  const std::string machine = common::machineName();
  std::vector<KindResult> kinds;
  std::vector<Rep> reps;
  SignalGuard signals;
  try {
    // The run's directory (redis-server's socket and log).
    mwlab::TempDir dir("mw-bench-faults-");
    Env env;
    env.backend = common::backendOf(opt);
    env.mw_namespace = "mwbench-faults." + std::to_string(getpid());
    env.heartbeat = common::heartbeatSettings(opt);
    env.healthy_bytes = opt.healthy_bytes;

    std::unique_ptr<Partition> partition;
    std::string partition_skip;
    if (!opt.redis_url.empty()) {
      partition_skip = "needs the suite's own redis-server reachable from the namespace (--redis was given)";
    } else {
      partition = makePartition(&partition_skip);
    }
    std::unique_ptr<mwlab::PrivateRedis> redis;
    env.redis_url = opt.redis_url;
    if (env.redis_url.empty()) {
      if (partition) {
        // The victim behind the veth reaches this redis-server over TCP.
        try {
          const int port = mwlab::freeLoopbackPort();
          redis = std::make_unique<mwlab::PrivateRedis>(
              dir.path(), std::vector<std::string>{"--port", std::to_string(port), "--bind", kOuterAddr, "127.0.0.1",
                                                   "--protected-mode", "no"});
          env.tcp_url = "redis://" + std::string(kOuterAddr) + ":" + std::to_string(port);
        } catch (const std::exception& e) {
          partition_skip = std::string("redis-server would not listen on ") + kOuterAddr + ": " + e.what();
          partition.reset();
        }
      }
      if (!redis) redis = std::make_unique<mwlab::PrivateRedis>(dir.path(), std::vector<std::string>{});
      env.redis_url = redis->url();
    }
    env.partition = partition.get();

    printDetectHeader(opt, machine, partition.get());
    for (Fault kind : {Fault::Kill9, Fault::Sigstop, Fault::Partition}) {
      if (kind == Fault::Partition && !partition) {
        KindResult r;
        r.fault = faultName(kind);
        r.skipped = partition_skip;
        kinds.push_back(r);
      } else {
        kinds.push_back(runKind(kind, env, opt.trials));
      }
      printKind(kinds.back());
    }

    printHealthyHeader(env.healthy_bytes);
    for (int rep = 0; rep < kHealthyReps; ++rep) {
      reps.push_back(runHealthyRep(rep, env));
      printRep(rep + 1, reps.back());
    }
    printHealthySummary(reps, env.healthy_bytes);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mw_bench faults: %s\nmw_bench faults: FAILED\n", e.what());
    return 1;
  }
  if (!opt.json_path.empty() && !writeJson(opt.json_path, opt, machine, kinds, reps)) return 1;
  return 0;
}

}  // namespace mwbench
