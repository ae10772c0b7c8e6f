#include "core/heap_trim.h"

#include <atomic>
#include <chrono>
#include <cstdint>

// After a standard header: <features.h> defines __GLIBC__.
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace mw {

namespace {

constexpr std::chrono::seconds kTrimEvery{1};
std::atomic<int64_t> last_trim_ns{0};

}  // namespace

bool trimHeap() {
  const int64_t at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
  int64_t last = last_trim_ns.load();
  if (last != 0 && at - last < std::chrono::nanoseconds(kTrimEvery).count()) return false;
  if (!last_trim_ns.compare_exchange_strong(last, at)) return false;  // another thread trims
#ifdef __GLIBC__
  ::malloc_trim(0);
  return true;
#else
  return false;
#endif
}

}  // namespace mw
