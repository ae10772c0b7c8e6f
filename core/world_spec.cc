#include "core/world_spec.h"

#include "core/config.h"
#include "core/error.h"

namespace mw {

PathFailover pathFailoverFrom(int v) {
  if (v < 0 || v > 2) {
    throw Error(Status::InvalidArgument,
                "path_failover " + std::to_string(v) +
                    " is not MW_PATH_FAILOVER_DEFAULT (0), MW_PATH_FAILOVER_ON (1) or MW_PATH_FAILOVER_OFF (2)");
  }
  return static_cast<PathFailover>(v);
}

SameHostPath sameHostPathFrom(int v) {
  if (v < 0 || v > 2) {
    throw Error(Status::InvalidArgument,
                "same_host_path " + std::to_string(v) +
                    " is not MW_SAME_HOST_PATH_DEFAULT (0), MW_SAME_HOST_PATH_AUTO (1) or MW_SAME_HOST_PATH_OFF (2)");
  }
  return static_cast<SameHostPath>(v);
}

WorldSettings resolveSettings(const WorldSpec& spec, const Config& cfg) {
  WorldSettings s;
  if (spec.op_timeout_ms < -1) {
    throw Error(Status::InvalidArgument, "op_timeout_ms " + std::to_string(spec.op_timeout_ms) +
                                             " must be > 0, 0 for the context's op_timeout_ms, or -1 for no limit");
  }
  s.op_timeout = spec.op_timeout_ms == 0    ? cfg.op_timeout
                 : spec.op_timeout_ms == -1 ? std::chrono::milliseconds(0)
                                            : std::chrono::milliseconds(spec.op_timeout_ms);
  switch (spec.path_failover) {
    case PathFailover::Default:
      s.path_failover = cfg.path_failover;
      break;
    case PathFailover::Off:
      s.path_failover = false;
      break;
    case PathFailover::On:
      // The context's path workers exist only when its config has failover
      // on: a world cannot start them for itself.
      if (!cfg.path_failover) {
        throw Error(Status::InvalidArgument,
                    "path_failover MW_PATH_FAILOVER_ON (1): this context's path_failover config is off");
      }
      if (spec.backend == Backend::Gloo) {
        throw Error(Status::InvalidArgument,
                    "path_failover MW_PATH_FAILOVER_ON (1): Gloo worlds have one path and no failover");
      }
      s.path_failover = true;
      break;
  }
  s.same_host_path = spec.same_host_path == SameHostPath::Default ? cfg.same_host_path
                                                                  : spec.same_host_path == SameHostPath::Auto;
  s.same_host_min_bytes = cfg.same_host_min_bytes;
  return s;
}

}  // namespace mw
