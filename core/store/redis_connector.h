// Connections to the Redis a redis_url names: the server itself, or, for a
// sentinel URL, whichever server the sentinels name as master now
// (core/store/sentinel.h). After a failover, connections to the old master
// are useless or worse (a demoted master refuses writes), so the
// connector counts the times its user saw the master change or the link
// to it break: a connection made before the latest is not to be reused.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"

namespace mw {

class RedisConnector {
 public:
  RedisConnector(RedisUrl url, std::chrono::milliseconds timeout) : url_(std::move(url)), timeout_(timeout) {}

  // Throws Error(Store) when no connection (to a master) can be made.
  std::unique_ptr<RedisConnection> connect() const;

  const RedisUrl& url() const { return url_; }
  bool viaSentinel() const { return url_.kind == RedisUrl::Kind::Sentinel; }
  // One connection attempt, and every later round trip, unless raised.
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Bumped by the watchdog when the master changes or its link breaks.
  void invalidate() { generation_.fetch_add(1); }
  uint64_t generation() const { return generation_.load(); }

 private:
  const RedisUrl url_;
  const std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace mw
