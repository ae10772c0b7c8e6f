#include "core/backends/ucx/ucx_world_state.h"

namespace mw {
namespace {

constexpr unsigned bit(UcxWorldState s) { return 1u << static_cast<unsigned>(s); }

// The states each state may be entered from.
constexpr unsigned kEnteredFrom[] = {
    // Connecting: only the start.
    0,
    // Running: the world started.
    bit(UcxWorldState::Connecting),
    // Failing: only a running world.
    bit(UcxWorldState::Running),
    // Aborted: a break or a destroy, failing or not.
    bit(UcxWorldState::Running) | bit(UcxWorldState::Failing),
    // Stopping: a destroy, after its abort.
    bit(UcxWorldState::Aborted),
    // Closed: a stopped world, or one that never started.
    bit(UcxWorldState::Stopping) | bit(UcxWorldState::Connecting),
    // Retired: a world that started and was not destroyed, broken or not.
    bit(UcxWorldState::Running) | bit(UcxWorldState::Failing) | bit(UcxWorldState::Aborted),
};

}  // namespace

const char* worldStateName(UcxWorldState s) {
  switch (s) {
    case UcxWorldState::Connecting:
      return "connecting";
    case UcxWorldState::Running:
      return "running";
    case UcxWorldState::Failing:
      return "failing";
    case UcxWorldState::Aborted:
      return "aborted";
    case UcxWorldState::Stopping:
      return "stopping";
    case UcxWorldState::Closed:
      return "closed";
    case UcxWorldState::Retired:
      return "retired";
  }
  return "unknown";
}

bool worldTransition(UcxWorldState& state, UcxWorldState next) {
  if (!(kEnteredFrom[static_cast<unsigned>(next)] & bit(state))) return false;
  state = next;
  return true;
}

}  // namespace mw
