// When a peer counts as dead, judged from its heartbeat values as one
// process's watchdog reads them: a peer is overdue when this process has
// read no new beat from it (a larger beat counter) for heartbeat_timeout_ms
// of watched time. Whether the key exists says nothing by itself: a
// failover with replication lag, an eviction or an operator's DEL can drop
// it, and the peer's next beat writes it again.
//
// Watched time is this process's monotonic clock as its heartbeat rounds
// saw it: each round that read Redis adds the time since the last one, but
// at most one interval and the jitter. So what this process could not
// watch counts against no peer: a round that failed (Redis paused or gone),
// one that took long to answer (Redis stalled), one that ran late (this
// watchdog starved of CPU, or the process stopped). A peer stopped while
// the rounds run on time is still overdue after the timeout; while every
// round runs late, after timeout / (interval + jitter) rounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/deadline.h"

namespace mw {

class PeerLiveness {
 public:
  // `interval`: how often the watchdog reads. A quarter of it is the
  // jitter allowed between two reads an exact number of intervals apart,
  // so a verdict falls on the read it is due, not one interval later
  // because that read ran a little earlier after its tick than the one
  // that saw the last beat.
  PeerLiveness(std::chrono::milliseconds timeout, std::chrono::milliseconds interval)
      : timeout_(timeout), jitter_(interval / 4), most_per_round_(interval + interval / 4) {}

  // A heartbeat round read Redis; its replies came at `at`. Call before
  // judging what it read. The first round watches nothing yet.
  void roundRead(Clock::time_point at);

  // Records what the last round read for `member` (nullopt: no key). The
  // first read of a peer counts as alive. True when the peer is overdue: no
  // new beat read for the timeout (less the jitter) of watched time.
  bool overdue(const std::string& member, std::optional<std::string_view> value);

  // What was observed of an overdue peer, for the break's message.
  std::string describe(int rank, const std::string& member, std::optional<std::string_view> value) const;

  // Judges every known peer from `at` on, as if each had just been seen:
  // after an outage or a failover, what Redis last showed says nothing.
  void restart(Clock::time_point at);

  // Forgets peers not in `members`.
  void retain(const std::set<std::string>& members);

 private:
  struct Peer {
    uint64_t beat = 0;               // the largest beat read so far
    Clock::duration since{};         // watched_ when it was first read, or the peer first seen
    Clock::time_point since_at;      // the same moment by the clock, for messages
  };
  Clock::duration silence(const Peer& p) const { return watched_ - p.since; }

  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds jitter_;
  const std::chrono::milliseconds most_per_round_;  // what one round may add to the watched time
  Clock::duration watched_{};                      // watched time so far
  std::optional<Clock::time_point> last_round_;    // when the last round read, or the judgement restarted
  Clock::time_point now_;                          // when the last round read
  std::map<std::string, Peer> peers_;
};

}  // namespace mw
