// The watchdog's connections to Redis: one for commands and one
// subscribed to the namespace's events channel, made together and dropped
// together, to the master of a sentinel URL when it is one; with
// sentinels, also a subscription to a sentinel's failover announcements.
// While the link is down it retries with a growing pause, and it queues
// STORE_DOWN when an outage starts and STORE_UP when it ends. Watchdog
// thread only, but for up().
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
#include "core/store/redis_connector.h"
#include "core/store/sentinel.h"

namespace mw {

class StoreLink {
 public:
  StoreLink(const Config& cfg, RedisConnector& connector, const Keys& keys, EventQueue& events);
  ~StoreLink();

  struct Connected {
    bool ended_outage = false;    // the link was down before
    bool master_changed = false;  // to another server than the last (a failover)
  };
  // Connects and subscribes, runs `greet` on the command connection, and
  // only then counts as connected. Throws Error(Store), leaving the link
  // down.
  Connected connect(const std::function<void(RedisConnection&)>& greet);
  // Drops both connections: the outage starts (STORE_DOWN, once) and the
  // next attempt is due after the pause, or at once.
  void lost(const std::string& why, bool retry_at_once = false);
  // A reconnection attempt failed: the next is due after a longer pause.
  void retryLater();

  bool connected() const { return cmd_ != nullptr; }
  Clock::time_point nextAttempt() const { return next_attempt_; }
  RedisConnection& commands() { return *cmd_; }
  // The subscriber's fd to poll, -1 while down.
  int subscriberFd() const;
  // The payloads of the messages that have arrived on the events channel.
  std::vector<std::string> messages();

  // Sentinel URLs: the watch's fd to poll, -1 without one.
  int sentinelFd() const { return watch_ ? watch_->fd() : -1; }
  // Reads the sentinel's messages: why the link must move, when a sentinel
  // announced the master elsewhere; "" otherwise. A failed watch is
  // dropped, not the link.
  std::string masterMoved();
  // Opens the sentinel watch again if it failed, at most once a second.
  void keepWatching();

  // From any thread: false during an outage.
  bool up() const;
  const RedisUrl& url() const { return connector_.url(); }

  // How far apart members come back after an outage at most: they retry at
  // least this often.
  static std::chrono::milliseconds maxPause(const Config& cfg);

 private:
  const Config& cfg_;
  RedisConnector& connector_;
  const Keys& keys_;
  EventQueue& events_;
  std::unique_ptr<RedisConnection> cmd_, sub_;
  std::string master_;  // where cmd_ goes (redacted URL), kept across outages
  std::unique_ptr<SentinelWatch> watch_;
  Clock::time_point next_watch_attempt_;
  Clock::time_point next_attempt_;
  std::chrono::milliseconds pause_;

  mutable std::mutex m_;
  bool up_ = true;
};

}  // namespace mw
