// The receiving half of UcxFailover (ucx_failover.h): what arrives goes to
// the peer's ReceiveOrder (core/delivery/receive_order.h), and what it has
// is acknowledged.
#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_endpoint.h"

#include <new>

namespace mw {

void UcxFailover::onData(const pathwire::Header& h, const void* data, size_t length, const ucp_am_recv_param_t& param,
                         size_t path) {
  if (closed_ || h.from_rank >= peers_.size()) return;
  // Only eager messages are sent; a rendezvous one is not ours to take.
  if (param.recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return;
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
  ReceiveOrder::Taken taken;
  try {
    taken = p.receiving.arrive(h.seq, h.channel, static_cast<const char*>(data), length);
  } catch (const std::bad_alloc&) {
    return;  // not acknowledged: it comes again
  }
  if (taken != ReceiveOrder::Taken::Duplicate) p.heard = Clock::now();
  // A duplicate is a retransmission of what is here: its acknowledgement
  // was lost, so it goes again.
  acknowledge(h, reply, p);
}

void UcxFailover::acknowledge(const pathwire::Header& h, ucp_ep_h reply, const Peer& p) {
  if (!reply) return;
  pathwire::Header ack;
  ack.to_world = h.from_world;
  ack.from_world = world_id_;
  ack.from_rank = static_cast<uint32_t>(rank_);
  ack.seq = p.receiving.delivered();
  sendHeader(reply, pathwire::kAck, ack, 0);
}

uint64_t UcxFailover::recv(int peer, uint64_t channel, void* buffer, size_t bytes, RecvDone done) {
  if (closed_) {
    done(DeliveryOutcome::GivenUp, 0);
    return 0;
  }
  return peers_[static_cast<size_t>(peer)].receiving.post(channel, buffer, bytes, std::move(done));
}

bool UcxFailover::cancelRecv(int peer, uint64_t id) {
  if (closed_ || peer < 0 || static_cast<size_t>(peer) >= peers_.size()) return false;
  return peers_[static_cast<size_t>(peer)].receiving.cancel(id);
}

bool UcxFailover::arrived(int peer, uint64_t channel) const {
  return peers_[static_cast<size_t>(peer)].receiving.waiting(channel);
}

void UcxFailover::dropArrivals() {
  for (Peer& p : peers_) p.receiving.dropArrivals();
}

}  // namespace mw
