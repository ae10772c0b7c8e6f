// When a peer counts as dead, judged from its heartbeat values as one
// process's watchdog reads them: a peer is overdue when this process has
// read no new beat from it (a larger beat counter) for heartbeat_timeout_ms
// of its own monotonic clock. Whether the key exists says nothing by
// itself: a failover with replication lag, an eviction or an operator's DEL
// can drop it, and the peer's next beat writes it again.
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
      : timeout_(timeout), jitter_(interval / 4) {}

  // Records what a read at `at` found for `member` (nullopt: no key). The
  // first read of a peer counts as alive. True when the peer is overdue: no
  // new beat read for the timeout (less the jitter).
  bool overdue(const std::string& member, std::optional<std::string_view> value, Clock::time_point at);

  // What was observed of an overdue peer, for the break's message.
  std::string describe(int rank, const std::string& member, std::optional<std::string_view> value,
                       Clock::time_point at) const;

  // Judges every known peer from `at` on, as if each had just been seen:
  // after a failover, what the old master last showed says nothing.
  void restart(Clock::time_point at);
  // Judges `member` from `at` on (if that is later than its last new
  // beat): it gave other proof of life then.
  void seen(const std::string& member, Clock::time_point at);

  // When the first known peer falls overdue if no new beat is read before
  // then; nullopt with no peers. A read at that moment gives the verdict
  // on time rather than at the next tick, up to one interval later.
  std::optional<Clock::time_point> dueAt() const;

  // When a new beat of `member` was last read (its last sign of life);
  // nullopt for a peer not known.
  std::optional<Clock::time_point> lastNews(const std::string& member) const;

  // Forgets peers not in `members`.
  void retain(const std::set<std::string>& members);

 private:
  struct Peer {
    uint64_t beat = 0;          // the largest beat read so far
    Clock::time_point changed;  // when it was first read, or the peer first seen
  };
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds jitter_;
  std::map<std::string, Peer> peers_;
};

}  // namespace mw
