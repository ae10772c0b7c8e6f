// The falsebreaks suite: whether healthy worlds survive a loaded machine at
// the heartbeat settings given.
//
// Each round starts 4 member processes with a 2-rank world for every pair
// (6 worlds), all streaming checked 4 KiB messages both ways, then applies
// one load and watches every world through it and a grace period after:
//   cpu          one busy-loop process per online CPU, at the suite's own
//                priority, for 10 s;
//   redis_pause  the private redis-server SIGSTOPped for 3 s, then SIGCONT.
// A world counts as broken when either member saw it break (a request
// failing with MW_ERR_WORLD_BROKEN or an MW_EVENT_WORLD_BROKEN event); every
// break is a false one, as no member failed. opt.trials rounds per load.
#pragma once

#include "bench/bench_options.h"

namespace mwbench {

// Forks every process itself and a private redis-server, so call it before
// this process made any multiworld context. Returns 0 when it ran (whatever
// it counted), 1 when a process failed or a payload arrived wrong, 2 for
// unusable options.
int runFalseBreaksSuite(const BenchOptions& opt);

}  // namespace mwbench
