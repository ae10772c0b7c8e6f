// A monotonic count updated on the hot path: one relaxed atomic add, no
// lock, no allocation. Readers (a snapshot) see some recent value; counts
// are never lost.
#pragma once

#include <atomic>
#include <cstdint>

namespace mw::metrics {

// A cache line of its own, so that counters that different threads bump
// (bytes sent by the progress thread, received by a waiter) do not share one.
class alignas(64) Counter {
 public:
  void add(uint64_t n = 1) noexcept { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const noexcept { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace mw::metrics
