// What a member of a UCX world publishes about itself at rendezvous, and
// the parser for what the others published (bytes from Redis: bounded,
// never trusted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mw {

// One data path of a member: a local IP address, and the port on it where
// the worker that carries the path listens (0 when its context runs no
// path workers: fewer than two paths, or path_failover off).
struct UcxPath {
  std::string ip;
  uint16_t listen_port = 0;
  uint16_t probe_port = 0;  // where its context answers reachability probes
};

struct UcxPeerInfo {
  // Where its context's listener (ucx_links.h) accepts endpoints.
  std::string listen_ip;
  uint16_t listen_port = 0;
  uint32_t world_id = 0;          // this world's id at that member's context
  std::string host;               // same value: same host and pid namespace
  int pid = 0;
  unsigned long long start_ticks = 0;  // /proc/<pid>/stat field 22
  // What the same-host path needs (core/same_host/probe.h).
  std::string net_namespace;
  uint64_t probe_address = 0;
  uint64_t probe_value = 0;
  // Its data paths, in order of preference.
  std::vector<UcxPath> paths;
  // A shrink's or grow's successor: the ranks (new numbering) of members
  // of the old world whose endpoints this member cannot keep (its old
  // world closed them); the pair connects afresh (ucx_world.h).
  std::vector<int> dropped;
};

// This process's host, pid and start time; world_id and listener unset.
UcxPeerInfo thisProcess();

std::string encodePeerInfo(const UcxPeerInfo& info);
// False when `bytes` is not a record this version writes.
bool decodePeerInfo(const std::string& bytes, UcxPeerInfo& out);

// Start time of process `pid` in clock ticks since boot; false when gone.
bool processStartTicks(int pid, unsigned long long& ticks);
// Its kernel flags (/proc/<pid>/stat field 9); false when gone.
bool processFlags(int pid, unsigned long& flags);

}  // namespace mw
