// How a UCX tag names a message. One worker serves every world of a
// context, and tag matching spans the worker, so the tag carries the world
// (the id the *receiving* context gave it), the sender's rank and a channel:
//
//   63..40  world id at the receiver (24 bits, never 0)
//   39..24  sender rank (16 bits: UCX worlds have at most 65536 members)
//   23..0   channel: 0 point-to-point, 1 control, 2 same-host hello, else
//           a collective:
//           0x800000 | sequence (15 bits) << 8 | shape (8 bits)
//
// Messages of one channel between a pair match in send order (UCX keeps
// tag-matching order per sender), which is what p2p FIFO order and the
// steps of a collective rely on. The shape byte keeps members that disagree
// on a collective's count, type, operation or root from matching each
// other, as on Gloo.
#pragma once

#include <cstdint>

namespace mw::ucxtag {

constexpr uint32_t kWorldIdBits = 24;
constexpr uint32_t kMaxWorldId = (1u << kWorldIdBits) - 1;
constexpr int kMaxRanks = 1 << 16;

constexpr uint64_t kP2p = 0;
constexpr uint64_t kControl = 1;
constexpr uint64_t kSameHost = 2;  // the same-host hello, before the world starts
constexpr uint64_t kCollectiveBit = 0x800000;
constexpr uint64_t kSequenceMask = 0x7fff;

constexpr uint64_t kWorldMask = uint64_t{kMaxWorldId} << 40;
constexpr uint64_t kRankMask = uint64_t{0xffff} << 24;
constexpr uint64_t kChannelMask = 0xffffff;
constexpr uint64_t kExact = ~uint64_t{0};
// Any sender, one world and channel.
constexpr uint64_t kAnySender = kExact & ~kRankMask;

constexpr uint64_t make(uint32_t world_id, int sender, uint64_t channel) {
  return (uint64_t{world_id} << 40) | (static_cast<uint64_t>(sender) & 0xffff) << 24 | (channel & kChannelMask);
}

constexpr uint64_t collective(uint64_t sequence, uint8_t shape) {
  return kCollectiveBit | (sequence & kSequenceMask) << 8 | shape;
}

constexpr int sender(uint64_t tag) { return static_cast<int>((tag >> 24) & 0xffff); }

}  // namespace mw::ucxtag
