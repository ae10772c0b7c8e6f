// Why a world broke, as a fixed set: each break counts once under its cause
// (mw_world_breaks_total{cause}), and what "detection" measures depends on
// it (mw_break_detection_seconds). README's "Metrics" documents each.
#pragma once

#include <cstddef>

namespace mw {

enum class BreakCause {
  PeerExit,   // the peer's process is gone (its pidfd, or the kernel's exiting flag)
  PeerLeft,   // the peer destroyed its world (its goodbye)
  Heartbeat,  // no new heartbeat from the peer for heartbeat_timeout_ms
  Link,       // every data path to the peer silent for heartbeat_timeout_ms
  OpTimeout,  // an operation ran past op_timeout_ms
  Transport,  // the transport failed toward the peer, its process not known gone
  Marker,     // another member reported the break (notice or marker in Redis)
  Cancel,     // mw_request_cancel of an operation already under way
  Backend,    // a backend failure blamed on no peer (NCCL's async error, say)
};
constexpr size_t kBreakCauses = 9;

// The label value: "peer_exit", "peer_left", "heartbeat", "link",
// "op_timeout", "transport", "marker", "cancel", "backend".
const char* breakCauseName(BreakCause c) noexcept;

}  // namespace mw
