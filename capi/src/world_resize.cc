// mw_world_shrink and mw_world_grow: the caller's arguments handed to the
// context that owns the world.
#include "capi/src/boundary.h"

using namespace mw;
using namespace mw::capi;

extern "C" {

MW_API mw_status_t mw_world_shrink(mw_world_t* w, const int* exclude, int n, int flags, int timeout_ms,
                                   mw_world_t** out) noexcept {
  return guarded([&] {
    requireNonNull(w, "world");
    requireNonNull(out, "out");
    *out = nullptr;
    *out = handle(world(w)->owner().shrinkWorld(world(w), exclude, n, flags, timeout_ms));
    return MW_OK;
  });
}

MW_API mw_status_t mw_world_grow(mw_world_t* w, int new_size, int timeout_ms, mw_world_t** out) noexcept {
  return guarded([&] {
    requireNonNull(w, "world");
    requireNonNull(out, "out");
    *out = nullptr;
    *out = handle(world(w)->owner().growWorld(world(w), new_size, timeout_ms));
    return MW_OK;
  });
}

}  // extern "C"
