// A distribution updated on the hot path: observations are integers (a
// duration in nanoseconds), counted in fixed buckets; one observation is
// two relaxed atomic adds (its bucket and the sum), no lock, no
// allocation. A snapshot reads the buckets one by one, so under concurrent
// updates it may see an observation's bucket before its sum; every count
// is there by the next snapshot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mw::metrics {

// The upper bounds of a histogram's buckets (Prometheus' `le`, inclusive),
// increasing: in the observations' unit, and as exposed, where a value is
// the observed one divided by `per_exposed` (1e9: nanoseconds observed,
// seconds exposed).
struct Layout {
  std::vector<uint64_t> bounds;
  std::vector<double> exposed;
  double per_exposed = 1;

  // Bounds given in seconds, observations in nanoseconds.
  static Layout ofSeconds(const std::vector<double>& seconds);
  double expose(uint64_t v) const { return static_cast<double>(v) / per_exposed; }
};

struct HistogramReading {
  uint64_t count = 0;                 // every observation
  uint64_t sum = 0;                   // in the observations' unit
  std::vector<uint64_t> cumulative;   // per bound: observations <= it
};

class Histogram {
 public:
  // `layout` outlives the histogram.
  explicit Histogram(const Layout& layout);

  void observe(uint64_t v) noexcept {
    buckets_[bucketOf(v)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }
  HistogramReading read() const;
  const Layout& layout() const { return layout_; }

 private:
  size_t bucketOf(uint64_t v) const noexcept;

  const Layout& layout_;
  // One per bound, then the overflow (+Inf) bucket; not cumulative.
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  alignas(64) std::atomic<uint64_t> sum_{0};
};

}  // namespace mw::metrics
