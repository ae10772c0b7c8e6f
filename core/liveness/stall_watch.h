// Which of a world's operations have waited long on a peer that has not
// posted its part, so that the peer is named (MW_EVENT_PEER_STALLED) and,
// with stall_timeout_ms, blamed for a break.
//
// An operation waits on a stream position: the n-th operation of a
// stream, which a peer reaches by posting its own n-th operation of that
// stream. A collective waits on every other member at its place in the
// world's stream of collectives; a receive waits on its sender at its
// place among the sends that sender posts to this member. The owner
// numbers the streams and the positions; this class only keeps time.
//
// Once an operation has waited `report` on a peer, the owner asks that
// peer how far it has posted in the stream (due()), over the world's own
// connections, where the peer's engine answers while its application is
// blocked. An answer short of the position names the peer as behind,
// once per operation and peer (answered()). An answer at or past it says
// the peer posted its part and waits on someone else, or the data is on
// its way: nothing is named, and the peer is asked again after another
// `report`. With `timeout` set, an operation still waiting that long on a
// peer that is behind breaks the world, blaming that peer.
//
// No transport and no locks: owned by one thread (for UCX worlds, the
// engine's owner), which passes the time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "core/deadline.h"

namespace mw {

class StallWatch {
 public:
  struct Settings {
    std::chrono::milliseconds report{2000};  // stall_report_ms; 0: never
    std::chrono::milliseconds timeout{0};    // stall_timeout_ms; 0: never
  };
  // An operation's place: the `position`-th (from 1) of `stream`.
  struct Place {
    uint64_t stream = 0;
    uint64_t position = 0;
    bool operator<(const Place& o) const { return std::tie(stream, position) < std::tie(o.stream, o.position); }
  };
  struct Ask {
    int peer = 0;
    uint64_t stream = 0;
  };
  struct Stalled {
    int peer = 0;
    Place waiting;             // the oldest operation of the stream waiting on it
    uint64_t peer_posted = 0;  // how far the peer had posted in the stream
    std::chrono::milliseconds waited{0};
    bool timed_out = false;    // waited stall_timeout_ms: break, blaming `peer`
  };

  explicit StallWatch(Settings s) : settings_(s) {}

  // An operation at `place` began waiting on `peer` at `since`.
  void waiting(Place place, int peer, Clock::time_point since);
  // It waits on `peer` no more (its part came, or it ended).
  void done(Place place, int peer);
  // Every operation waiting on `peer` ends (it left, or the world broke).
  void forget(int peer);

  // The peers to ask now, once per peer and stream, about the oldest
  // operation of that stream waiting on them `report` or longer and not
  // asked in the last `report`.
  std::vector<Ask> due(Clock::time_point now);
  // `peer` has posted up to `posted` in `stream`. What to report: the
  // oldest operation of the stream that waits on it, when the peer is
  // behind it and it was not reported yet (or has now timed out).
  std::optional<Stalled> answered(int peer, uint64_t stream, uint64_t posted, Clock::time_point now);
  // A peer found behind earlier that has still not answered past the
  // operation, once it has waited stall_timeout_ms: break.
  std::optional<Stalled> timedOut(Clock::time_point now);

  // When due() or timedOut() next has something; nullopt: nothing waits.
  std::optional<Clock::time_point> nextDue();
  bool empty() const { return waits_.empty(); }

 private:
  struct Wait {
    Clock::time_point since;
    Clock::time_point asked;   // when the peer was last asked about it
    bool ever_asked = false;
    bool behind = false;       // the last answer was short of it
    uint64_t peer_posted = 0;  // that answer
    bool reported = false;
    bool timed_out = false;
  };
  using Key = std::tuple<int, uint64_t, uint64_t>;  // peer, stream, position

  Stalled stalled(const Key& k, const Wait& w, Clock::time_point now) const;
  // Calls f(key, wait) for the oldest operation of each (peer, stream):
  // the one a peer is asked about.
  template <typename F>
  void eachOldest(F&& f);

  const Settings settings_;
  std::map<Key, Wait> waits_;  // in order of peer, stream, position: the oldest first
};

}  // namespace mw
