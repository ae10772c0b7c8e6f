// What a shrink or grow makes of a world, decided from its arguments and
// the agreed exclude list alone: who stays, each survivor's new rank (its
// order kept, renumbered from 0, as NCCL does), the new size. Every bad
// input is refused here, naming the value, before anything changes.
// Pure logic: no transport, no Redis, no locks.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mw {

enum class ResizeKind { Shrink, Grow };

const char* resizeVerb(ResizeKind k);  // "shrink", "grow"

struct ResizePlan {
  ResizeKind kind = ResizeKind::Shrink;
  int old_size = 0;
  int new_size = 0;
  int old_rank = 0;  // this member's
  int new_rank = 0;
  std::vector<int> excluded;  // old ranks, ascending (a shrink's)
  // The new rank of each old rank, -1 for one excluded.
  std::vector<int> new_rank_of;

  bool kept(int old) const { return old >= 0 && old < old_size && new_rank_of[static_cast<size_t>(old)] >= 0; }
  // The old rank of new rank `r`; -1 for a newcomer of a grow.
  int oldRankOf(int r) const;
};

// The caller's exclude list of a world of `size` in which it is `self`,
// ascending. Throws Error(InvalidArgument) naming the value: n < 0, a
// list of n > 0 at NULL, a rank outside [0, size), a rank listed twice,
// the caller's own rank, or every rank.
std::vector<int> checkedExcludeList(const int* ranks, int n, int size, int self);

// The plan once the exclude list is agreed (ascending, checked as above,
// except that it may hold `old_rank`: the caller then is excluded, and
// new_rank is -1).
ResizePlan shrinkPlan(int old_size, int old_rank, const std::vector<int>& excluded);

// Throws Error(InvalidArgument) naming `new_size` when it is not above
// `old_size` or exceeds `max_world_size`.
ResizePlan growPlan(int old_size, int old_rank, int new_size, int max_world_size);

// "[1, 3]", for messages.
std::string describeRanks(const std::vector<int>& ranks);
// "1,3": the form members compare through Redis.
std::string encodeRanks(const std::vector<int>& ranks);
// The ranks of `text` (as encodeRanks writes them: no leading zeros),
// each below `size`, ascending and distinct; nullopt for anything else, of
// any length.
std::optional<std::vector<int>> decodeRanks(const std::string& text, int size);

}  // namespace mw
