// Which member of a world is slow (issue 47): one whose capacity, the
// rate it can send and receive at (its rails' measured rates,
// path_meter.h), is below `ratio` (degraded_ratio) times the median of
// the world's members. Of several, the slowest: the degraded schedules
// carry one. The member judged slow now stays slow until its capacity is
// back at (ratio + kReturnMargin) times the median, so a capacity that
// hovers at the line does not switch the world back and forth.
//
// Pure: the coordinator (schedule_switch.h) calls it with what members
// reported.
#pragma once

#include <vector>

namespace mw {

constexpr double kReturnMargin = 0.1;

// `capacity` by rank, in any one unit; 0 or less: not measured, never
// slow and not in the median. `current`: the member judged slow now, or
// -1. Returns the slow member, or -1.
int judgeSlow(const std::vector<double>& capacity, double ratio, int current);

}  // namespace mw
