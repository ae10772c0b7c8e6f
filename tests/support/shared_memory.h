// The tests' name for tools/common's shared mapping (shared with the
// benchmarks).
#pragma once

#include "tools/common/shared_memory.h"

namespace mwtest {
using mwtools::Shared;
}  // namespace mwtest
