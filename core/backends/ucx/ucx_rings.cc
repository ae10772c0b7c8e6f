// The same-host rings of UCX worlds (core/same_host/ring_pair.h): between
// two members of one host every message goes through a ring of shared
// memory instead of TCP on loopback; one of same_host_min_bytes or more
// (or larger than the ring takes) is lent, and only its descriptor goes.
//
// Which direction takes a ring is settled before the world starts, so a
// pair's messages never switch from UCX to a ring midway (their order
// would be lost): once its endpoints are set up, each member sends every
// member of its host by the records a same-host hello on channel
// kSameHost, offering the ring it writes (when same_host_path is on) and
// saying whether it reads the peer (its probe). A member takes the peer's
// ring when it reads the peer and a ring was offered, and writes its own
// when the peer said it reads this member. Nothing that was said can be
// taken back, so a ring this member cannot take after all fails the
// world's formation.
//
// A member that leaves puts its goodbye in the ring after everything it
// sent; a ring the peer writes nonsense into breaks the world, naming it.
// Everything here runs on the engine's owner.
#include "core/backends/ucx/ucx_rings.h"

#include <cstring>

#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/error.h"

namespace mw {
namespace {

// The ring each member of a pair writes; a multiple of the page size.
constexpr uint64_t kRingBytes = 256 * 1024;

}  // namespace

samehost::RingPair* UcxWorld::ring(int peer, bool recv) const {
  const Peer& p = peers_[static_cast<size_t>(peer)];
  return (recv ? p.reads : p.lends) ? p.ring.get() : nullptr;
}

void UcxWorld::sendSameHostHellos() {
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (!p.same_host_hello) continue;
    if (same_host_) p.ring = std::make_unique<samehost::RingPair>(kRingBytes);  // throws, naming the call
    auto h = std::make_unique<SameHostHello>();
    h->peer = r;
    h->out.reads = p.reads ? 1 : 0;
    if (p.ring) {
      const samehost::RingFds fds = p.ring->offer();
      h->out.offered = 1;
      h->out.memfd = fds.memfd;
      h->out.wake_fd = fds.wake_fd;
      h->out.space_fd = fds.space_fd;
      h->out.capacity = fds.capacity;
    }
    SameHostHello* raw = h.get();
    hellos_.push_back(std::move(h));
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &SameHostHello::onReceived;
    param.user_data = raw;
    void* rr = ucp_tag_recv_nbx(worker(), &raw->in, sizeof raw->in, recvTag(r, ucxtag::kSameHost), ucxtag::kExact,
                                &param);
    if (UCS_PTR_IS_ERR(rr)) {
      raw->received = true;
      raw->recv_status = UCS_PTR_STATUS(rr);
    } else if (!raw->received) {
      raw->recv_request = rr;
    }
    ucp_request_param_t send{};
    send.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    send.cb.send = &SameHostHello::onSent;
    send.user_data = raw;
    void* sr = ucp_tag_send_nbx(endpoint(r), &raw->out, sizeof raw->out, sendTag(r, ucxtag::kSameHost), &send);
    if (UCS_PTR_IS_PTR(sr)) raw->send_request = sr;  // a failure fails the link, which the wait sees
  }
  if (!hellos_.empty()) engine().needProgress();
}

bool UcxWorld::sameHostHellosIn() const {
  for (const auto& h : hellos_) {
    if (!h->received && !peers_[static_cast<size_t>(h->peer)].link->failed()) return false;
  }
  return true;
}

void UcxWorld::takeRings() {
  for (const auto& h : hellos_) {
    const int r = h->peer;
    Peer& p = peers_[static_cast<size_t>(r)];
    const std::string who = "rank " + std::to_string(r) + " (pid " + std::to_string(p.link->pid()) + ")";
    if (p.link->failed()) throw Error(Status::Backend, "world rendezvous: " + who + " is unreachable: " + p.link->failure());
    if (h->recv_status != UCS_OK || h->recv_length != sizeof h->in || h->in.magic != UcxSameHostHelloMessage::kMagic) {
      throw Error(Status::Backend, "world rendezvous: the same-host hello of " + who + " is not one (" +
                                       std::to_string(h->recv_length) + " bytes, " + ucs_status_string(h->recv_status) +
                                       ")");
    }
    p.lends = p.ring && h->in.reads;
    if (p.reads && h->in.offered && p.ring) {
      const samehost::RingFds fds{h->in.memfd, h->in.wake_fd, h->in.space_fd, h->in.capacity};
      try {
        p.ring->attach(peerPidfd(r), fds);
      } catch (const Error& e) {
        // It writes into its ring from its start on, for this member to read.
        throw Error(Status::Backend, "world rendezvous: taking the same-host ring of " + who + " failed: " + e.what());
      }
    } else {
      p.reads = false;  // it sends over UCX
    }
    if (!p.reads && !p.lends) {
      p.ring.reset();
      continue;
    }
    if (p.reads) {
      p.ring->onMatched([this, r](uint32_t marker) { sendControlWord(r, ucxcontrol::kMatched | marker); });
      // Returns and matches come in the ring when the peer writes one to this member.
      p.ring->onWord([this, r](uint64_t word) {
        if (!takeWord(r, word) && world_ && !aborted_) {
          transportFailed(r, "rank " + std::to_string(r) + " sent an unknown control word " + std::to_string(word));
        }
      });
    }
    UcxEngine::Source source;
    source.poll = [this, r] { return pollRing(r); };
    samehost::RingPair* ring = p.ring.get();
    source.arm = [ring] { return ring->armWake(); };
    source.disarm = [ring] { ring->disarmWake(); };
    if (p.reads) source.fds.push_back(ring->wakeFd());
    if (p.lends) source.fds.push_back(ring->spaceFd());
    source.peer_pid = p.link->pid();
    p.ring_source = engine().addSource(std::move(source));
  }
  abandonHellos();  // each was received; a send UCX still holds ends on its own
}

void UcxWorld::abandonHellos() {
  for (auto& h : hellos_) {
    if (h->recv_request) ucp_request_cancel(worker(), h->recv_request);
    if (h->send_request || h->recv_request) {
      h->abandoned = true;
      h.release();  // deletes itself once UCX called it back
    }
  }
  hellos_.clear();
}

bool UcxWorld::pollRing(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (!p.ring) return false;
  const bool moved = p.ring->progress();
  if (!p.ring->failure().empty() && !p.ring_failed) {
    p.ring_failed = true;
    if (world_ && !aborted_) {
      transportFailed(peer, "the same-host ring of rank " + std::to_string(peer) + " fails: " + p.ring->failure());
    }
  }
  if (p.ring->byeSeen() && !departed_[static_cast<size_t>(peer)] && world_ && !aborted_) onGoodbye(peer);
  return moved;
}

bool UcxWorld::ringsFlushed() const {
  for (const Peer& p : peers_) {
    if (p.ring && p.lends && p.ring->backlogged() && !p.ring_failed) return false;
  }
  return true;
}

uint32_t UcxWorld::copiedMarker(int peer, std::shared_ptr<SendPacing> pacing) {
  next_marker_ = next_marker_ % 0xffffff + 1;  // 24 bits, never 0; a few per peer are out at once
  copied_markers_[next_marker_] = {peer, std::move(pacing)};
  return next_marker_;
}

void UcxWorld::onMarkerMatched(int peer, uint32_t id) {
  auto it = copied_markers_.find(id);
  if (it == copied_markers_.end() || it->second.first != peer) return;
  it->second.second->markerEnded();
  copied_markers_.erase(it);
}

void UcxWorld::endCopiedMarkers() {
  for (auto& [id, marker] : copied_markers_) marker.second->markerEnded();
  copied_markers_.clear();
}

void UcxWorld::dropRings() {
  for (Peer& p : peers_) {
    if (p.ring_source) engine().removeSource(p.ring_source);
    p.ring_source = 0;
    // What waits in it ends (given up) before it goes.
    if (p.ring) p.ring->giveUp();
  }
  for (Peer& p : peers_) p.ring.reset();
}

// ------------------------------------------------------- the operations

void UcxOp::postOnRing(UcxTransfer& t, uint64_t channel, void* buffer, samehost::RingPair& ring) {
  UcxTransfer* tp = &t;
  if (t.recv) {
    void* into = buffer;
    size_t room = t.bytes;
    if (t.bytes < sizeof(samehost::CmaDescriptor)) {
      // A descriptor may come in the message's place.
      t.room = std::make_shared<UcxDescriptorRoom>();
      into = &t.room->descriptor;
      room = sizeof t.room->descriptor;
    }
    const uint64_t id = ring.recv(channel, into, room, [this, tp](DeliveryOutcome o, size_t length) {
      tp->ring_recv = 0;
      Entry entry(*this);
      if (o == DeliveryOutcome::Lent) return readLoan(*tp, length);
      if (tp->room && o == DeliveryOutcome::Delivered && length > 0 && length <= tp->bytes) {
        std::memcpy(tp->buffer, &tp->room->descriptor, length);
      }
      ended(*tp, UcxFailover::ucsStatus(o), length);
    });
    if (t.in_flight) t.ring_recv = id;
    return;
  }
  // Paced as UCX sends are (ucx_send_pacing.h): the receiver answers a
  // copied marker's message once a receive took it; a marker the caller
  // waits for is lent, and its return says the same.
  const std::shared_ptr<SendPacing>& pacing = world_->sendPacing(t.peer);
  const SendPacing::Send how = pacing ? pacing->next(t.bytes) : SendPacing::Send::Plain;
  const bool lend = world_->lendsTo(t.peer, t.bytes) || t.bytes > ring.maxMessage();
  uint32_t marker = 0;
  if (how == SendPacing::Send::CopiedMarker && !lend) {
    marker = world_->copiedMarker(t.peer, pacing);
  } else if (how != SendPacing::Send::Plain) {
    t.marker = pacing;  // ended() counts the match
  }
  if (lend || t.marker) return postLoan(t, channel, ring);
  ring.send(
      channel, buffer, t.bytes, false,
      [this, tp](DeliveryOutcome o) {
        Entry entry(*this);
        ended(*tp, o == DeliveryOutcome::Delivered ? UCS_OK : UCS_ERR_CANCELED, tp->bytes);
      },
      marker);
}

}  // namespace mw
