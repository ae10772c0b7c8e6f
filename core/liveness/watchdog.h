// The one control-plane thread of a context: refreshes this process's
// heartbeat, judges the heartbeats of every member of every world it
// watches (one pipelined round trip per tick for all worlds,
// core/liveness/heartbeat_round.h), listens for break notices on pub/sub,
// delivers this process's own (core/liveness/break_notices.h), and rides
// out Redis outages and Sentinel failovers without breaking anything
// (core/liveness/store_link.h).
//
// After a failover the new master may lack the last heartbeats and break
// markers written to the old one (replication is asynchronous), and
// members reach it at different moments. So after a switch no peer is
// judged until it has had a full heartbeat timeout, from this member's
// reconnection, to write again; and every break this member knows of is
// announced again (marker and notice), for members that missed it.
//
// With metrics, it also times its round trips to Redis, counts master
// changes, and writes this member's snapshot next to its heartbeat every
// metrics_publish_ms (core/metrics/wire.h), for `multiworld metrics`.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/deadline.h"
#include "core/event_queue.h"
#include "core/liveness/break_notices.h"
#include "core/liveness/heartbeat_round.h"
#include "core/liveness/peer_liveness.h"
#include "core/liveness/store_link.h"
#include "core/metrics/context_metrics.h"
#include "core/store/keys.h"
#include "core/store/redis_connector.h"
#include "core/store/redis_values.h"

namespace mw {

class World;

class Watchdog {
 public:
  // Writes the first heartbeat before returning, so rendezvous can tell
  // this member is alive. Throws Error(Store) when Redis is unreachable.
  // `metrics` (null: off) outlives the watchdog.
  Watchdog(const Config& cfg, RedisConnector& connector, const Keys& keys, std::string member_id,
           EventQueue& events, metrics::ContextMetrics* metrics = nullptr);
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
  // This member gave up on incarnation `epoch` of `world` after it joined:
  // a break notice, delivered whenever Redis can take it, fails the
  // formation for the others, or breaks the world of any member that
  // already returned it.
  // Members still waiting in its formation (at most `size`) are woken.
  void giveUp(const std::string& world, uint64_t epoch, int rank, int size, const std::string& why);
  // While a shrink or grow forms epoch `epoch` of `world` (this member is
  // `rank` of `members`; `old_rank_of` gives each one's rank in
  // `from_epoch`, -1 for a newcomer): the members' heartbeats are judged
  // every round, and one found dead ends the attempt for every member
  // (formingMemberLost). Again with the same world and epoch: the member
  // list is replaced (a grow learns its newcomers once all claimed).
  void watchForming(const std::string& world, uint64_t epoch, int rank, std::vector<std::string> members,
                    uint64_t from_epoch, std::vector<int> old_rank_of);
  void unwatchForming(const std::string& world, uint64_t epoch);
  // A member of such an attempt is gone (the transport or the heartbeats
  // say so): a break notice on its behalf ends the attempt, waking every
  // member still forming it, and names its old rank among the old epoch's
  // blamed ranks, so that the next shrink with no list excludes it too.
  void formingMemberLost(const std::string& world, uint64_t epoch, int rank, int size, int lost_rank,
                         uint64_t from_epoch, int lost_old_rank, const std::string& why);
  bool storeUp() const { return link_.up(); }
  // What `multiworld status` shows of this member's data paths, asked for
  // each round and written next to the heartbeat when it changed (and
  // with the world records' refresh). Safe from any thread.
  void setPathsReport(std::function<std::string()> report);
  // This member's metrics snapshot as Redis keeps it, asked for when one is
  // due (metrics_publish_ms), with whether Redis is reachable. Safe from
  // any thread.
  void setMetricsReport(std::function<std::string(bool store_up)> report);

 private:
  struct Watched {
    std::weak_ptr<World> world;
    std::string name;
    uint64_t epoch;
    int rank;
    std::vector<std::string> members;
    std::optional<BreakMarker> broken;  // the break, once known, to announce again
    // The watchdog broke it already: its marker and its peers' heartbeats
    // are not read again, and it is not broken again each round (that
    // waits for the data plane's lock, and the heartbeat waits behind it).
    bool settled = false;
  };

  struct Forming {
    std::string world;
    uint64_t epoch = 0;
    int rank = 0;
    std::vector<std::string> members;
    uint64_t from_epoch = 0;
    std::vector<int> old_rank_of;
    bool settled = false;  // a member was found dead: told once
  };

  void run();
  // A shrink's exclusion notice: breaks this member's world when it is
  // one of the excluded.
  void handleExclusion(const ExclusionNotice& n);
  void connect();
  void tick();
  void judgeMarkers(const std::vector<Watched>& worlds, const std::vector<std::optional<std::string>>& markers);
  void judgeBeats(const std::vector<Watched>& worlds, const std::vector<Forming>& forming,
                  const std::set<std::string>& peers, const std::vector<std::optional<std::string>>& beats,
                  Clock::time_point now);
  void handleNotice(const std::string& payload);
  void breakWorlds(const std::string& name, uint64_t epoch, const BreakMarker& marker, const std::string& detail,
                   bool announce, BreakCause cause, Clock::time_point evidence);
  // The writes of this round: the paths report when it changed (or with
  // the records' refresh), the metrics when due.
  void addReports(HeartbeatRound& round, bool refresh);
  void announceAgain();
  void wakeUp();
  std::string heartbeatValue();

  const Config cfg_;
  const Keys keys_;
  const std::string member_;
  const std::string host_;  // with our pid in the heartbeat, for `multiworld status`
  StoreLink link_;          // watchdog thread only, but for up()
  NoticeQueue notices_;

  uint64_t beat_ = 0;       // watchdog thread only, from here on
  PeerLiveness liveness_;
  Clock::time_point last_tick_;
  Clock::time_point judge_after_;  // no verdicts before this (outage, stall)
  int ticks_ = 0;
  std::string paths_written_;  // watchdog thread only
  Clock::time_point next_publish_;  // watchdog thread only
  metrics::ContextMetrics* const metrics_;

  mutable std::mutex m_;
  std::map<const World*, Watched> worlds_;
  std::vector<Forming> forming_;
  // Members of worlds formed since the last tick, with when: forming is
  // proof of life, so the watchdog thread judges them from then on.
  std::vector<std::pair<std::string, Clock::time_point>> formed_;
  std::function<std::string()> paths_report_;
  std::function<std::string(bool store_up)> metrics_report_;
  bool stop_ = false;
  int wake_fd_ = -1;  // eventfd
  std::thread thread_;
};

}  // namespace mw
