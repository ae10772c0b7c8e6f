#include "core/break_cause.h"

namespace mw {

const char* breakCauseName(BreakCause c) noexcept {
  switch (c) {
    case BreakCause::PeerExit: return "peer_exit";
    case BreakCause::PeerLeft: return "peer_left";
    case BreakCause::Heartbeat: return "heartbeat";
    case BreakCause::Link: return "link";
    case BreakCause::OpTimeout: return "op_timeout";
    case BreakCause::Transport: return "transport";
    case BreakCause::Marker: return "marker";
    case BreakCause::Cancel: return "cancel";
    case BreakCause::Backend: return "backend";
  }
  return "unknown";
}

}  // namespace mw
