// mw_bench soak (also `multiworld bench soak`): minutes to hours of random
// faults under checked traffic (bench/soak/soak_driver.h), judged against
// the invariants of the README's "Chaos soak" section.
#pragma once

#include "bench/bench_options.h"

namespace mwbench {

// Forks every process itself, so call it before this process made any
// multiworld context. Returns 0 when the run found no violation, 1 when it
// found one (or could not run), 2 for unusable options.
int runSoakSuite(const BenchOptions& opt);

}  // namespace mwbench
