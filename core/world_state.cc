#include "core/world_state.h"

namespace mw {
namespace {

constexpr unsigned bit(WorldState s) { return 1u << static_cast<unsigned>(s); }

// The states each state may be entered from.
constexpr unsigned kEnteredFrom[] = {
    // Ready: only the start.
    0,
    // Broken: only a ready world.
    bit(WorldState::Ready),
    // Destroyed: any world not destroyed yet.
    bit(WorldState::Ready) | bit(WorldState::Broken) | bit(WorldState::Retired),
    // Retired: a ready world shrunk or grown, or a broken one shrunk.
    bit(WorldState::Ready) | bit(WorldState::Broken),
};

}  // namespace

const char* worldStateName(WorldState s) {
  switch (s) {
    case WorldState::Ready:
      return "ready";
    case WorldState::Broken:
      return "broken";
    case WorldState::Destroyed:
      return "destroyed";
    case WorldState::Retired:
      return "retired";
  }
  return "unknown";
}

bool worldTransition(WorldState& state, WorldState next) {
  if (!(kEnteredFrom[static_cast<unsigned>(next)] & bit(state))) return false;
  state = next;
  return true;
}

}  // namespace mw
