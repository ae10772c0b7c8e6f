#include "core/degraded/slow_member.h"

#include <algorithm>

namespace mw {

int judgeSlow(const std::vector<double>& capacity, double ratio, int current) {
  std::vector<double> known;
  for (double c : capacity) {
    if (c > 0) known.push_back(c);
  }
  // A world of two has no majority to tell which one is slow.
  if (known.size() < 3) return -1;
  std::sort(known.begin(), known.end());
  const size_t k = known.size();
  const double median = k % 2 ? known[k / 2] : (known[k / 2 - 1] + known[k / 2]) / 2;
  int slowest = -1;
  for (int r = 0; r < static_cast<int>(capacity.size()); ++r) {
    const double c = capacity[static_cast<size_t>(r)];
    if (c <= 0) continue;
    const double line = (r == current ? ratio + kReturnMargin : ratio) * median;
    if (c < line && (slowest < 0 || c < capacity[static_cast<size_t>(slowest)])) slowest = r;
  }
  return slowest;
}

}  // namespace mw
