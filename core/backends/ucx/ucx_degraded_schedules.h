// Collective schedules for a world with one slow member (issue 47): the
// slow member carries only what it must, and the others do the rest.
//
// Allreduce: the other members (the healthy ones) own the pieces of each
// chunk of the buffer between them. For each chunk, in one step, the slow
// member sends each owner its piece, and the healthy members send each
// owner theirs (a direct reduce-scatter); in the next step each owner
// reduces its piece over all members in rank order and sends the result
// to every other member, the slow one included (a direct allgather),
// while the next chunk's pieces travel. The slow member so sends its
// buffer once and receives the result once, overlapped; a healthy member
// sends (2p - 3) / (p - 1) of it. With K chunks this takes K + 1 steps,
// about (1 + 1/K) x max(D / (beta B), (2p - 3) D / ((p - 1) B)) against
// the bound max(2 (p - 1) D / (p B), D / (beta B)).
//
// Every member ends with the same bits: each piece is reduced once, by its
// owner, in rank order, and copied to the others.
//
// Broadcast: today's binomial tree with the slow member made a leaf, so
// that it receives the buffer once and forwards nothing. Allgather and
// reduce-scatter have none: in a ring the slow member sends as much as it
// must receive (allgather) or receives as much as it must send
// (reduce-scatter), each direction capped alike, so no schedule beats it.
#pragma once

#include <memory>

#include "core/backends/ucx/ucx_collective.h"

namespace mw {

// The degraded schedule of `op` for `rank` of `size` with `slow` the slow
// member, or null where none pays (too few members, too few bytes, or an
// operation with no degraded schedule): the caller keeps makeUcxSchedule.
// Every member must get the same answer, so it depends on the operation,
// the size and `slow` alone.
std::unique_ptr<UcxSchedule> makeDegradedUcxSchedule(const OpDesc& op, int rank, int size, int slow);

// How many chunks a degraded allreduce of `bytes` is cut into.
size_t degradedChunks(size_t bytes);

}  // namespace mw
