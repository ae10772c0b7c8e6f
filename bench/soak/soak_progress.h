// Whether the soak's worlds move: every member's every world formed and
// delivering again since a moment the driver marked (after a fault, at the
// start), with no churn, cancel, shrink or grow still asked of it; and
// which do not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/soak/soak_board.h"
#include "bench/soak/soak_topology.h"

namespace mwbench {
namespace soak {

class Progress {
 public:
  Progress(const Board& board, const std::vector<WorldSpec>& worlds, int processes)
      : board_(board), worlds_(worlds), processes_(processes) {}

  // Deliveries so far on every (member, world), by the process in each
  // member's slot then.
  struct Since {
    std::vector<int> generation;
    std::vector<int64_t> delivered;
  };
  Since mark() const;
  // Every world of every member running with `kRecoverMessages` more
  // deliveries than at `since` (a process that took a slot since counts
  // from zero).
  bool everyWorldMoves(const Since& since) const;
  // "soak.s0-1 on member 1 forming (3 failed creates), ..."
  std::string stuck(const Since& since) const;

  static constexpr int64_t kRecoverMessages = 3;

 private:
  bool moves(int m, int w, const Since& since) const;

  const Board& board_;
  const std::vector<WorldSpec>& worlds_;
  const int processes_;
};

}  // namespace soak
}  // namespace mwbench
