#include "bench/soak/soak_progress.h"

#include <algorithm>

namespace mwbench {
namespace soak {

Progress::Since Progress::mark() const {
  Since s;
  for (int m = 0; m < processes_; ++m) {
    s.generation.push_back(board_.members[m].generation.load());
    for (int w = 0; w < kMaxWorlds; ++w) s.delivered.push_back(board_.members[m].cells[w].delivered.load());
  }
  return s;
}

bool Progress::moves(int m, int w, const Since& since) const {
  const MemberSlot& slot = board_.members[m];
  const Cell& c = slot.cells[w];
  const int64_t base = slot.generation.load() == since.generation[static_cast<size_t>(m)]
                           ? since.delivered[static_cast<size_t>(m * kMaxWorlds + w)]
                           : 0;
  return c.state.load() == kRunning && c.delivered.load() >= base + kRecoverMessages &&
         c.churn_done.load() == c.churn_request.load() && c.cancel_done.load() == c.cancel_request.load() &&
         c.shrink_done.load() == c.shrink_request.load() && c.grow_done.load() == c.grow_request.load() &&
         !c.hold.load() && !c.joins.load();
}

bool Progress::everyWorldMoves(const Since& since) const {
  for (int m = 0; m < processes_; ++m) {
    for (int w : worldsOf(worlds_, m)) {
      if (!moves(m, w, since)) return false;
    }
  }
  return true;
}

std::string Progress::stuck(const Since& since) const {
  static const char* const kStates[] = {"absent", "forming", "running", "ending", "broken", "closed"};
  std::string out;
  for (int m = 0; m < processes_; ++m) {
    for (int w : worldsOf(worlds_, m)) {
      if (moves(m, w, since)) continue;
      const Cell& c = board_.members[m].cells[w];
      out += (out.empty() ? "" : ", ") + worlds_[static_cast<size_t>(w)].name + " on member " + std::to_string(m) +
             " " + kStates[std::clamp(c.state.load(), 0, 5)] + " (" + std::to_string(c.create_failures.load()) +
             " failed creates)";
    }
  }
  return out;
}

}  // namespace soak
}  // namespace mwbench
