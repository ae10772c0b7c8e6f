#include "capi/src/boundary.h"

using namespace mw;
using namespace mw::capi;

extern "C" {

MW_API mw_status_t mw_config_new(mw_config_t** out) noexcept {
  return guarded([&] {
    requireNonNull(out, "out");
    *out = reinterpret_cast<mw_config_t*>(new Config(Config::fromEnvironment()));
    return MW_OK;
  });
}

MW_API mw_status_t mw_config_set(mw_config_t* c, const char* key, const char* value) noexcept {
  return guarded([&] {
    requireNonNull(c, "cfg");
    requireNonNull(key, "key");
    requireNonNull(value, "value");
    cfg(c)->set(key, value);
    return MW_OK;
  });
}

MW_API void mw_config_free(mw_config_t* c) noexcept { delete cfg(c); }

}  // extern "C"
