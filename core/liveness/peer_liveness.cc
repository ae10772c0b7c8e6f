#include "core/liveness/peer_liveness.h"

#include <algorithm>

#include "core/capped_text.h"
#include "core/store/redis_values.h"

namespace mw {

void PeerLiveness::roundRead(Clock::time_point at) {
  if (last_round_ && at > *last_round_) {
    watched_ += std::min<Clock::duration>(at - *last_round_, most_per_round_);
  }
  last_round_ = at;
  now_ = at;
}

bool PeerLiveness::overdue(const std::string& member, std::optional<std::string_view> value) {
  auto [it, first] = peers_.try_emplace(member);
  Peer& peer = it->second;
  std::optional<Heartbeat> hb;
  if (value) hb = parseHeartbeat(*value);
  if (first || (hb && hb->beat > peer.beat)) {
    if (hb) peer.beat = hb->beat;
    peer.since = watched_;
    peer.since_at = now_;
    return false;
  }
  return silence(peer) + jitter_ >= timeout_;
}

std::string PeerLiveness::describe(int rank, const std::string& member,
                                   std::optional<std::string_view> value) const {
  auto it = peers_.find(member);
  const Peer peer = it == peers_.end() ? Peer{0, watched_, now_} : it->second;
  std::string found;
  if (!value) {
    found = "its heartbeat key is missing";
  } else if (auto hb = parseHeartbeat(*value)) {
    found = "its heartbeat key holds beat " + std::to_string(hb->beat);
  } else {
    found = "its heartbeat key holds '" + cappedText(*value) + "', not a heartbeat";
  }
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto quiet = duration_cast<milliseconds>(now_ - peer.since_at);
  const auto watched = duration_cast<milliseconds>(silence(peer));
  return "rank " + std::to_string(rank) + " sent no new heartbeat for " + std::to_string(quiet.count()) +
         " ms by this member's clock, " + std::to_string(watched.count()) +
         " ms of it watched by timely heartbeat rounds (heartbeat_timeout_ms=" + std::to_string(timeout_.count()) +
         "): the last new one read was " +
         (peer.beat > 0 ? "beat " + std::to_string(peer.beat) : std::string("none")) + ", and " + found;
}

void PeerLiveness::restart(Clock::time_point at) {
  last_round_ = at;
  for (auto& [member, peer] : peers_) {
    peer.since = watched_;
    peer.since_at = at;
  }
}

void PeerLiveness::retain(const std::set<std::string>& members) {
  for (auto it = peers_.begin(); it != peers_.end();) {
    it = members.count(it->first) ? std::next(it) : peers_.erase(it);
  }
}

}  // namespace mw
