// Redis Sentinel, client side: which server is the master of a sentinel
// URL right now, and when that changes.
//
// The master is whatever the sentinels name (SENTINEL
// get-master-addr-by-name), asked in the URL's order, and only once the
// server itself says it is one (ROLE): a sentinel that has not heard of a
// failover yet names a dead or demoted server, and the next one is asked.
// Sentinels are asked without credentials; one that answers NOAUTH is
// asked again after AUTH with the URL's (as the master is).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"

namespace mw {

// A connection to the master of sentinel URL `url`, authenticated and on
// its db. `timeout` bounds each connection and round trip. Throws
// Error(Store) naming each sentinel and what it said when none leads to a
// master: unreachable, not knowing the master's name, or naming a server
// that is unreachable or not a master.
std::unique_ptr<RedisConnection> connectToMaster(const RedisUrl& url, std::chrono::milliseconds timeout);

// A subscription to one sentinel's +switch-master messages, so a failover
// is heard at once even when the old master is still reachable (a
// partition, a manual SENTINEL FAILOVER).
class SentinelWatch {
 public:
  // Subscribes on the first sentinel of `url` that answers. Throws
  // Error(Store) when none does.
  static std::unique_ptr<SentinelWatch> open(const RedisUrl& url, std::chrono::milliseconds timeout);

  int fd() const { return conn_->fd(); }
  // Reads what has arrived (never blocks): the new master's address when a
  // sentinel announced a switch of this URL's master. Throws Error(Store)
  // when the sentinel's connection failed.
  std::optional<HostPort> switched();

 private:
  SentinelWatch(std::unique_ptr<RedisConnection> conn, std::string master_name)
      : conn_(std::move(conn)), master_name_(std::move(master_name)) {}
  std::unique_ptr<RedisConnection> conn_;
  const std::string master_name_;
};

// "+switch-master" message text: "<name> <old ip> <old port> <new ip> <new
// port>". The new master when it is about `master_name`; parsed with
// bounds, as anything read from the network.
std::optional<HostPort> parseSwitchMaster(const std::string& text, const std::string& master_name);

}  // namespace mw
