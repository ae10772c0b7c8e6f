// The lifecycle of a world handle (core/world.h): one enum, changed only
// through worldTransition(), which checks the state it leaves. A move the
// table does not allow is a bug of ours: World refuses it, logs it, and
// leaves the state as it was.
#pragma once

#include <cstdint>

namespace mw {

enum class WorldState : uint8_t {
  // Formed; operations run. Every world starts here.
  Ready,
  // A member failed (or the world was cancelled for a shrink that then
  // failed): operations fail with WorldBroken.
  Broken,
  // mw_world_destroy ran; only requests still held refer to it.
  Destroyed,
  // A shrink or grow made its successor, which holds what this world's
  // backend kept; the handle only waits for mw_world_destroy.
  Retired,
};

const char* worldStateName(WorldState s);

// Moves `state` to `next` when `next` may follow it and returns true; else
// leaves `state` as it is and returns false.
bool worldTransition(WorldState& state, WorldState next);

}  // namespace mw
