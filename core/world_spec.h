// What one world is created with: the members' agreement (name, rank, size,
// backend, device), how long to wait for it, and the settings a world may
// take from its context or set for itself.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace mw {

struct Config;
namespace metrics {
class WorldMetrics;
}

enum class Backend { Gloo = 1, Nccl = 2, Ucx = 3 };

// The values are those of the C header's mw_path_failover_t and
// mw_same_host_path_t.
enum class PathFailover { Default = 0, On = 1, Off = 2 };
enum class SameHostPath { Default = 0, Auto = 1, Off = 2 };

struct WorldSpec {
  std::string name;
  int rank = -1;
  int size = 0;
  Backend backend = Backend::Ucx;
  int device = 0;
  int timeout_ms = -1;  // -1: wait forever
  // 0: the context's op_timeout_ms; -1: no limit for this world.
  int op_timeout_ms = 0;
  PathFailover path_failover = PathFailover::Default;
  SameHostPath same_host_path = SameHostPath::Default;
};

// The C caller's integers, checked: Error(InvalidArgument) names a value
// outside the enumeration.
PathFailover pathFailoverFrom(int v);
SameHostPath sameHostPathFrom(int v);

// The world's settings once its context's defaults are applied.
struct WorldSettings {
  std::chrono::milliseconds op_timeout{0};  // 0: no limit
  bool path_failover = true;
  bool same_host_path = true;
  size_t same_host_min_bytes = 64 << 10;
  // What the backend counts its transfers into; null: metrics off.
  std::shared_ptr<const metrics::WorldMetrics> metrics;
};

// Throws Error(InvalidArgument) naming a value this build cannot honour:
// an op_timeout_ms below -1, path failover on where the context has it off
// or the backend has no paths (Gloo).
WorldSettings resolveSettings(const WorldSpec& spec, const Config& cfg);

}  // namespace mw
