// Part 2 of the faults suite: a healthy world while a neighbour fails.
// Process X is in h = {X, Y} and f = {X, Z}, all streaming checked
// messages; X's receive rate on h over the 2 s before and the 2 s from a
// kill -9 of Z (X destroys f, on the thread that drives h, when it sees f
// break).
#pragma once

#include <cstddef>

#include "bench/faults_env.h"

namespace mwbench {
namespace faults {

constexpr std::size_t kHealthyBytes = 64 << 10;  // default of --healthy-bytes
constexpr std::size_t kHealthyWindow = 8;
constexpr int kHealthyReps = 5;

struct Rep {
  double before = 0, during = 0, ratio = 0, detect_ms = 0, destroy_ms = 0;
  bool destroy_hung = false;  // X's mw_world_destroy(f) had not returned kDestroyLimit after the window
};

// Rep `rep` (0-based); throws SuiteError when it fails.
Rep runHealthyRep(int rep, const Env& env);

}  // namespace faults
}  // namespace mwbench
