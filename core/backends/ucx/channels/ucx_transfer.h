// One send or receive of an operation of a UCX world, as the channel of
// its peer (ucx_channel.h) carries it. The operation fills in what to
// move; the channel keeps its own state in `via` while the transfer is in
// flight, and hands the transfer back to its owner once it ended.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>

#include "core/metrics/world_metrics.h"

namespace mw {

class SendPacing;
class UcxEngine;
struct UcxLoan;
struct UcxDescriptorRoom;
struct UcxTransfer;

// What posted a transfer (an operation, ucx_op.h).
class UcxTransferOwner {
 public:
  // `t` ended: UCS_OK, UCS_ERR_MESSAGE_TRUNCATED (a receive; `length` is
  // the sender's size), UCS_ERR_CANCELED (taken back or given up), or
  // another error of UCX. Once per post, possibly inside the call that
  // posted it. The owner may post again, or be deleted, before this
  // returns: a channel touches neither `t` nor its owner afterwards.
  virtual void transferEnded(UcxTransfer& t, ucs_status_t status, size_t length) = 0;

 protected:
  ~UcxTransferOwner() = default;
};

// What each channel keeps of a transfer in flight.
struct UcxTagState {
  UcxEngine* engine = nullptr;
  void* request = nullptr;  // UCX's
  bool waiting = false;     // a send UCX queued: the engine polls for it
  std::shared_ptr<SendPacing> marker;  // the send is its peer's marker (ucx_send_pacing.h)
};
struct UcxRailState {
  uint64_t recv = 0;  // a receive waiting in the world's UcxFailover
};
struct UcxRingState {
  uint64_t recv = 0;  // a receive waiting in the pair's rings
  std::shared_ptr<UcxLoan> loan;            // a send lent to its receiver
  std::shared_ptr<UcxDescriptorRoom> room;  // a receive smaller than a descriptor
  std::shared_ptr<SendPacing> marker;       // a lent send that is its peer's marker
};

struct UcxTransfer {
  UcxTransferOwner* owner = nullptr;
  int peer = -1;
  bool recv = false;
  size_t bytes = 0;        // posted size
  void* buffer = nullptr;  // the caller's: where the data comes from or goes
  // The owner's bookkeeping.
  bool in_flight = false;
  metrics::DataPath path = metrics::DataPath::Tag;  // what carried it (mw_bytes_*_total): its channel's say
  size_t length = 0;  // a receive: the sender's size
  ucs_status_t status = UCS_OK;
  // The channel's, while in flight.
  std::variant<std::monostate, UcxTagState, UcxRailState, UcxRingState> via;
};

}  // namespace mw
