// A process that measures how quickly Redis answers while a test runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "tests/support/process.h"

namespace mwtest {

struct PingStats {
  std::atomic<int> stop{0};
  std::atomic<int64_t> pings{0};
  std::atomic<int64_t> failures{0};
  std::atomic<int64_t> worst_us{0};  // slowest PING round trip seen
};

// Forks a process (owned by `workers`) that PINGs the Redis on `socket`
// about every millisecond until stats.stop is set, and returns once the
// first PING was answered (or 10 s passed: then stats.pings stays 0).
void startPinger(Workers& workers, const std::string& socket, PingStats& stats);

}  // namespace mwtest
