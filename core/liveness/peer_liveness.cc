#include "core/liveness/peer_liveness.h"

#include "core/capped_text.h"
#include "core/store/redis_values.h"

namespace mw {

bool PeerLiveness::overdue(const std::string& member, std::optional<std::string_view> value,
                           Clock::time_point at) {
  auto [it, first] = peers_.try_emplace(member);
  Peer& peer = it->second;
  std::optional<Heartbeat> hb;
  if (value) hb = parseHeartbeat(*value);
  if (first || (hb && hb->beat > peer.beat)) {
    if (hb) peer.beat = hb->beat;
    peer.changed = at;
    return false;
  }
  return at - peer.changed + jitter_ >= timeout_;
}

std::string PeerLiveness::describe(int rank, const std::string& member, std::optional<std::string_view> value,
                                   Clock::time_point at) const {
  auto it = peers_.find(member);
  const Peer peer = it == peers_.end() ? Peer{0, at} : it->second;
  std::string found;
  if (!value) {
    found = "its heartbeat key is missing";
  } else if (auto hb = parseHeartbeat(*value)) {
    found = "its heartbeat key holds beat " + std::to_string(hb->beat);
  } else {
    found = "its heartbeat key holds '" + cappedText(*value) + "', not a heartbeat";
  }
  auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(at - peer.changed);
  return "rank " + std::to_string(rank) + " sent no new heartbeat for " + std::to_string(quiet.count()) +
         " ms by this member's clock (heartbeat_timeout_ms=" + std::to_string(timeout_.count()) +
         "): the last new one read was " +
         (peer.beat > 0 ? "beat " + std::to_string(peer.beat) : std::string("none")) + ", and " + found;
}

std::optional<Clock::time_point> PeerLiveness::dueAt() const {
  std::optional<Clock::time_point> due;
  for (const auto& [member, peer] : peers_) {
    const Clock::time_point at = peer.changed + timeout_ - jitter_;
    if (!due || at < *due) due = at;
  }
  return due;
}

std::optional<Clock::time_point> PeerLiveness::lastNews(const std::string& member) const {
  auto it = peers_.find(member);
  if (it == peers_.end()) return std::nullopt;
  return it->second.changed;
}

void PeerLiveness::restart(Clock::time_point at) {
  for (auto& [member, peer] : peers_) peer.changed = at;
}

void PeerLiveness::seen(const std::string& member, Clock::time_point at) {
  auto it = peers_.find(member);
  if (it != peers_.end() && it->second.changed < at) it->second.changed = at;
}

void PeerLiveness::retain(const std::set<std::string>& members) {
  for (auto it = peers_.begin(); it != peers_.end();) {
    it = members.count(it->first) ? std::next(it) : peers_.erase(it);
  }
}

}  // namespace mw
