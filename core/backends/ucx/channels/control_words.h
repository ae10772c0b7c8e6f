// The control words a member sends a peer beside its data, in order with
// it: the kind in the top byte.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mw {

class UcxChannelHost;

namespace ucxcontrol {
constexpr uint64_t kBye = 0x6d77627965ull;  // "mwbye": it left; nothing follows
constexpr uint64_t kReturned = 2ull << 56;   // | loan id: it has read the loan (ring_channel.h)
constexpr uint64_t kMatched = 3ull << 56;    // | marker: a receive took that message of the ring
// | (blamed rank + 1): the world broke at the sender, which keeps its
// endpoint for a shrink instead of closing it (ucx_world.h)
constexpr uint64_t kBroken = 4ull << 56;
// | the successor's epoch: a shrink into that epoch excluded the receiver;
// the sender closes its endpoint once the word left (ucx_world.h)
constexpr uint64_t kExcluded = 5ull << 56;
constexpr uint64_t kKindMask = 0xffull << 56;

// Takes a word of the path's own (a loan's return, a marker's match);
// false for any other word.
using WordHook = std::function<bool(uint64_t word)>;

// What a control word from `peer` means to its channel: `own` takes the
// path's own words; a goodbye, a break or an exclusion goes to the host, and anything
// else, while the world runs, fails it. True when more words are awaited.
bool take(UcxChannelHost& host, int peer, uint64_t word, const WordHook& own);
}  // namespace ucxcontrol

}  // namespace mw
