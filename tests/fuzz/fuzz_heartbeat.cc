// Heartbeat values: what parses is exactly what the library writes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/store/redis_values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto hb = mw::parseHeartbeat(text);
  if (!hb) return 0;
  if (hb->host.empty() || hb->host.size() > 255 || hb->pid < 0 || hb->unix_ms < 0) std::abort();
  if (mw::formatHeartbeat(*hb) != text) std::abort();
  return 0;
}
