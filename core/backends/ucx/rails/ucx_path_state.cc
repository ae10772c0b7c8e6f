#include "core/backends/ucx/rails/ucx_path_state.h"

namespace mw {
namespace {

constexpr unsigned bit(PathState s) { return 1u << static_cast<unsigned>(s); }

// The states each state may be entered from.
constexpr unsigned kEnteredFrom[] = {
    // Seeking: a path that fails, or a probe that starts over.
    bit(PathState::Answering) | bit(PathState::Up) | bit(PathState::InDoubt),
    // Answering: the TCP probe connected.
    bit(PathState::Seeking),
    // Up: a probe answered, on a new endpoint or on the one in doubt.
    bit(PathState::Answering) | bit(PathState::InDoubt),
    // InDoubt: only a path that is up.
    bit(PathState::Up),
};

}  // namespace

const char* pathStateName(PathState s) {
  switch (s) {
    case PathState::Seeking:
      return "seeking";
    case PathState::Answering:
      return "answering";
    case PathState::Up:
      return "up";
    case PathState::InDoubt:
      return "in doubt";
  }
  return "unknown";
}

bool pathTransition(PathState& state, PathState next) {
  if (!(kEnteredFrom[static_cast<unsigned>(next)] & bit(state))) return false;
  state = next;
  return true;
}

}  // namespace mw
