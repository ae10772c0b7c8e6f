// When a path that carries striped traffic is in doubt, and when an idle
// one is probed (issue 46).
//
// With traffic on every path, a path is in doubt once its oldest
// unacknowledged chunk has waited past its meter's doubtAfter() (max(3 x
// its smoothed round trip, path_timeout_ms), plus what it has in flight at
// its rate) while another path's acknowledgements kept coming after that
// chunk was sent. Silence on every path at once is the peer's, not a
// path's: the member timeout judges that, and no path is doubted for it.
// A doubt is not a break: the path's chunks go again on the others, and
// the path is probed.
//
// A path that is up with nothing of its own in flight shows nothing about
// now: once it has not been heard from for `probe_every`, it is probed.
//
// Pure: the caller passes what each path shows and the time.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "core/delivery/path_meter.h"

namespace mw {

struct PathTraffic {
  bool up = false;
  const PathMeter* meter = nullptr;                        // not null
  std::optional<PathMeter::Clock::time_point> oldest_sent;  // its oldest unacknowledged chunk
  PathMeter::Clock::time_point last_heard;                 // its last acknowledgement or answer
};

// When `path` falls in doubt if nothing changes: its oldest
// unacknowledged chunk's send time plus doubtAfter(floor). nullopt when it
// has nothing in flight or is not up.
std::optional<PathMeter::Clock::time_point> doubtDue(const PathTraffic& path, std::chrono::milliseconds floor);

// Whether path `i` of `paths` is in doubt at `now` (false for no such path).
bool inDoubt(const std::vector<PathTraffic>& paths, size_t i, PathMeter::Clock::time_point now,
             std::chrono::milliseconds floor);

// Whether `path`, up and idle, is due a probe at `now`.
bool probeDue(const PathTraffic& path, PathMeter::Clock::time_point now, std::chrono::milliseconds probe_every);

}  // namespace mw
