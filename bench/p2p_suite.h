// The point-to-point suite: OURS (multiworld over Gloo) against RAW Gloo on
// the same TCP transport, 2 processes on this machine, sizes from
// opt.min_bytes to opt.max_bytes by powers of 4. Prints a table to stdout
// and, with opt.json_path, writes the rows as JSON.
#pragma once

#include "bench/bench_options.h"

namespace mwbench {

// Forks the two ranks itself (and a redis-server when no Redis is given), so
// call it before this process made any multiworld context or Gloo object.
// Returns 0 on success, non-zero when a rank failed, a payload arrived wrong
// or the options are unusable.
int runP2pSuite(const BenchOptions& opt);

}  // namespace mwbench
