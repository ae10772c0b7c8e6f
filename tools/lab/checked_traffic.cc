#include "tools/lab/checked_traffic.h"

#include <algorithm>
#include <cstdio>

namespace mwlab {

void MemberBoard::markCut(int64_t at_ns) {
  int c = cuts.load();
  if (c >= kMaxCuts) return;
  resumed_ns[c].store(0);
  cut_ns[c].store(at_ns);
  cuts.store(c + 1);
}

int MemberBoard::countEvents(mw_event_type_t type, int64_t since_ns) const {
  int n = std::min(n_events.load(), kMaxEvents), count = 0;
  for (int i = 0; i < n; ++i) count += events[i].type == type && events[i].at_ns >= since_ns;
  return count;
}

std::string MemberBoard::eventText(int64_t origin_ns) const {
  static const char* const kNames[] = {"?", "WORLD_BROKEN", "STORE_DOWN", "STORE_UP", "PATH_DOWN", "PATH_UP"};
  int n = std::min(n_events.load(), kMaxEvents);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const BoardEvent& e = events[i];
    char line[256];
    std::snprintf(line, sizeof line, "%s%s peer %d '%s' @%+.1fms", out.empty() ? "" : ", ",
                  e.type >= 1 && e.type <= 5 ? kNames[e.type] : kNames[0], e.peer_rank, e.detail,
                  (e.at_ns - origin_ns) / 1e6);
    out += line;
  }
  return out.empty() ? "(no events)" : out;
}

}  // namespace mwlab
