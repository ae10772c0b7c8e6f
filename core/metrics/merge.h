// Many members' snapshots as one (`multiworld metrics`): each member's
// series gain labels naming it (member, host, pid, first), and families of
// one name come together under one HELP and TYPE, as the text format
// requires. A member's family that disagrees with the one already merged
// (another kind, other labels or bounds: a member of another version) is
// left out and counted.
#pragma once

#include <string>
#include <vector>

#include "core/metrics/snapshot.h"

namespace mw::metrics {

class Merge {
 public:
  // `names` and `values` label every series of `s` (same length).
  void add(const Snapshot& s, const std::vector<std::string>& names, const std::vector<std::string>& values);

  // Families left out so far.
  size_t conflicts() const { return conflicts_; }
  const Snapshot& result() const { return merged_; }

 private:
  Snapshot merged_;
  size_t conflicts_ = 0;
};

}  // namespace mw::metrics
