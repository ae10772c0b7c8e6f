// What one namespace holds in Redis, read for people (`multiworld
// status`): the members with a live heartbeat, and every world's record
// with its current incarnation's members and break marker. Read-only;
// values are parsed with bounds like everything else read from Redis.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/store/keys.h"
#include "core/store/redis_connection.h"
#include "core/store/redis_values.h"

namespace mw {

struct MemberEntry {
  std::string id;
  std::optional<Heartbeat> heartbeat;  // nullopt: a value that is not a heartbeat
  std::string paths;  // its data paths report (Keys::paths), empty if none
};

struct MemberMetrics {
  std::string id;
  std::optional<Heartbeat> heartbeat;   // nullopt: a value that is not a heartbeat
  std::optional<std::string> snapshot;  // what it published (core/metrics/wire.h); nullopt: none
};

struct WorldEntry {
  std::string name;
  std::optional<uint64_t> epoch;  // nullopt: the record's epoch is not one
  std::optional<int> size;
  std::string state;  // as recorded: forming, ready, broken, failed, left
  std::string detail;
  long long created_ms = 0;  // 0: unknown
  std::vector<std::pair<std::string, std::string>> members;  // rank, member id, as recorded
  bool break_marked = false;  // the incarnation's durable break marker is set
  // How the incarnation came about (core/store/lineage.h): "formed",
  // "shrunk" or "grown", from epoch `from` of `old_size` members, a
  // shrink's excluded ranks of that epoch ("1,3"), as recorded.
  std::string how = "formed";
  std::optional<uint64_t> from;
  std::optional<int> old_size;
  std::string excluded;
};

class Directory {
 public:
  // Connects to the Redis of `redis_url` (any form the redis_url setting
  // accepts). Throws Error(InvalidArgument) for a bad URL, Error(Store)
  // when Redis cannot be reached.
  Directory(const std::string& redis_url, std::string ns, std::chrono::milliseconds timeout);
  ~Directory();

  // Throws Error(Store) when Redis fails or refuses.
  std::vector<MemberEntry> members();
  std::vector<WorldEntry> worlds();
  // The members with a live heartbeat and their published metrics, read
  // in one pipelined round trip after the scan (`multiworld metrics`).
  std::vector<MemberMetrics> memberMetrics();

  // The Redis it reads, password hidden.
  const std::string& where() const { return where_; }
  const std::string& ns() const { return keys_.ns(); }

 private:
  std::vector<std::string> scan(const std::string& pattern);

  const Keys keys_;
  std::string where_;
  std::unique_ptr<RedisConnection> conn_;
};

}  // namespace mw
