// The statistics every report of the lab uses, so that a p99 means the
// same thing in the benchmarks, the tests and the `multiworld` tool.
#pragma once

#include <vector>

namespace mwlab {

// Nearest-rank percentile, p in [0, 100]: the ceil(p/100 * n)-th smallest
// sample (with fewer than 100 samples, p99 is the largest). 0 for none.
double percentile(std::vector<double> v, double p);
// The middle sample, or the mean of the two middle ones. 0 for none.
double median(std::vector<double> v);

}  // namespace mwlab
