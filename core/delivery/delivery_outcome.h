// How a message handed to the reliable delivery units (send_window.h,
// receive_order.h) ended. They hold no transport, so they speak no
// transport's status codes; the transport maps these to its own.
#pragma once

#include <cstdint>

namespace mw {

enum class DeliveryOutcome : uint8_t {
  // Sending: the peer acknowledged it. Receiving: it is in the buffer.
  Delivered,
  // Receiving: it was longer than the buffer, which holds its start.
  Truncated,
  // Cancelled, or given up because the peer left or the world closed.
  GivenUp,
  // Receiving: the sender lent the message (the same-host path,
  // core/same_host/cma.h); the buffer holds its descriptor.
  Lent,
};

}  // namespace mw
