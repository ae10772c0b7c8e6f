// The soak's Redis watch: a process that PINGs the current Sentinel master
// every few milliseconds and records on the board how long each answer
// took, except while the driver has marked a Redis fault under way.
#pragma once

#include <string>
#include <vector>

#include "bench/soak/soak_board.h"

namespace mwbench {
namespace soak {

struct PingerSpec {
  std::string host;               // where the sentinels and servers listen
  std::vector<int> sentinel_ports;
  std::string master_name;
  int slow_ms = 50;               // an answer later than this is slow
};

// Runs until board.stop; call in a fresh process.
int runPinger(const PingerSpec& spec, PingBoard& board);

}  // namespace soak
}  // namespace mwbench
