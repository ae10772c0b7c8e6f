// The one control-plane thread of a context: refreshes this process's
// heartbeat, checks the heartbeats of every member of every world it
// watches (one pipelined round trip per tick for all worlds), listens for
// break notices on pub/sub, publishes this process's own, and rides out
// Redis outages without breaking anything.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/config.h"
#include "core/deadline.h"
#include "core/event_queue.h"
#include "core/keys.h"
#include "core/peer_liveness.h"
#include "core/redis_connection.h"

namespace mw {

class World;

class Watchdog {
 public:
  // Writes the first heartbeat before returning, so rendezvous can tell
  // this member is alive. Throws Error(Store) when Redis is unreachable.
  Watchdog(const Config& cfg, const RedisUrl& url, const Keys& keys, std::string member_id,
           EventQueue& events);
  ~Watchdog();

  void watch(const std::shared_ptr<World>& w);
  void unwatch(const World* w);
  // Queues a break notice for the other members: pub/sub now, plus a
  // durable marker for members that are disconnected from Redis right now.
  void announce(const World& w, int peer_rank, const std::string& detail);
  // Records in Redis that this member left a healthy incarnation, so it can
  // be formed again without it. Publishes nothing: the members learn from
  // the transport, after whatever this member sent them has arrived.
  void recordLeft(const World& w);
  bool storeUp() const;

 private:
  struct Watched {
    std::weak_ptr<World> world;
    std::string name;
    uint64_t epoch;
    int rank;
    std::vector<std::string> members;
  };
  struct Notice {
    std::string world;
    uint64_t epoch;
    int detector;
    int peer;
    std::string detail;
    bool left = false;  // recordLeft(): meta state only
  };

  void run();
  void tick();
  void connect();
  void disconnect(const std::string& why);
  void drainSubscriber();
  void publishNotices();
  void handleNotice(const std::string& payload);
  void breakWorlds(const std::string& name, uint64_t epoch, int peer, const std::string& detail, bool announce);
  void wakeUp();
  std::string heartbeatValue();

  const Config cfg_;
  const RedisUrl url_;
  const Keys keys_;
  const std::string member_;
  const std::string host_;  // with our pid in the heartbeat, for `multiworld status`
  EventQueue& events_;

  std::unique_ptr<RedisConnection> cmd_;  // watchdog thread only
  std::unique_ptr<RedisConnection> sub_;  // watchdog thread only
  uint64_t beat_ = 0;
  PeerLiveness liveness_;  // watchdog thread only
  Clock::time_point last_tick_;
  Clock::time_point judge_after_;  // no verdicts before this (outage, stall)
  Clock::time_point next_reconnect_;
  std::chrono::milliseconds backoff_{25};
  int ticks_ = 0;

  mutable std::mutex m_;
  std::map<const World*, Watched> worlds_;
  std::deque<Notice> notices_;
  bool store_up_ = true;
  bool stop_ = false;
  int wake_fd_ = -1;  // eventfd
  std::thread thread_;
};

}  // namespace mw
