// Continuous, checked two-way traffic on a set of two-rank worlds, driven by
// mw_poll, with progress and breaks published through shared memory.
#pragma once

#include <multiworld/multiworld.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/lab/clock.h"

namespace mwtest {

constexpr int kMaxWorlds = 8;

struct WorldStats {
  std::atomic<int64_t> received{0};     // checked messages from the peer
  std::atomic<int64_t> broken_at_ns{0};  // CLOCK_MONOTONIC when this process saw it break
  std::atomic<int> blamed{-2};           // peer_rank from the break event, -2 = none yet
  std::atomic<int> reformed{0};          // re-created and exchanged after a break
  std::atomic<int> reform{0};            // set by the parent: re-create this world
};

struct ProcStats {
  std::atomic<int> ready{0};
  std::atomic<int> corrupt{0};        // payloads that failed the check
  std::atomic<int> errors{0};         // statuses other than OK / WORLD_BROKEN
  std::atomic<int> store_down{0};
  std::atomic<int> store_up{0};
  WorldStats worlds[kMaxWorlds];
};

struct TrafficWorld {
  std::string name;
  int index;  // into ProcStats::worlds
  int rank;   // this process's rank in the two-rank world
};

// The lab's clock: the parent and its workers stamp breaks on it.
using mwlab::monotonicNs;

// Creates the worlds, then exchanges checked messages on all of them until
// *stop is set. Returns 0 unless something unexpected happened (which it
// also reports on stderr).
int runTraffic(const std::string& redis_url, const std::vector<TrafficWorld>& worlds, ProcStats& stats,
               const std::atomic<int>& stop,
               const std::vector<std::pair<std::string, std::string>>& settings = {},
               size_t message_bytes = 4096);

}  // namespace mwtest
