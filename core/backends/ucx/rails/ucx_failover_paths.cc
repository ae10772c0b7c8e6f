// Path health for UcxFailover (ucx_failover.h): faults, probes, recovery,
// and the timer that judges silence.
#include <algorithm>

#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/rails/ucx_path_sockets.h"
#include "core/backends/ucx/ucx_endpoint.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {

constexpr int kFirstAckGrace = 5;  // path timeouts

}  // namespace

// ---------------------------------------------------------------- paths

void UcxFailover::onEndpointError(int peer, uint64_t serial, ucs_status_t status) {
  if (closed_) return;
  Peer& p = peers_[static_cast<size_t>(peer)];
  for (Path& path : p.paths) {
    if (path.probe_serial == serial && path.probe_ep) {
      closeEndpoint(path.probe_ep, path.probe_serial);  // the probe failed: the next one tries again
      return;
    }
    if (path.ep_serial == serial && path.ep) {
      // UCX tells at once; one path timeout stands for how long it was
      // silent before, as for any fault found by a timeout.
      pathFault(peer, path.index, std::string("UCX reported ") + ucs_status_string(status),
                Clock::now() - path_timeout_);
      return;
    }
  }
}

bool UcxFailover::moveTo(const Peer& p, Path& path, PathState next) {
  const PathState was = path.state;
  if (pathTransition(path.state, next)) return true;
  MW_LOG(LogLevel::Error, "%s: no transition from %s to %s; it stays %s", pathName(p, path).c_str(),
         pathStateName(was), pathStateName(next), pathStateName(was));
  return false;
}

void UcxFailover::pathFault(int peer, size_t index, const std::string& why, Clock::time_point silent_since) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  Path& path = p.paths[index];
  if (closed_ || p.left || pathIsDown(path.state)) return;
  // A process that died is a member fault: its world breaks (through the
  // link that watches it), nothing is retried.
  if (hooks_.gone && hooks_.gone(peer)) return;
  if (closed_) return;
  // What was outstanding as the fault was found, before closing the
  // endpoint settles what UCX held.
  PathChange change = pathChange(p, path);
  if (!moveTo(p, path, PathState::Seeking)) return;
  path.announced = true;
  path.probes = 0;
  path.silent_since = silent_since;
  ucp_ep_h ep = path.ep;
  const uint64_t serial = path.ep_serial;
  path.ep = nullptr;
  const bool was_current = index == p.current;
  const bool moved = chooseCurrent(p);
  if (was_current && moved) change.failover_stall = Clock::now() - silent_since;
  // Else closing it may hold the engine until the link is back
  // (ucx_path_sockets.h).
  const size_t shut = shutDownConnections(path.local_ip, path.peer_ip, path.peer_probe_port);
  // Completes what UCX held on it (Cancelled): the state above is final
  // by then, so what those completions send goes the new way.
  closeEndpoint(ep, serial);
  MW_LOG(LogLevel::Info, "%s is down: %s (%zu connections shut down)", pathName(p, path).c_str(), why.c_str(), shut);
  if (hooks_.path_changed) {
    hooks_.path_changed(peer, false, change, pathName(p, path) + " is down: " + why);
  }
  if (closed_) return;
  if (was_current && moved) retransmit(p);
  router_.pathFailed(index);
  armTimer();
}

bool UcxFailover::chooseCurrent(Peer& p) {
  size_t fallback = p.paths.size();
  for (size_t i = 0; i < p.paths.size(); ++i) {
    if (pathIsDown(p.paths[i].state)) continue;
    if (p.paths[i].state == PathState::Up) {
      p.current = i;
      return true;
    }
    fallback = std::min(fallback, i);
  }
  if (fallback == p.paths.size()) return false;
  p.current = fallback;
  return true;
}

void UcxFailover::suspectPath(size_t index) {
  for (Peer& p : peers_) {
    if (closed_) return;
    if (p.connected && !p.left && index < p.paths.size()) suspect(p, p.paths[index]);
  }
}

void UcxFailover::suspect(Peer& p, Path& path) {
  if (closed_ || p.left || path.state != PathState::Up || !path.ep) return;
  moveTo(p, path, PathState::InDoubt);
  path.suspect_since = Clock::now();
  path.suspect_nonce = next_serial_++;
  sendProbe(p, path, path.ep, path.suspect_nonce);
  if (p.current == path.index) chooseAgain(p);
  armTimer();
}

// What went on the path used before may be lost (it may be the dead one,
// unnoticed), and silence is charged to the current path: it all goes
// again on the new one. The receiver drops what it already has.
void UcxFailover::chooseAgain(Peer& p) {
  const size_t was = p.current;
  chooseCurrent(p);
  if (p.current != was) retransmit(p);
}

void UcxFailover::peerMoved(int peer, size_t from) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (closed_ || from >= p.paths.size() || p.current != from) return;
  suspect(p, p.paths[from]);
}

// A path that is down is asked at the TCP level first (a connection to
// the peer's probe port, renewed every fourth tick while unanswered), then,
// once that works, at the UCX level: an endpoint and a probe message,
// answered over the connection it came on. A path whose TCP probe worked
// but whose UCX probe stays unanswered for eight ticks starts over.
void UcxFailover::probe(Peer& p, Path& path) {
  ++path.probes;
  if (path.state == PathState::Seeking) {
    if (!path.reach || !path.reach->pending() || path.probes % 4 == 0) startReach(p, path);
    return;
  }
  if (path.probes % 8 == 0) {
    moveTo(p, path, PathState::Seeking);
    closeEndpoint(path.probe_ep, path.probe_serial);
    startReach(p, path);
    return;
  }
  if (path.probes % 2 == 0) probeUcx(p, path);
}

void UcxFailover::startReach(Peer& p, Path& path) {
  try {
    path.reach = std::make_unique<UcxReachProbe>(
        engine_, path.peer_ip, path.peer_probe_port,
        [w = weak_from_this(), peer = p.rank, index = path.index](bool reached) {
          if (auto f = w.lock()) f->onReach(peer, index, reached);
        });
  } catch (const Error& e) {
    // Out of fds, say: the next tick tries again.
    path.reach.reset();
    MW_LOG(LogLevel::Warn, "probing %s: %s", pathName(p, path).c_str(), e.what());
  }
}

void UcxFailover::onReach(int peer, size_t index, bool reached) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  Path& path = p.paths[index];
  std::unique_ptr<UcxReachProbe> done = std::move(path.reach);  // freed after this call
  if (closed_ || p.left || !pathIsDown(path.state) || !reached) return;
  if (path.state == PathState::Seeking) moveTo(p, path, PathState::Answering);
  path.probes = 0;
  probeUcx(p, path);
}

void UcxFailover::probeUcx(Peer& p, Path& path) {
  if (!path.probe_ep) {
    try {
      path.probe_ep = openEndpoint(p, path.index, path.probe_serial);
    } catch (const Error& e) {
      MW_LOG(LogLevel::Debug, "probing %s: %s", pathName(p, path).c_str(), e.what());
      return;
    }
  }
  path.probe_nonce = next_serial_++;
  sendProbe(p, path, path.probe_ep, path.probe_nonce);
}

// Answered over the connection it goes on (onProbe), with `nonce`.
void UcxFailover::sendProbe(const Peer& p, const Path& path, ucp_ep_h ep, uint64_t nonce) {
  pathwire::Header h;
  h.to_world = p.world_id;
  h.from_world = world_id_;
  h.from_rank = static_cast<uint32_t>(rank_);
  h.path = static_cast<uint32_t>(path.index);
  h.seq = nonce;
  sendHeader(ep, pathwire::kProbe, h, UCP_AM_SEND_FLAG_REPLY);
}

void UcxFailover::onProbe(const pathwire::Header& h, const ucp_am_recv_param_t& param) {
  if (closed_ || !(param.recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) || !param.reply_ep) return;
  // The answer goes back on the connection the probe came on: that is the
  // path being tested, whatever this side's own endpoint on it is doing.
  pathwire::Header answer = h;
  answer.to_world = h.from_world;
  answer.from_world = world_id_;
  answer.from_rank = static_cast<uint32_t>(rank_);
  sendHeader(param.reply_ep, pathwire::kProbeAck, answer, 0);
}

void UcxFailover::onProbeAck(const pathwire::Header& h) {
  if (closed_ || h.from_rank >= peers_.size()) return;
  Peer& p = peers_[h.from_rank];
  if (h.path >= p.paths.size()) return;
  // Inside progress: the switch waits until it returned.
  engine_.defer([w = weak_from_this(), peer = p.rank, index = size_t{h.path}, nonce = h.seq] {
    if (auto f = w.lock()) f->pathUp(peer, index, nonce);
  });
}

void UcxFailover::pathUp(int peer, size_t index, uint64_t nonce) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  Path& path = p.paths[index];
  if (!closed_ && !p.left && path.state == PathState::InDoubt && path.suspect_nonce == nonce) {
    moveTo(p, path, PathState::Up);  // it answered: the failure was elsewhere
    chooseAgain(p);
    return;
  }
  if (closed_ || p.left || !pathIsDown(path.state) || !path.probe_ep || path.probe_nonce != nonce) return;
  // Read before the move: when every path was down, `current` still names
  // one of them, possibly this one.
  const bool all_were_down = pathIsDown(p.paths[p.current].state);
  if (!moveTo(p, path, PathState::Up)) return;
  path.ep = path.probe_ep;
  path.ep_serial = path.probe_serial;
  path.probe_ep = nullptr;
  path.probe_serial = 0;
  path.proven = false;
  path.reach.reset();
  const bool announced = path.announced;
  path.announced = false;
  // A preferred path takes new traffic at once, and what is unacknowledged
  // goes again on it, as in chooseAgain. After an outage of every path it
  // goes again even on the path it was sent on: that endpoint closed, and
  // what it held ended with it.
  const bool moved = all_were_down || index < p.current;
  if (moved) p.current = index;
  p.reported_unreachable = false;
  if (announced) {
    MW_LOG(LogLevel::Info, "%s is up again", pathName(p, path).c_str());
    if (hooks_.path_changed) {
      hooks_.path_changed(peer, true, pathChange(p, path), pathName(p, path) + " carries traffic again");
    }
  }
  if (moved && !closed_) retransmit(p);
}

// ---------------------------------------------------------------- timer

void UcxFailover::armTimer() {
  if (timer_ || closed_) return;
  // Every deadline made after this is at least a path timeout away, later
  // than this wake-up: onTimer finds it then.
  const auto now = Clock::now();
  if (next_tick_ <= now) next_tick_ = now + path_timeout_ / 2;
  wakeAt(std::min(next_tick_, nextDeadline()));
}

void UcxFailover::wakeAt(Clock::time_point when) {
  when = std::max(when, Clock::now() + std::chrono::milliseconds(1));
  timer_ = engine_.schedule(when, [w = weak_from_this()] {
    if (auto f = w.lock()) f->onTimer();
  });
}

std::chrono::milliseconds UcxFailover::ackAllowance(const Peer& p) const {
  // A new connection's first acknowledgement may wait for UCX to connect
  // the way back: that is not yet silence.
  return p.paths[p.current].proven ? path_timeout_ : kFirstAckGrace * path_timeout_;
}

// The earliest moment a silence can become a fault.
Clock::time_point UcxFailover::nextDeadline() const {
  Clock::time_point first = Clock::time_point::max();
  for (const Peer& p : peers_) {
    if (!p.connected || p.left || p.paths.empty()) continue;
    if (p.sending.awaitingAcknowledgement() && !pathIsDown(p.paths[p.current].state)) {
      first = std::min(first, p.sending.progress() + ackAllowance(p));
    }
    for (const Path& path : p.paths) {
      if (path.state == PathState::InDoubt) first = std::min(first, path.suspect_since + path_timeout_);
    }
  }
  return first;
}

UcxFailover::Reach UcxFailover::reach() const {
  Reach r;
  for (const Peer& p : peers_) {
    if (p.rank == rank_ || !p.connected || p.left || p.paths.empty()) continue;
    ++r.peers;
    // A path in doubt, or one never used since it was proven (it has no
    // endpoint, so a rail fault could not put it in doubt), shows nothing
    // about now.
    for (const Path& path : p.paths) r.reachable = r.reachable || (path.state == PathState::Up && path.ep);
  }
  return r;
}

// At each deadline, and every half path timeout while anything is
// unacknowledged or a path is down: judges silence (at its deadline: a
// fault found a tick late doubles in a ring, where the next hop's own
// timeout starts only after the first failover), and on the tick probes
// what is down and gives up on a peer that no path reaches.
void UcxFailover::onTimer() {
  timer_ = 0;
  if (closed_) return;
  const auto now = Clock::now();
  const bool tick = now >= next_tick_;
  if (tick) {
    next_tick_ = now + path_timeout_ / 2;
    router_.noteReach(now);
  }
  bool needed = false;
  for (Peer& p : peers_) {
    if (!p.connected || p.left || p.paths.empty()) continue;
    Path& current = p.paths[p.current];
    if (!p.sending.empty() && !pathIsDown(current.state)) {
      needed = true;
      // Silence is the current path's only while an answer is due. A
      // message the peer acknowledged, held by a copy on a path in doubt,
      // waits for that path's own verdict, which closes its endpoint and
      // releases it.
      if (p.sending.awaitingAcknowledgement() && now - p.sending.progress() >= ackAllowance(p)) {
        pathFault(p.rank, current.index,
                  "no acknowledgement for " + std::to_string(path_timeout_.count()) + " ms (path_timeout_ms; " +
                      p.sending.summary() + ")",
                  p.sending.progress());
        if (closed_) return;
      }
    }
    for (Path& path : p.paths) {
      if (path.state != PathState::InDoubt) continue;
      needed = true;
      // Unanswered, it is down like any path that went silent: its
      // endpoint closes (and with it what UCX still holds on it), and the
      // probes that bring it back start. Kept, a connection that lived
      // through a cut resumes only at TCP's next retransmission, seconds
      // after the link is back.
      if (now - path.suspect_since >= path_timeout_) {
        pathFault(p.rank, path.index,
                  "no answer to a probe for " + std::to_string(path_timeout_.count()) +
                      " ms (path_timeout_ms) after the same local path failed toward another peer",
                  path.suspect_since);
        if (closed_) return;
      }
    }
    if (!tick) {
      for (const Path& path : p.paths) needed = needed || pathIsDown(path.state);
      continue;
    }
    Clock::time_point first_silent = Clock::time_point::max();
    bool all_down = true;
    for (Path& path : p.paths) {
      if (!pathIsDown(path.state)) {
        all_down = false;
        continue;
      }
      needed = true;
      first_silent = std::min(first_silent, path.silent_since);
      probe(p, path);
    }
    // Silent since the first fault's silence began (for a path found by
    // its unacknowledged traffic: since the last answer, however long the
    // allowance of a new connection was), or since the peer was last
    // heard, if later: a path that went down long ago while another
    // carried the traffic is no silence of the peer's, and a brief fault of
    // the last path left must not count from it.
    const Clock::time_point silent_since = std::max(first_silent, p.heard);
    if (all_down && hooks_.unreachable && !p.reported_unreachable && now - silent_since >= member_timeout_) {
      p.reported_unreachable = true;
      const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - silent_since);
      const std::string how = " is down and nothing came from it for " + std::to_string(silent.count()) +
                              " ms (heartbeat_timeout_ms=" + std::to_string(member_timeout_.count()) + ")";
      // Cut off from every peer, this member is the one at fault: its
      // peers, which still reach others, are not to be blamed.
      if (router_.cutOffSince(silent_since)) {
        hooks_.unreachable(rank_, "every path to rank " + std::to_string(p.rank) + how + ", and rank " +
                                      std::to_string(rank_) + " reached no peer at all in that time: it is the one "
                                                              "cut off");
      } else {
        hooks_.unreachable(p.rank, "every path to rank " + std::to_string(p.rank) + how +
                                       " while its process may be alive");
      }
      if (closed_) return;
    }
  }
  if (needed) armTimer();  // a fault above may have armed it already
}

}  // namespace mw
