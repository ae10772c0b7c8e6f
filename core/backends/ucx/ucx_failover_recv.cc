// The receiving half of UcxFailover (ucx_failover.h): sequence order,
// duplicates, matching by channel, acknowledgements.
#include <cstring>

#include "core/backends/ucx/ucx_endpoint.h"
#include "core/backends/ucx/ucx_failover.h"

namespace mw {
namespace {

// Empty messages may come with null buffers on either side.
void copyOut(void* to, const char* from, size_t n) {
  if (n > 0) std::memcpy(to, from, n);
}

}  // namespace

ucs_status_t UcxFailover::onData(const pathwire::Header& h, void* data, size_t length,
                                 const ucp_am_recv_param_t& param, ucp_worker_h worker, size_t path) {
  if (closed_ || h.from_rank >= peers_.size()) return UCS_OK;
  // Only eager messages are sent; a rendezvous one is not ours to take.
  if (param.recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return UCS_OK;
  Peer& p = peers_[h.from_rank];
  if (path != p.arrival_path) {
    // Path i pairs with the peer's path i: when its messages leave the one
    // this side sends on for a worse one, the peer found that path failing.
    // This side's own timeout would find it one step of a collective later.
    const size_t from = p.arrival_path;
    p.arrival_path = path;
    if (from == p.current && path > from) {
      engine_.defer([w = weak_from_this(), peer = p.rank, from] {
        if (auto f = w.lock()) f->peerMoved(peer, from);
      });
    }
  }
  ucp_ep_h reply = (param.recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param.reply_ep : nullptr;
  if (h.seq <= p.delivered || p.early.count(h.seq)) {
    // A retransmission of what is here: the acknowledgement was lost.
    acknowledge(h, reply, p);
    return UCS_OK;
  }
  Arrival a;
  a.channel = h.channel;
  a.length = length;
  const bool held = (param.recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0;
  bool kept = false;
  auto keep = [&](Arrival& into) {
    // Held by UCX when it lets us (no copy), else copied.
    if (held) {
      into.data = static_cast<const char*>(data);
      into.held_by = worker;
      kept = true;
    } else {
      into.copy.assign(static_cast<const char*>(data), static_cast<const char*>(data) + length);
      into.data = into.copy.data();
    }
  };
  if (h.seq == p.delivered + 1) {
    ++p.delivered;
    auto posted = p.posted.find(h.channel);
    if (posted != p.posted.end() && !posted->second.empty()) {
      a.data = static_cast<const char*>(data);  // copied out at once
      deliver(p, std::move(a));
    } else {
      keep(a);
      p.waiting[h.channel].push_back(std::move(a));
    }
    // What came early follows, in order.
    for (auto next = p.early.find(p.delivered + 1); next != p.early.end(); next = p.early.find(p.delivered + 1)) {
      Arrival e = std::move(next->second);
      p.early.erase(next);
      ++p.delivered;
      auto posted_e = p.posted.find(e.channel);
      if (posted_e != p.posted.end() && !posted_e->second.empty()) {
        deliver(p, std::move(e));
      } else {
        p.waiting[e.channel].push_back(std::move(e));
      }
    }
  } else {
    keep(a);
    p.early.emplace(h.seq, std::move(a));
  }
  acknowledge(h, reply, p);
  return kept ? UCS_INPROGRESS : UCS_OK;
}

// To the oldest receive posted on its channel. A channel's queues go once
// empty: collectives take a new channel for each operation, so kept they
// would grow with every operation a world ever ran.
void UcxFailover::deliver(Peer& p, Arrival a) {
  auto queue = p.posted.find(a.channel);
  Posted r = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) p.posted.erase(queue);
  recv_index_.erase(r.id);
  copyOut(r.buffer, a.data, std::min(r.bytes, a.length));
  release(a);
  r.done(a.length > r.bytes ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK, a.length);
}

void UcxFailover::acknowledge(const pathwire::Header& h, ucp_ep_h reply, const Peer& p) {
  if (!reply) return;
  pathwire::Header ack;
  ack.to_world = h.from_world;
  ack.from_world = world_id_;
  ack.from_rank = static_cast<uint32_t>(rank_);
  ack.seq = p.delivered;
  sendHeader(reply, pathwire::kAck, ack, 0);
}

void UcxFailover::release(Arrival& a) {
  if (a.held_by) ucp_am_data_release(a.held_by, const_cast<char*>(a.data));
  a.held_by = nullptr;
  a.data = nullptr;
  a.copy.clear();
}

uint64_t UcxFailover::recv(int peer, uint64_t channel, void* buffer, size_t bytes, RecvDone done) {
  if (closed_) {
    done(UCS_ERR_CANCELED, 0);
    return 0;
  }
  Peer& p = peers_[static_cast<size_t>(peer)];
  auto waiting = p.waiting.find(channel);
  if (waiting != p.waiting.end() && !waiting->second.empty()) {
    Arrival a = std::move(waiting->second.front());
    waiting->second.pop_front();
    if (waiting->second.empty()) p.waiting.erase(waiting);
    copyOut(buffer, a.data, std::min(bytes, a.length));
    const size_t length = a.length;
    release(a);
    done(length > bytes ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK, length);
    return 0;
  }
  const uint64_t id = next_recv_++;
  p.posted[channel].push_back(Posted{id, buffer, bytes, std::move(done)});
  recv_index_[id] = {peer, channel};
  return id;
}

bool UcxFailover::cancelRecv(uint64_t id) {
  auto it = recv_index_.find(id);
  if (it == recv_index_.end()) return false;
  auto [peer, channel] = it->second;
  recv_index_.erase(it);
  auto& posted = peers_[static_cast<size_t>(peer)].posted;
  auto queue = posted.find(channel);
  if (queue == posted.end()) return false;
  for (auto r = queue->second.begin(); r != queue->second.end(); ++r) {
    if (r->id != id) continue;
    RecvDone done = std::move(r->done);
    queue->second.erase(r);
    if (queue->second.empty()) posted.erase(queue);
    done(UCS_ERR_CANCELED, 0);
    return true;
  }
  return false;
}

bool UcxFailover::arrived(int peer, uint64_t channel) const {
  const Peer& p = peers_[static_cast<size_t>(peer)];
  auto waiting = p.waiting.find(channel);
  return waiting != p.waiting.end() && !waiting->second.empty();
}

void UcxFailover::dropArrivals() {
  for (Peer& p : peers_) {
    for (auto& [channel, queue] : p.waiting) {
      for (Arrival& a : queue) release(a);
    }
    p.waiting.clear();
    for (auto& [seq, a] : p.early) release(a);
    p.early.clear();
  }
}

}  // namespace mw
