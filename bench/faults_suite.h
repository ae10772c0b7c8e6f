// The faults suite: how fast a member's failure is detected, and what a
// failure in one world costs a healthy world sharing a process with it.
//
//   1. Detection latency per fault kind (kill9, sigstop, partition): a fresh
//      2-rank world per trial with checked traffic flowing between a survivor
//      process and a victim process; the time from the fault to the
//      survivor's first sign of the break (a request failing with
//      MW_ERR_WORLD_BROKEN or an MW_EVENT_WORLD_BROKEN event), on
//      CLOCK_MONOTONIC across processes. opt.trials trials per kind.
//   2. X in h = {X, Y} and f = {X, Z}, all streaming checked 64 KiB messages:
//      X's receive rate on h over 2 s before and over the 2 s starting at a
//      kill -9 of Z (X destroys f when it sees it break), 5 times.
//
// Prints tables to stdout and, with opt.json_path, writes the rows as JSON.
// Partitions need root and iproute2 (a network namespace and a veth pair);
// without them that kind is skipped, and said so.
#pragma once

#include "bench/bench_options.h"

namespace mwbench {

// Forks every process itself (and a redis-server unless opt.redis_url is
// set), so call it before this process made any multiworld context.
// Returns 0 on success; non-zero when a break went unseen for 10 s, a payload
// arrived wrong, the healthy world broke, a process failed, or the options
// are unusable.
int runFaultsSuite(const BenchOptions& opt);

}  // namespace mwbench
