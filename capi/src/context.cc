#include "capi/src/boundary.h"

using namespace mw;
using namespace mw::capi;

extern "C" {

MW_API mw_status_t mw_context_new(const mw_config_t* c, mw_context_t** out) noexcept {
  return guarded([&] {
    requireNonNull(out, "out");
    *out = nullptr;
    Config config = c ? *cfg(c) : Config::fromEnvironment();
    *out = reinterpret_cast<mw_context_t*>(new Context(config));
    return MW_OK;
  });
}

MW_API void mw_context_free(mw_context_t* c) noexcept {
  try {
    delete ctx(c);
  } catch (...) {
    // Destructors do not throw; nothing may escape into C regardless.
  }
}

MW_API mw_status_t mw_world_destroy(mw_world_t* w) noexcept {
  return guarded([&] {
    if (w) world(w)->owner().destroyWorld(world(w));
    return MW_OK;
  });
}

MW_API mw_world_state_t mw_world_state(const mw_world_t* w) noexcept {
  if (!w) return MW_WORLD_BROKEN;
  switch (world(w)->state()) {
    case WorldState::Ready:
      return MW_WORLD_READY;
    case WorldState::Retired:
      return MW_WORLD_RETIRED;
    default:
      return MW_WORLD_BROKEN;
  }
}

MW_API int mw_world_rank(const mw_world_t* w) noexcept { return w ? world(w)->rank() : -1; }
MW_API int mw_world_size(const mw_world_t* w) noexcept { return w ? world(w)->size() : -1; }
MW_API const char* mw_world_name(const mw_world_t* w) noexcept { return w ? world(w)->name().c_str() : ""; }
MW_API uint64_t mw_world_epoch(const mw_world_t* w) noexcept { return w ? world(w)->epoch() : 0; }

}  // extern "C"
