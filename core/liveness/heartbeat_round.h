// One tick of the watchdog as one pipelined round trip: this member's
// heartbeat written, the heartbeat of every peer it watches read, the
// break marker of every world it watches read, the TTLs of the world
// records refreshed when asked, and what this member reports of itself
// written when due.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/store/redis_connection.h"

namespace mw {

// A value written with SET ... PX ttl.
struct KeyWrite {
  std::string key, value;
  std::chrono::milliseconds ttl{0};
};

struct HeartbeatRound {
  std::string heartbeat_key, heartbeat_value;
  std::chrono::milliseconds heartbeat_ttl{0};
  std::vector<std::string> peer_keys;    // read: heartbeats
  std::vector<std::string> marker_keys;  // read: break markers
  std::vector<std::string> refresh_keys;  // PEXPIRE'd to refresh_ttl
  std::chrono::milliseconds refresh_ttl{0};
  // Written too: this member's paths report (Keys::paths) and metrics
  // (Keys::metrics), for people and scrapes; a refusal breaks nothing.
  std::vector<KeyWrite> writes;
};

struct HeartbeatReads {
  std::vector<std::optional<std::string>> beats;    // one per peer key; nullopt: no key
  std::vector<std::optional<std::string>> markers;  // one per marker key
};

// Throws Error(Store) when the connection fails or Redis refuses any part:
// reads refused (an ACL without MGET, say) would leave peers unwatched.
HeartbeatReads runHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round);

// The same in two halves, so that rounds can be pipelined back to back (the
// control benchmark loads Redis with them): the commands appended, and
// later their replies read, in the order appended.
size_t appendHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round);  // returns the commands
HeartbeatReads readHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round);

}  // namespace mw
