#include "tools/lab/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace mwlab {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Less a hair, so that a rank that is a whole number in exact arithmetic
  // (99.9% of 1000) is not pushed to the next one by rounding.
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()) - 1e-9));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace mwlab
