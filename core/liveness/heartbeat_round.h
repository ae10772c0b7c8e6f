// One tick of the watchdog as one pipelined round trip: this member's
// heartbeat written, the heartbeat of every peer it watches read, the
// break marker of every world it watches read, and the TTLs of the world
// records refreshed when asked.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/store/redis_connection.h"

namespace mw {

struct HeartbeatRound {
  std::string heartbeat_key, heartbeat_value;
  std::chrono::milliseconds heartbeat_ttl{0};
  std::vector<std::string> peer_keys;    // read: heartbeats
  std::vector<std::string> marker_keys;  // read: break markers
  std::vector<std::string> refresh_keys;  // PEXPIRE'd to refresh_ttl
  std::chrono::milliseconds refresh_ttl{0};
  // Written too when set: this member's paths report (Keys::paths).
  std::string paths_key, paths_value;
  std::chrono::milliseconds paths_ttl{0};
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
