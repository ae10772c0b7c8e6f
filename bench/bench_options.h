// What a benchmark run was asked for; filled by mw_bench's argument parser
// (bench_main.cc) or, later, by `multiworld bench`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mwbench {

struct BenchOptions {
  std::string json_path;            // --json FILE: also write the results there
  std::size_t iters = 0;            // --iters N: fixed iterations per round; 0 = calibrate
  std::size_t rounds = 5;           // --rounds R: alternating ours/raw rounds, median taken
  std::size_t min_bytes = 64;       // --min-bytes B
  std::size_t max_bytes = 64u << 20;  // --max-bytes B; sizes go min, 4*min, ... <= max
  std::size_t trials = 20;          // --trials N (faults: per fault kind; create: creates per case)
  std::size_t healthy_bytes = 64u << 10;  // --healthy-bytes B (faults: the healthy world's messages)
  std::size_t max_senders = 32;     // --max-senders K (fanin): largest sender count run
  int device = 0;                   // --device N (nccl): the CUDA device
  bool ucx = true;                  // --backend ucx|gloo: OURS' host backend (all but nccl)
  bool backend_given = false;       // resize: without --backend it runs both
  int spin_us = -1;                 // --spin-us N: OURS' spin_us (p2p, poll, fanin, allreduce); -1 = default
  // --metrics on|off|compare (p2p, allreduce): OURS with its metrics on
  // (the default) or off; compare: OURS against itself with metrics off,
  // in place of the raw baselines (what counting costs).
  std::string metrics = "on";
  // --heartbeat-interval-ms N, --heartbeat-timeout-ms N (faults, falsebreaks):
  // the contexts' heartbeat settings; 0 = the library's default.
  int heartbeat_interval_ms = 0;
  int heartbeat_timeout_ms = 0;
  double seconds = 0;               // --seconds S (control): per measurement; 0 = the suite's default
  std::vector<std::string> parts;   // --parts LIST (failover): of p2p, allreduce, overhead; empty = all
  // soak: --minutes M (may be fractional), --seed S, --processes N,
  // --rails 1|2, --faults LIST (fault kinds; empty = all that can run here).
  double minutes = 10;
  uint64_t seed = 0;
  bool seed_given = false;
  int processes = 6;
  int rails = 2;
  std::vector<std::string> faults;
  std::vector<int> members;         // --members LIST (resize): of its world sizes; empty = all
  std::string redis_url;            // --redis URL; p2p: else MW_REDIS_URL; else a private redis-server
  std::string command;              // the command line, for the report header
};

}  // namespace mwbench
