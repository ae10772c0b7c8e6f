// A shrink's or grow's claims over Redis (core/resize/resize_scripts.h):
// the members agree there on the new epoch and, for a shrink, on whom it
// excludes, with no protocol of the caller's own. What follows a claim is
// a create's: every claim in (Rendezvous::awaitClaims), the transport up,
// the commit (Rendezvous::commit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/resize/resize_plan.h"
#include "core/store/rendezvous.h"

namespace mw {

struct ResizeClaim {
  uint64_t epoch = 0;  // the attempt's
  ResizePlan plan;
};

class ResizeRendezvous {
 public:
  explicit ResizeRendezvous(Rendezvous& rendezvous) : rv_(rendezvous) {}

  // This survivor's claim in a shrink of `old_epoch`, whose size is
  // `old_size` and in which it is `old_rank`. `proposal`: the caller's
  // exclude list, nullopt for the members the break named (the old
  // epoch's blamed ranks, and `seen_blamed`, those this member saw).
  // `broken_by`: with MW_SHRINK_DEFAULT on a broken world, the rank its
  // break named (-1: none), which the list must exclude; nullopt otherwise.
  // Throws Error: InvalidArgument (a list that differs from the agreed
  // one, naming both; a break that named no member; a list of every
  // rank; a DEFAULT shrink of a world broken by a member the list keeps),
  // WorldBroken (this member is excluded: the list says so), Store (the
  // world moved on to another epoch since, or a record that is not the
  // library's), AlreadyExists.
  ResizeClaim claimShrink(const std::string& world, uint64_t old_epoch, int old_size, int old_rank,
                          const std::optional<std::vector<int>>& proposal, const std::vector<int>& seen_blamed,
                          std::optional<int> broken_by, Deadline deadline);

  // An existing member's claim in a grow of `old_epoch` to `new_size`
  // members; it keeps `rank`. Throws Error: InvalidArgument (another size
  // forms already), Store (the world moved on, or is broken in Redis),
  // AlreadyExists.
  ResizeClaim claimGrow(const std::string& world, uint64_t old_epoch, int old_size, int rank, int new_size,
                        int max_world_size, Deadline deadline);

 private:
  Rendezvous& rv_;
};

}  // namespace mw
