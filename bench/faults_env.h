// What the parts of the faults suite (bench/faults_suite.h) share: the
// limits every part runs under, the run's environment (its Redis, its
// backend, its context settings) and the partition's network.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <multiworld/multiworld.h>

#include "tools/lab/netns.h"

namespace mwbench {
namespace faults {

using Settings = std::vector<std::pair<std::string, std::string>>;

// Limits; going past one fails the suite.
constexpr std::chrono::seconds kDetectLimit{10};  // fault -> break seen
// mw_world_destroy promises bounded time; one that has not returned after
// this long is reported as hung (not a failure of the suite: the process is
// killed and the run goes on).
constexpr std::chrono::seconds kDestroyLimit{10};
constexpr std::chrono::seconds kSetupLimit{30};  // processes up, worlds formed, traffic flowing

// The partition's addresses; partition_test.cc uses 10.213.7.0/24, so both
// can run at once.
constexpr char kOuterAddr[] = "10.213.8.1";
constexpr char kInnerAddr[] = "10.213.8.2";

// The partition: the victim in a network namespace of its own behind a veth
// pair whose end here (link.a, kOuterAddr) the fault takes down; kInnerAddr
// in the namespace.
struct Partition {
  mwlab::NetLab lab;
  std::string ns;
  mwlab::NetLink link;
};

// Makes the partition's namespace and veth pair, both ends up; null, with
// the reason in *why, when this host cannot.
std::unique_ptr<Partition> makePartition(std::string* why);

struct Env {
  mw_backend_t backend = MW_BACKEND_UCX;  // the host backend of every world of the run
  std::string redis_url;                  // unix socket (or --redis)
  std::string tcp_url;                    // to the private redis-server over the veth, for the partition
  std::string mw_namespace;
  Partition* partition = nullptr;  // null: no partition
  Settings heartbeat;              // --heartbeat-interval-ms, --heartbeat-timeout-ms as given
  std::size_t healthy_bytes = 0;   // --healthy-bytes: the healthy world's message size
};

// A context's settings for a process of the run.
Settings settingsFor(const Env& env, const std::string& url, const std::string& bind);

// Joins the two-rank world `name` as `rank`; null, said on stderr as the
// failure of `who` ("survivor", "X", ...), when it does not form.
mw_world_t* joinPairWorld(mw_context_t* ctx, const std::string& name, int rank, mw_backend_t backend,
                          const char* who);

}  // namespace faults
}  // namespace mwbench
