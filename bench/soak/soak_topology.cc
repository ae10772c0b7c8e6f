#include "bench/soak/soak_topology.h"

#include <algorithm>

namespace mwbench {
namespace soak {

namespace {

// Streams alternate eager and rendezvous sizes (UCX's threshold is tens of
// KiB over TCP), one of them not a multiple of 8.
constexpr std::size_t kStreamBytes[] = {4096, 65536, 1028, 262144};
constexpr int kStreamIntervalUs = 5000;
constexpr std::size_t kAllreduceBytes = 65536;
constexpr int kAllreduceIntervalUs = 10000;

}  // namespace

int WorldSpec::rankOf(int member) const {
  auto it = std::find(members.begin(), members.end(), member);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

std::vector<WorldSpec> makeTopology(int processes, const std::string& prefix) {
  std::vector<WorldSpec> out;
  for (int i = 0; i < processes; ++i) {
    WorldSpec w;
    const int j = (i + 1) % processes;
    w.name = prefix + ".s" + std::to_string(i) + "-" + std::to_string(j);
    w.members = {i, j};
    w.bytes = kStreamBytes[i % 4];
    w.interval_us = kStreamIntervalUs;
    out.push_back(w);
  }
  const int triples = std::max(1, processes / 3), step = std::max(1, processes / 3);
  for (int t = 0; t < triples; ++t) {
    WorldSpec w;
    w.name = prefix + ".a" + std::to_string(t);
    w.allreduce = true;
    w.members = {t, (t + step) % processes, (t + 2 * step) % processes};
    w.bytes = kAllreduceBytes;
    w.interval_us = kAllreduceIntervalUs;
    out.push_back(w);
  }
  return out;
}

std::vector<int> worldsOf(const std::vector<WorldSpec>& worlds, int m) {
  std::vector<int> out;
  for (size_t w = 0; w < worlds.size(); ++w) {
    if (worlds[w].rankOf(m) >= 0) out.push_back(static_cast<int>(w));
  }
  return out;
}

}  // namespace soak
}  // namespace mwbench
