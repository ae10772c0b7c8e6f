#include "core/backends/ucx/channels/control_words.h"

#include "core/backends/ucx/channels/ucx_channel.h"

namespace mw::ucxcontrol {

bool take(UcxChannelHost& host, int peer, uint64_t word, const WordHook& own) {
  // Also after an abort: a destroyed world's loans may still come back.
  if (own && own(word)) return true;
  if (host.aborted()) return false;
  if ((word & kKindMask) == kBroken) {
    const uint64_t blamed = word & ~kKindMask;
    host.brokenAt(peer, blamed == 0 || blamed > 0xffff ? -1 : static_cast<int>(blamed) - 1);
    return false;
  }
  if ((word & kKindMask) == kExcluded) {
    host.excludedBy(peer, word & ~kKindMask);
    return false;
  }
  if (word != kBye) {
    host.transportFailed(peer, "rank " + std::to_string(peer) + " sent an unknown control word " + std::to_string(word));
    return false;
  }
  host.goodbyeFrom(peer);
  return false;
}

}  // namespace mw::ucxcontrol
