// The watchdog's connections to Redis: one for commands and one
// subscribed to the namespace's events channel, made together and dropped
// together. While they are down it retries with a growing pause, and it
// queues STORE_DOWN when an outage starts and STORE_UP when it ends.
// Watchdog thread only, but for up().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/deadline.h"
#include "core/event_queue.h"
#include "core/store/keys.h"
#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"

namespace mw {

class StoreLink {
 public:
  StoreLink(const Config& cfg, RedisUrl url, const Keys& keys, EventQueue& events);

  // Connects and subscribes, runs `greet` on the command connection, and
  // only then counts as connected. Throws Error(Store), leaving the link
  // down. True when this ended an outage.
  bool connect(const std::function<void(RedisConnection&)>& greet);
  // Drops both connections: the outage starts (STORE_DOWN, once) and the
  // next attempt is due after the pause.
  void lost(const std::string& why);
  // A reconnection attempt failed: the next is due after a longer pause.
  void retryLater();

  bool connected() const { return cmd_ != nullptr; }
  Clock::time_point nextAttempt() const { return next_attempt_; }
  RedisConnection& commands() { return *cmd_; }
  // The subscriber's fd to poll, -1 while down.
  int subscriberFd() const;
  // The payloads of the messages that have arrived on the events channel.
  std::vector<std::string> messages();

  // From any thread: false during an outage.
  bool up() const;
  const RedisUrl& url() const { return url_; }

  // How far apart members come back after an outage at most: they retry at
  // least this often.
  static std::chrono::milliseconds maxPause(const Config& cfg);

 private:
  const Config& cfg_;
  const RedisUrl url_;
  const Keys& keys_;
  EventQueue& events_;
  std::unique_ptr<RedisConnection> cmd_, sub_;
  Clock::time_point next_attempt_;
  std::chrono::milliseconds pause_;

  mutable std::mutex m_;
  bool up_ = true;
};

}  // namespace mw
