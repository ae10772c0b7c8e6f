// A soak member process: one context, every world of the topology it is
// in, checked traffic on each, and what it sees written to its slot of the
// board. Broken worlds are destroyed and formed again under the same name,
// or shrunk and grown back (a shrink fault); the driver's requests (churn,
// cancel, shrink, grow, stop) are read from the board.
#pragma once

#include <multiworld/multiworld.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/soak/soak_board.h"
#include "bench/soak/soak_topology.h"

namespace mwbench {
namespace soak {

struct MemberSpec {
  int id = 0;
  std::vector<WorldSpec> worlds;  // the whole topology
  std::vector<std::pair<std::string, std::string>> settings;  // mw_config_set keys and values
  mw_backend_t backend = MW_BACKEND_UCX;
  int create_timeout_ms = 10000;
};

// Runs until board.stop, then ends every world gracefully and returns 0;
// non-zero when the context could not be made (said on stderr and in a
// note). Call in a fresh process.
int runMember(const MemberSpec& spec, Board& board);

}  // namespace soak
}  // namespace mwbench
