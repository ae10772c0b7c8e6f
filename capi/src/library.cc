// Library-wide entry points: version, status names, last error, backends.
#include "capi/src/boundary.h"

using namespace mw;

#define MW_STR2(x) #x
#define MW_STR(x) MW_STR2(x)

extern "C" {

MW_API const char* mw_version_string(void) noexcept {
  return MW_STR(MW_VERSION_MAJOR) "." MW_STR(MW_VERSION_MINOR) "." MW_STR(MW_VERSION_PATCH);
}

MW_API void mw_version(int* major, int* minor, int* patch) noexcept {
  if (major) *major = MW_VERSION_MAJOR;
  if (minor) *minor = MW_VERSION_MINOR;
  if (patch) *patch = MW_VERSION_PATCH;
}

MW_API const char* mw_status_string(mw_status_t s) noexcept {
  return statusName(static_cast<Status>(capi::enumValue(s)));
}

MW_API const char* mw_last_error(void) noexcept { return capi::lastError(); }

MW_API int mw_backend_available(mw_backend_t b) noexcept {
  return backendAvailable(static_cast<Backend>(capi::enumValue(b))) ? 1 : 0;
}

}  // extern "C"
