// Metrics snapshots as members publish them to Redis (core/metrics/wire.h),
// read by `multiworld metrics`: whatever parses writes back to text that
// parses to the same, and renders as Prometheus text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/metrics/exposition.h"
#include "core/metrics/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mw::metrics::Snapshot s;
  try {
    s = mw::metrics::decode(text);
  } catch (const mw::Error& e) {
    if (e.status() != mw::Status::Store) std::abort();
    return 0;
  }
  const std::string again = mw::metrics::encode(s);
  if (mw::metrics::encode(mw::metrics::decode(again)) != again) std::abort();
  (void)mw::metrics::exposition(s);
  return 0;
}
