// The one clock of a lab run: every process of a run (the parent and the
// members it forks) stamps events with it, so their times compare.
#pragma once

#include <cstdint>

namespace mwlab {

// CLOCK_MONOTONIC in nanoseconds.
int64_t monotonicNs();

}  // namespace mwlab
