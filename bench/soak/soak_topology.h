// The soak's worlds: which member processes each holds, what runs on it.
// Every member is in two two-member stream worlds (a ring of pairs) and at
// least one member is in a three-member allreduce world; the triples are
// spread (members t, t+s, t+2s) so that each cuts across the pairs and a
// fault in one member leaves each of its peers with worlds that must go on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mwbench {
namespace soak {

struct WorldSpec {
  std::string name;          // the same for every incarnation
  bool allreduce = false;    // else a two-way checked stream
  std::vector<int> members;  // member ids; rank = position
  std::size_t bytes = 0;     // a stream's message, an allreduce's vector
  int interval_us = 0;       // the least time between two posts of one member
  int rankOf(int member) const;  // -1 when not a member
};

// For `processes` members (3..kMaxMembers); names start with `prefix`.
std::vector<WorldSpec> makeTopology(int processes, const std::string& prefix);
// The worlds (indices) member `m` is in.
std::vector<int> worldsOf(const std::vector<WorldSpec>& worlds, int m);

}  // namespace soak
}  // namespace mwbench
