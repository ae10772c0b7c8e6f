// The lifecycle of a UCX world (ucx_world.h): one enum, changed only
// through worldTransition(), which checks the state it leaves, as
// PathState does for a path (rails/ucx_path_state.h). A transition the
// table does not allow is a bug of ours: it is refused and logged, never
// applied half-way.
#pragma once

#include <cstdint>

namespace mw {

enum class UcxWorldState : uint8_t {
  // Rendezvous: endpoints set up, same-host hellos, channels chosen.
  Connecting,
  // Started: operations run.
  Running,
  // A transfer failed so that the world cannot go on; its break is on its
  // way (deferred out of a UCX callback, or waiting for a live peer's
  // notice). New operations fail meanwhile.
  Failing,
  // Broken or being destroyed: every operation fails from now on. A
  // member's departure alone does not get here (only the operations that
  // need that member fail).
  Aborted,
  // Destroyed: goodbyes and sends to live peers get a bounded time.
  Stopping,
  // Channels and endpoints closed; only what UCX still holds calls back.
  Closed,
  // A shrink or grow formed its successor, which holds the endpoints of
  // the members that stay: this world's channels are closed and the rest
  // of its endpoints released, as in Closed, and nobody was told goodbye.
  Retired,
};

const char* worldStateName(UcxWorldState s);

// Moves `state` to `next` when `next` may follow it and returns true; else
// leaves `state` as it is and returns false.
bool worldTransition(UcxWorldState& state, UcxWorldState next);

}  // namespace mw
