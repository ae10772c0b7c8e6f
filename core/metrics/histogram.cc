#include "core/metrics/histogram.h"

#include <cmath>

namespace mw::metrics {

Layout Layout::ofSeconds(const std::vector<double>& seconds) {
  Layout l;
  l.per_exposed = 1e9;
  l.exposed = seconds;
  for (double s : seconds) l.bounds.push_back(static_cast<uint64_t>(std::llround(s * 1e9)));
  return l;
}

Histogram::Histogram(const Layout& layout)
    : layout_(layout), buckets_(new std::atomic<uint64_t>[layout.bounds.size() + 1]) {
  for (size_t i = 0; i <= layout_.bounds.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

// Linear: a layout has a couple of dozen bounds, and most observations
// fall in the first few.
size_t Histogram::bucketOf(uint64_t v) const noexcept {
  const std::vector<uint64_t>& b = layout_.bounds;
  size_t i = 0;
  while (i < b.size() && v > b[i]) ++i;
  return i;
}

HistogramReading Histogram::read() const {
  HistogramReading r;
  r.cumulative.reserve(layout_.bounds.size());
  uint64_t running = 0;
  for (size_t i = 0; i < layout_.bounds.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    r.cumulative.push_back(running);
  }
  r.count = running + buckets_[layout_.bounds.size()].load(std::memory_order_relaxed);
  r.sum = sum_.load(std::memory_order_relaxed);
  return r;
}

}  // namespace mw::metrics
