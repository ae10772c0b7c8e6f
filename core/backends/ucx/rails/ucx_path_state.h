// The state of one path of a UCX failover world (ucx_failover.h): one enum,
// changed only through pathTransition(), which checks the state it leaves,
// as UCX's uct_tcp_cm_change_conn_state does for its TCP connections. A
// transition the table does not allow is a bug of ours: it is refused and
// logged, never applied half-way.
#pragma once

#include <cstdint>

namespace mw {

enum class PathState : uint8_t {
  // Down: a TCP connection to the peer's probe port is being tried
  // (UcxReachProbe). Every path starts here.
  Seeking,
  // Down: that connection worked; a UCX probe on a new endpoint waits for
  // its answer.
  Answering,
  // Carries traffic, or may.
  Up,
  // Up, but another path over the same local address failed: a probe on
  // its endpoint waits for an answer; unanswered for path_timeout_ms the
  // path goes down.
  InDoubt,
};

const char* pathStateName(PathState s);

inline bool pathIsDown(PathState s) { return s == PathState::Seeking || s == PathState::Answering; }

// Moves `state` to `next` when `next` may follow it and returns true; else
// leaves `state` as it is and returns false.
bool pathTransition(PathState& state, PathState next);

}  // namespace mw
