#include "core/backends/ucx/channels/ring_channel.h"

#include <cstring>

#include "core/backends/ucx/channels/control_words.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_send_pacing.h"

namespace mw {

RingChannel::RingChannel(UcxChannelHost& host, std::unique_ptr<TagChannel> tag,
                         std::unique_ptr<samehost::RingPair> ring, bool reads, bool lends, int peer, size_t min_bytes)
    : host_(host),
      engine_(host.engine()),
      tag_(std::move(tag)),
      ring_(std::move(ring)),
      reads_(reads),
      lends_(lends),
      peer_(peer),
      peer_pid_(tag_->link().pid()),
      min_bytes_(min_bytes) {
  // Returns and matches come in the ring when the peer writes one to this
  // member, else on the control channel.
  tag_->onWord([this](uint64_t word) { return takeWord(word); });
  if (reads_) {
    ring_->onMatched([this](uint32_t marker) { sendWord(ucxcontrol::kMatched | marker); });
    ring_->onWord([this](uint64_t word) {
      if (!takeWord(word) && opened_ && !host_.aborted()) {
        host_.transportFailed(peer_, "rank " + std::to_string(peer_) + " sent an unknown control word " +
                                         std::to_string(word));
      }
    });
  }
  UcxEngine::Source source;
  source.poll = [this] { return poll(); };
  samehost::RingPair* r = ring_.get();
  source.arm = [r] { return r->armWake(); };
  source.disarm = [r] { r->disarmWake(); };
  if (reads_) source.fds.push_back(r->wakeFd());
  if (lends_) source.fds.push_back(r->spaceFd());
  source.peer_pid = peer_pid_;
  source_ = engine_.addSource(std::move(source));
}

// close() ran on the engine's owner first (the world's part).
RingChannel::~RingChannel() = default;

std::string RingChannel::who() const {
  return "rank " + std::to_string(peer_) + " (pid " + std::to_string(peer_pid_) + ")";
}

void RingChannel::open() {
  opened_ = true;
  tag_->open();
  poll();  // tells what the ring found before the world started
}

bool RingChannel::poll() {
  if (closed_) return false;
  const bool moved = ring_->progress();
  if (!opened_ || host_.aborted()) return moved;
  if (!ring_->failure().empty() && !failure_told_) {
    failure_told_ = true;
    host_.transportFailed(peer_, "the same-host ring of rank " + std::to_string(peer_) + " fails: " + ring_->failure());
  }
  if (ring_->byeSeen() && !bye_told_) {
    bye_told_ = true;
    host_.goodbyeFrom(peer_);
  }
  return moved;
}

void RingChannel::sendWord(uint64_t word) {
  if (closed_) return;
  if (lends_) return ring_->sendWord(word);
  tag_->sendWord(word);
}

bool RingChannel::takeWord(uint64_t word) {
  switch (word & ucxcontrol::kKindMask) {
    case ucxcontrol::kReturned:
      // Also after an abort: a destroyed world's loans may still come back.
      loanReturned(word & ~ucxcontrol::kKindMask);
      return true;
    case ucxcontrol::kMatched:
      markerMatched(static_cast<uint32_t>(word & ~ucxcontrol::kKindMask));
      return true;
    default:
      return false;
  }
}

// ------------------------------------------------------------- transfers

void RingChannel::post(UcxTransfer& t, uint64_t channel) {
  if (t.recv) {
    if (!reads_) return tag_->post(t, channel);
    return postRecv(t, channel);
  }
  if (!lends_) return tag_->post(t, channel);
  postSend(t, channel);
}

void RingChannel::ended(UcxTransfer& t, ucs_status_t status, size_t length) {
  UcxRingState& s = std::get<UcxRingState>(t.via);
  if (s.marker) s.marker->markerEnded();
  t.via = std::monostate{};
  t.owner->transferEnded(t, status, length);
}

void RingChannel::postRecv(UcxTransfer& t, uint64_t channel) {
  UcxRingState& s = t.via.emplace<UcxRingState>();
  t.path = metrics::DataPath::Ring;
  void* into = t.buffer;
  size_t room = t.bytes;
  if (t.bytes < sizeof(samehost::CmaDescriptor)) {
    // A descriptor may come in the message's place.
    s.room = std::make_shared<UcxDescriptorRoom>();
    into = &s.room->descriptor;
    room = sizeof s.room->descriptor;
  }
  UcxTransfer* tp = &t;
  const uint64_t id = ring_->recv(channel, into, room, [this, tp](DeliveryOutcome o, size_t length) {
    UcxRingState& state = std::get<UcxRingState>(tp->via);
    state.recv = 0;
    if (o == DeliveryOutcome::Lent) return readLoan(*tp, length);
    if (state.room && o == DeliveryOutcome::Delivered && length > 0 && length <= tp->bytes) {
      std::memcpy(tp->buffer, &state.room->descriptor, length);
    }
    ended(*tp, ucsStatus(o), length);
  });
  if (auto* still = std::get_if<UcxRingState>(&t.via)) still->recv = id;
}

void RingChannel::postSend(UcxTransfer& t, uint64_t channel) {
  UcxRingState& s = t.via.emplace<UcxRingState>();
  t.path = metrics::DataPath::Ring;
  const std::shared_ptr<SendPacing>& pacing = tag_->pacing();
  const SendPacing::Send how = pacing ? pacing->next(t.bytes) : SendPacing::Send::Plain;
  const bool lend = lendsTo(t.bytes) || t.bytes > ring_->maxMessage();
  uint32_t marker = 0;
  if (how == SendPacing::Send::CopiedMarker && !lend) {
    marker = copiedMarker();
    copied_markers_[marker] = pacing;
  } else if (how != SendPacing::Send::Plain) {
    s.marker = pacing;  // ended() counts the match
  }
  if (lend || s.marker) return postLoan(t, channel);
  UcxTransfer* tp = &t;
  ring_->send(
      channel, t.buffer, t.bytes, false,
      [tp](DeliveryOutcome o) { ended(*tp, o == DeliveryOutcome::Delivered ? UCS_OK : UCS_ERR_CANCELED, tp->bytes); },
      marker);
}

void RingChannel::cancel(UcxTransfer& t) {
  auto* s = std::get_if<UcxRingState>(&t.via);
  if (!s) return tag_->cancel(t);
  if (s->recv && ring_) ring_->cancelRecv(s->recv);
}

bool RingChannel::arrived(uint64_t channel) const {
  if (!reads_) return tag_->arrived(channel);
  return ring_ && ring_->arrived(channel);
}

// ------------------------------------------------------------- markers

uint32_t RingChannel::copiedMarker() {
  next_marker_ = next_marker_ % 0xffffff + 1;  // 24 bits, never 0; a few are out at once
  return next_marker_;
}

void RingChannel::markerMatched(uint32_t id) {
  auto it = copied_markers_.find(id);
  if (it == copied_markers_.end()) return;
  it->second->markerEnded();
  copied_markers_.erase(it);
}

// ------------------------------------------------------------- loans

void RingChannel::postLoan(UcxTransfer& t, uint64_t channel) {
  UcxRingState& s = std::get<UcxRingState>(t.via);
  t.path = metrics::DataPath::Cma;
  s.loan = std::make_shared<UcxLoan>();
  UcxLoan& loan = *s.loan;
  samehost::CmaDescriptor& d = loan.descriptor;
  d.magic = samehost::kCmaMagic;
  d.address = reinterpret_cast<uint64_t>(t.buffer);
  d.bytes = t.bytes;
  d.ticket_address = loan.ticket.address();
  d.ticket = loan.ticket.issue();
  d.id = next_loan_++ & ~ucxcontrol::kKindMask;
  loans_[d.id] = &t;
  loan.in_ring = true;
  UcxTransfer* tp = &t;
  ring_->send(channel, &d, sizeof d, true, [this, tp](DeliveryOutcome o) {
    UcxLoan& l = *std::get<UcxRingState>(tp->via).loan;
    l.in_ring = false;
    if (o == DeliveryOutcome::Delivered) return settleLoan(*tp);
    l.status = UCS_ERR_CANCELED;
    giveUpLoan(*tp);
  });
}

void RingChannel::loanReturned(uint64_t id) {
  auto it = loans_.find(id);
  if (it == loans_.end()) return;  // given up meanwhile
  UcxTransfer& t = *it->second;
  loans_.erase(it);
  std::get<UcxRingState>(t.via).loan->returned = true;
  settleLoan(t);
}

void RingChannel::withdraw(UcxTransfer& t) {
  auto* s = std::get_if<UcxRingState>(&t.via);
  if (!s) return tag_->withdraw(t);
  if (s->loan) giveUpLoan(t);
}

void RingChannel::abandon(UcxTransfer& t) {
  auto* s = std::get_if<UcxRingState>(&t.via);
  if (!s) return tag_->abandon(t);
  if (!s->loan) return;
  loans_.erase(s->loan->descriptor.id);  // a late return finds nothing
  giveUpLoan(t);
}

void RingChannel::giveUpLoan(UcxTransfer& t) {
  UcxLoan& loan = *std::get<UcxRingState>(t.via).loan;
  if (!loan.returned && !loan.given_up) {
    loan.given_up = true;
    loan.ticket.withdraw();
    if (loan.status == UCS_OK) loan.status = UCS_ERR_CANCELED;
  }
  settleLoan(t);
}

void RingChannel::settleLoan(UcxTransfer& t) {
  UcxLoan& loan = *std::get<UcxRingState>(t.via).loan;
  if (loan.ended || loan.in_ring || !(loan.returned || loan.given_up)) return;
  loan.ended = true;
  loan.ticket.withdraw();
  loans_.erase(loan.descriptor.id);
  ended(t, loan.returned ? UCS_OK : loan.status, t.bytes);
}

void RingChannel::readLoan(UcxTransfer& t, size_t length) {
  t.path = metrics::DataPath::Cma;
  samehost::CmaDescriptor d;
  const UcxRingState& s = std::get<UcxRingState>(t.via);
  if (length == sizeof d) std::memcpy(&d, s.room ? &s.room->descriptor : t.buffer, sizeof d);
  if (length != sizeof d || d.magic != samehost::kCmaMagic || (d.id & ucxcontrol::kKindMask) != 0) {
    host_.transportFailed(peer_, "rank " + std::to_string(peer_) +
                                     " sent a same-host descriptor this member cannot take (" +
                                     std::to_string(length) + " bytes)");
    return ended(t, UCS_ERR_CANCELED, 0);
  }
  if (d.bytes != t.bytes) {
    // As a message that does not fit: the receive fails, the send is done.
    sendWord(ucxcontrol::kReturned | d.id);
    return ended(t, UCS_OK, d.bytes);
  }
  const int pidfd = engine_.pidfdOf(peer_pid_);
  // Without its pidfd the pid may name another process by now.
  const samehost::CmaResult r = pidfd < 0 ? samehost::CmaResult{samehost::CmaOutcome::Gone, 0}
                                          : samehost::cmaRead(peer_pid_, pidfd, d, t.buffer);
  if (r.outcome == samehost::CmaOutcome::Read) {
    sendWord(ucxcontrol::kReturned | d.id);
    return ended(t, UCS_OK, t.bytes);
  }
  std::string why = samehost::describe(r.outcome);
  if (r.error) why += std::string(" (") + strerror(r.error) + ")";
  host_.transportFailed(peer_, "a message of " + std::to_string(d.bytes) + " bytes from " + who() +
                                   " could not be read: " + why);
  ended(t, UCS_ERR_CANCELED, 0);
}

// ------------------------------------------------------------- the end

void RingChannel::peerGone() {
  // It reads nothing more: sends waiting for room in its ring end now.
  if (ring_) ring_->abandonSends();
}

void RingChannel::sayGoodbye() {
  if (!lends_) return tag_->sayGoodbye();
  // After everything sent into the ring; stop() waits until it is in.
  if (ring_ && !tag_->link().failed() && tag_->link().ep()) ring_->sendBye();
}

bool RingChannel::flushed() const {
  return tag_->flushed() && (!lends_ || !ring_ || !ring_->backlogged() || !ring_->failure().empty());
}

void RingChannel::close() {
  if (closed_) return;
  closed_ = true;
  tag_->close();
  engine_.removeSource(source_);
  // What waits in it ends (given up) before it goes, with its memory and
  // descriptors: an operation that outlives the world (ucx_op.h, orphan)
  // may keep this channel, not the ring.
  ring_->giveUp();
  ring_.reset();
  // Their receiver can no longer answer.
  for (auto& [id, pacing] : copied_markers_) pacing->markerEnded();
  copied_markers_.clear();
}

}  // namespace mw
