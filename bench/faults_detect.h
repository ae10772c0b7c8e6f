// Part 1 of the faults suite: detection latency. Per fault kind, a fresh
// 2-rank world per trial with checked traffic flowing between a survivor
// process (serving every trial of the kind) and a victim process (one per
// trial); the time from the fault to the survivor's first sign of the
// break.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/faults_env.h"

namespace mwbench {
namespace faults {

// Each trial's traffic.
constexpr std::size_t kDetectBytes = 4096;
constexpr std::size_t kDetectWindow = 4;

enum class Fault { Kill9, Sigstop, Partition };
const char* faultName(Fault f);

struct KindResult {
  std::string fault;
  std::string skipped;  // why the kind did not run; empty when it did
  std::vector<double> ms;
  // kill9 only: ms from SIGKILL until the victim's pidfd was readable, the
  // kernel's own notice of the exit; no detection on this host is earlier.
  std::vector<double> exit_ms;
  int by_request = 0, by_event = 0;
  int destroy_hangs = 0;  // trials whose survivor never got out of mw_world_destroy
};

// `trials` trials of `kind`; throws SuiteError when one fails. A partition
// needs env.partition.
KindResult runKind(Fault kind, const Env& env, std::size_t trials);

}  // namespace faults
}  // namespace mwbench
