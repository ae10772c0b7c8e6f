// The soak's driver: sets up the run (network namespaces and rails, a
// Sentinel-watched Redis, the board, the member processes and the Redis
// pinger), injects the schedule's faults one at a time with quiet gaps
// between them, waits after each until every world formed again and moves,
// and hands what the members record to the referee.
#pragma once

#include <multiworld/multiworld.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/soak/soak_leaks.h"
#include "bench/soak/soak_schedule.h"

namespace mwbench {
namespace soak {

struct SoakConfig {
  mw_backend_t backend = MW_BACKEND_UCX;
  int processes = 6;
  int rails = 2;
  double minutes = 10;
  uint64_t seed = 0;
  std::vector<FaultKind> kinds;  // the kinds that run
  int heartbeat_interval_ms = 100, heartbeat_timeout_ms = 1000;
  std::vector<std::pair<std::string, std::string>> heartbeat;  // the settings given, if any
  int path_timeout_ms = 100;
};

struct SoakResult {
  double duration_s = 0;
  std::map<std::string, int> faults;  // kind -> injected
  int crashes = 0, false_breaks = 0, missed_breaks = 0;
  int fault_breaks = 0, churn_breaks = 0, cancel_breaks = 0;
  int64_t sent = 0, delivered = 0, lost = 0, duplicated = 0, reordered = 0, corrupt = 0;
  int64_t incarnations = 0, create_failures = 0, cancels_taken_back = 0, cancels_too_late = 0;
  int64_t path_down = 0, path_up = 0, store_down = 0, store_up = 0;
  std::map<std::string, std::vector<double>> detect_ms;  // breaking kind -> samples
  std::vector<double> kill_exit_ms;  // kill9: from the SIGKILL until the kernel finished the exit
  Growth growth;
  int64_t pings = 0, ping_failures = 0, ping_slow = 0;
  double ping_worst_ms = 0;
  std::vector<std::string> violations;
  std::vector<std::string> fault_log;
  int first_violation_fault = -1;
};

// Runs the soak; throws (SuiteError, std::runtime_error) when the run
// itself cannot go on (set-up failed, a signal ended it).
SoakResult runSoak(const SoakConfig& cfg);

}  // namespace soak
}  // namespace mwbench
