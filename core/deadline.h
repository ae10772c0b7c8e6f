#pragma once

#include <algorithm>
#include <chrono>

namespace mw {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Stands for "no limit" in waits that need a finite duration; ten years fit
// in every clock's range, so adding it to now() cannot overflow.
constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365 * 10);

inline std::chrono::milliseconds remaining(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

inline Deadline deadlineAfter(std::chrono::milliseconds ms) {
  return ms.count() <= 0 ? Clock::now() + kForever : Clock::now() + ms;
}

}  // namespace mw
