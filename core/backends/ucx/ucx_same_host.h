// The same-host path of UCX worlds: between members of one host every
// message goes through the pair's rings (ucx_rings.cc), and one of
// same_host_min_bytes or more is lent, not copied in: the sender puts a
// descriptor (core/same_host/cma.h) in the ring in the message's place, so
// order and goodbyes stay the ring's; the receiver copies the bytes out of
// the sender with process_vm_readv and answers with a control word (in its
// own ring to the sender when it writes one, else on the control channel);
// the send completes on that answer.
//
// Who reads whom: before the world starts each member probes, for every
// peer of its host (ucx_peer_info.h: boot, pid and network namespace),
// whether the kernel lets it read the peer and take its descriptors, and
// says so in its same-host hello; a member takes the peer's ring only when
// it may, so a refusal in one direction keeps that direction on TCP.
// Worlds on two or more paths (rails) never take this path: a cut link
// must never be hidden.
//
// Everything here runs on the engine's owner.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

#include "core/same_host/cma.h"

namespace mw {

// The control words a member sends a peer on the control channel: the
// kind in the top byte.
namespace ucxcontrol {
constexpr uint64_t kBye = 0x6d77627965ull;  // "mwbye": it left; nothing follows
constexpr uint64_t kReturned = 2ull << 56;   // | loan id: it has read the loan
constexpr uint64_t kMatched = 3ull << 56;    // | marker: a receive took that message of the ring
constexpr uint64_t kKindMask = 0xffull << 56;
}  // namespace ucxcontrol

// A send lent to a receiver of this host, owned by its transfer. It ends
// once its descriptor is in the ring and the receiver returned it or the
// sender gave it up (its world broke, the receiver left or is gone).
struct UcxLoan {
  samehost::CmaDescriptor descriptor;
  samehost::CmaTicket ticket;
  ucs_status_t status = UCS_OK;  // of the descriptor's send
  bool in_ring = false;    // the descriptor waits for room in the ring
  bool returned = false;   // the receiver read it
  bool given_up = false;   // the ticket is withdrawn: the receiver can no longer read it
  bool ended = false;
};

// Room for a descriptor where a ring receive's own buffer is smaller.
struct UcxDescriptorRoom {
  samehost::CmaDescriptor descriptor;
};

}  // namespace mw
