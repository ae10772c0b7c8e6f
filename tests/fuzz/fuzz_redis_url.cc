// The redis_url setting: any text is parsed or rejected with
// MW_ERR_INVALID_ARGUMENT, and what parses survives a round trip through its
// redacted form.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/store/redis_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  (void)mw::redactRedisUrlString(url);
  mw::RedisUrl parsed;
  try {
    parsed = mw::parseRedisUrl(url);
  } catch (const mw::Error& e) {
    if (e.status() != mw::Status::InvalidArgument) std::abort();
    return 0;
  }
  if (parsed.db < 0 || parsed.port < 0 || parsed.port > 65535) std::abort();
  if (parsed.kind == mw::RedisUrl::Kind::Unix && (parsed.path.empty() || parsed.path[0] != '/')) std::abort();
  const mw::RedisUrl again = mw::parseRedisUrl(parsed.redacted());
  if (again.kind != parsed.kind || again.host != parsed.host || again.port != parsed.port ||
      again.path != parsed.path || again.db != parsed.db || again.user != parsed.user ||
      again.password != (parsed.password.empty() ? "" : "***") || again.master_name != parsed.master_name ||
      again.sentinels.size() != parsed.sentinels.size()) {
    std::abort();
  }
  for (size_t i = 0; i < parsed.sentinels.size(); ++i) {
    if (again.sentinels[i].text() != parsed.sentinels[i].text()) std::abort();
  }
  if (parsed.kind == mw::RedisUrl::Kind::Sentinel && (parsed.sentinels.empty() || parsed.master_name.empty())) {
    std::abort();
  }
  return 0;
}
