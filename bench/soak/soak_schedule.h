// The chaos schedule: which fault comes next, whom it hits, for how long,
// and the quiet time before it. A pure function of the seed and the run's
// shape (kinds, processes, worlds, heartbeat), so the same seed gives the
// same faults in the same order: a failure is replayed by running the same
// command with the same --seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/soak/soak_topology.h"

namespace mwbench {
namespace soak {

enum class FaultKind {
  Kill9,         // kill -9 a member; a new process takes its place
  SigstopShort,  // stop a member for less than half the heartbeat timeout
  SigstopLong,   // stop a member past the heartbeat timeout
  CutOneRail,    // cut one rail of a member
  CutAllRails,   // cut every rail of a member
  RedisPause,    // SIGSTOP the Redis master for 3 s
  RedisFailover, // kill -9 the Redis master (Sentinel promotes the replica)
  Churn,         // end a world gracefully and form it again
  Cancel,        // cancel a member's newest pending receive on a stream world
  Shrink,        // kill -9 a member of an allreduce world; the others shrink it, its replacement grows it back
};
constexpr int kFaultKinds = 10;

const char* faultName(FaultKind k);
// False for a name that is no fault kind.
bool faultFromName(const std::string& name, FaultKind* out);
// Whether the fault must break the worlds of its member.
bool breaksWorlds(FaultKind k);

struct Fault {
  int index = 0;        // 0, 1, ... in the run
  FaultKind kind = FaultKind::Kill9;
  int member = -1;      // the member hit (Kill9, Sigstop*, Cut*, Cancel, Shrink)
  int world = -1;       // the world (Churn, Cancel, Shrink)
  int rail = -1;        // CutOneRail
  bool drop = false;    // Cut*: drop every packet instead of taking the link down
  int hold_ms = 0;      // how long the fault lasts (stops, cuts, the pause)
  int gap_ms = 0;       // quiet time before it
  std::string text() const;  // "sigstop_long member 2 for 1834 ms"
};

struct ScheduleShape {
  std::vector<FaultKind> kinds;  // those that run
  std::vector<WorldSpec> worlds;
  int processes = 0;
  int rails = 1;
  int heartbeat_timeout_ms = 1000;
  int path_timeout_ms = 100;
};

class Schedule {
 public:
  Schedule(uint64_t seed, ScheduleShape shape);
  Fault next();

 private:
  uint64_t draw();
  int uniform(int lo, int hi);  // [lo, hi]

  uint64_t state_;
  ScheduleShape shape_;
  int index_ = 0;
};

}  // namespace soak
}  // namespace mwbench
