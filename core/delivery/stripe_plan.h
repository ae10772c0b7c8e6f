// How one message is cut over the paths to its peer that are up.
//
// A message under `min_bytes` (stripe_min_bytes), or with one path to
// take, goes whole on the path that will deliver it first. A larger one
// is cut so that every path it uses finishes at about the same time: path
// i, free to start after `ready_in` (what it already has in flight at its
// rate), gets rate_i × (T − ready_in_i) bytes, with T the time at which
// the shares add up to the message (water filling). A path whose share
// would be under `min_chunk` gets none, and its bytes go to the others. A
// share is cut into chunks of at most `max_chunk`, so that a path that
// goes down has little to send again elsewhere; chunk edges fall on
// multiples of `align` where the message allows.
//
// A path not measured yet is offered at the mean rate of those measured
// (or all alike when none is): it carries a share and so is measured.
//
// Pure: no transport, no clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace mw {

struct StripeOffer {
  size_t path = 0;
  double rate = 0;                        // bytes per second; 0: not measured
  std::chrono::microseconds ready_in{0};  // until what it has in flight is through
  std::chrono::microseconds rtt{0};       // smoothed round trip
};

struct StripeChunk {
  size_t path = 0;
  size_t offset = 0;
  size_t bytes = 0;
};

struct StripeLimits {
  size_t min_bytes = 256 * 1024;  // stripe_min_bytes
  size_t min_chunk = 64 * 1024;
  size_t max_chunk = 1024 * 1024;
  size_t align = 4096;
};

// The chunks of a message of `bytes` over `offers` (the paths that are up,
// in the order of preference), in offset order; empty when `offers` is.
// Every byte is in exactly one chunk. A message of 0 bytes is one chunk of
// 0 bytes, on the path that answers first.
std::vector<StripeChunk> planStripes(size_t bytes, const std::vector<StripeOffer>& offers,
                                     const StripeLimits& limits);

}  // namespace mw
