#include "core/backends/ucx/channels/rail_channel.h"

#include "core/backends/ucx/channels/control_words.h"
#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_tag.h"

namespace mw {

// The receive of the peer's control words. Its callback may run inside
// the call that posts it and post the next one: `posts` numbers the
// posts, so that only the latest keeps its id.
struct RailChannel::Control {
  RailChannel* channel = nullptr;  // null once the channel closed
  uint64_t recv = 0;
  uint64_t word = 0;
  uint64_t posts = 0;
  uint64_t ended = 0;  // the post that was called back last
};

RailChannel::RailChannel(UcxChannelHost& host, std::shared_ptr<UcxFailover> rails, std::shared_ptr<UcxLink> link,
                         int rank, int peer)
    : host_(host), rails_(std::move(rails)), link_(std::move(link)), rank_(rank), peer_(peer) {}

RailChannel::~RailChannel() {
  if (control_) control_->channel = nullptr;
}

void RailChannel::open() {
  if (peer_ == rank_ || control_) return;
  control_ = std::make_shared<Control>();
  control_->channel = this;
  listen();
}

void RailChannel::listen() {
  std::shared_ptr<Control> c = control_;
  const uint64_t mine = ++c->posts;
  const uint64_t id = rails_->recv(peer_, ucxtag::kControl, &c->word, sizeof c->word,
                                   [c](DeliveryOutcome o, size_t) {
                                     c->recv = 0;
                                     c->ended = c->posts;
                                     RailChannel* ch = c->channel;
                                     if (!ch || o == DeliveryOutcome::GivenUp) return;
                                     if (o != DeliveryOutcome::Delivered) {
                                       if (!ch->host_.aborted()) {
                                         ch->host_.transportFailed(ch->peer_, "the control channel from rank " +
                                                                                  std::to_string(ch->peer_) +
                                                                                  " brought a word that does not fit");
                                       }
                                       return;
                                     }
                                     if (ucxcontrol::take(ch->host_, ch->peer_, c->word, nullptr) && ch->control_) {
                                       ch->listen();
                                     }
                                   });
  if (c->ended != mine && c->posts == mine) c->recv = id;
}

void RailChannel::stopListening() {
  if (control_ && control_->recv) rails_->cancelRecv(peer_, control_->recv);
}

void RailChannel::post(UcxTransfer& t, uint64_t channel) {
  host_.engine().needProgress();
  UcxTransfer* tp = &t;
  t.via.emplace<UcxRailState>();
  if (t.recv) {
    const uint64_t id = rails_->recv(peer_, channel, t.buffer, t.bytes, [tp](DeliveryOutcome o, size_t length) {
      ended(*tp, UcxFailover::ucsStatus(o), length);
    });
    if (auto* s = std::get_if<UcxRailState>(&t.via)) s->recv = id;
    return;
  }
  rails_->send(peer_, channel, t.buffer, t.bytes,
               [tp](DeliveryOutcome o) { ended(*tp, UcxFailover::ucsStatus(o), tp->bytes); });
}

void RailChannel::ended(UcxTransfer& t, ucs_status_t status, size_t length) {
  t.via = std::monostate{};
  t.owner->transferEnded(t, status, length);
}

void RailChannel::cancel(UcxTransfer& t) {
  auto* s = std::get_if<UcxRailState>(&t.via);
  if (s && s->recv) rails_->cancelRecv(peer_, s->recv);
}

bool RailChannel::arrived(uint64_t channel) const { return rails_->arrived(peer_, channel); }

void RailChannel::peerGone() { rails_->peerLeft(peer_); }

void RailChannel::sayGoodbye() {
  if (peer_ == rank_ || link_->failed()) return;
  static const uint64_t kBye = ucxcontrol::kBye;
  // Acknowledged once the peer has it: no flush to wait for.
  ++flushing_;
  rails_->send(peer_, ucxtag::kControl, &kBye, sizeof kBye, [this](DeliveryOutcome) { --flushing_; });
}

void RailChannel::close() {
  if (control_) control_->channel = nullptr;
}

}  // namespace mw
