// The receiving half of UcxFailover (ucx_failover.h): what arrives goes to
// the peer's ReceiveOrder (core/delivery/receive_order.h), and what it has
// is acknowledged.
#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_endpoint.h"

#include <atomic>

#include "core/heap_trim.h"

namespace mw {

namespace {

// Arrivals wait in UCX's buffers for their receives, and nothing bounds
// how many (a peer streams as long as this side acknowledges). A message
// of several segments comes in a buffer UCX took from the heap, and once a
// burst of them drained glibc keeps the freed memory (core/heap_trim.h).
// So after a burst of kBurstBytes or more drained to kDrainedBytes, the
// heap's free memory goes back to the system.
constexpr size_t kBurstBytes = 8 << 20;
constexpr size_t kDrainedBytes = 1 << 20;

// For every context of the process: the heap is the process's.
std::atomic<size_t> lent_bytes{0};
std::atomic<bool> burst{false};  // kBurstBytes were lent since the last trim

void lent(size_t bytes) {
  if (lent_bytes.fetch_add(bytes) + bytes >= kBurstBytes) burst.store(true);
}

void returned(size_t bytes) {
  if (lent_bytes.fetch_sub(bytes) - bytes > kDrainedBytes || !burst.load()) return;
  if (trimHeap()) burst.store(false);
}

}  // namespace

ucs_status_t UcxFailover::onData(const pathwire::Header& h, void* data, size_t length,
                                 const ucp_am_recv_param_t& param, ucp_worker_h worker, size_t path) {
  if (closed_ || h.from_rank >= peers_.size()) return UCS_OK;
  // Only eager messages are sent; a rendezvous one is not ours to take.
  if (param.recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return UCS_OK;
  Peer& p = peers_[h.from_rank];
  if (metrics_) metrics_->receivedOnRail(path, length);
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
  // UCX lets an arrival be held (no copy) when it says so.
  void* lender = (param.recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) ? worker : nullptr;
  const ReceiveOrder::Taken taken =
      p.receiving.arrive(h.seq, h.channel, static_cast<const char*>(data), length, lender);
  if (taken == ReceiveOrder::Taken::Held) lent(length);
  if (taken != ReceiveOrder::Taken::Duplicate) p.heard = Clock::now();
  // A duplicate is a retransmission of what is here: its acknowledgement
  // was lost, so it goes again.
  acknowledge(h, reply, p);
  return taken == ReceiveOrder::Taken::Held ? UCS_INPROGRESS : UCS_OK;
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

void UcxFailover::releaseArrival(void* worker, const char* data, size_t length) {
  ucp_am_data_release(static_cast<ucp_worker_h>(worker), const_cast<char*>(data));
  returned(length);
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
