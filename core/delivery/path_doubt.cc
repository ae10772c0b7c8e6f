#include "core/delivery/path_doubt.h"

namespace mw {

std::optional<PathMeter::Clock::time_point> doubtDue(const PathTraffic& path, std::chrono::milliseconds floor) {
  if (!path.up || !path.oldest_sent) return std::nullopt;
  return *path.oldest_sent + path.meter->doubtAfter(floor);
}

bool inDoubt(const std::vector<PathTraffic>& paths, size_t i, PathMeter::Clock::time_point now,
             std::chrono::milliseconds floor) {
  if (i >= paths.size()) return false;
  const auto due = doubtDue(paths[i], floor);
  if (!due || now < *due) return false;
  // Another path heard from the peer after this one's oldest chunk left:
  // the peer answers, this path does not.
  for (size_t j = 0; j < paths.size(); ++j) {
    if (j != i && paths[j].up && paths[j].last_heard > *paths[i].oldest_sent) return true;
  }
  return false;
}

bool probeDue(const PathTraffic& path, PathMeter::Clock::time_point now, std::chrono::milliseconds probe_every) {
  return path.up && !path.oldest_sent && now - path.last_heard >= probe_every;
}

}  // namespace mw
