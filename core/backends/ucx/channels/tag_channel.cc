#include "core/backends/ucx/channels/tag_channel.h"

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_send_pacing.h"
#include "core/backends/ucx/ucx_tag.h"

namespace mw {

// The receive that waits for the peer's control words. UCX may call it
// back inside the call that posts it, and the callback may post the next
// one: `posts` numbers the posts, so that only the latest keeps its
// request. A receive UCX still holds when the channel closes outlives it.
struct TagChannel::Control {
  TagChannel* channel = nullptr;  // null once the channel closed
  void* request = nullptr;
  uint64_t word = 0;
  uint64_t posts = 0;
  uint64_t ended = 0;  // the post that was called back last

  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void* arg) {
    auto* c = static_cast<Control*>(arg);
    ucp_request_free(request);
    c->request = nullptr;
    c->ended = c->posts;
    if (c->channel) {
      c->channel->heard(status, c->word);
    } else {
      delete c;  // the channel left it to UCX
    }
  }
};

TagChannel::TagChannel(UcxChannelHost& host, std::shared_ptr<UcxLink> link, int rank, int peer, uint32_t world_id,
                       uint32_t peer_world_id)
    : host_(host),
      link_(std::move(link)),
      rank_(rank),
      peer_(peer),
      world_id_(world_id),
      peer_world_id_(peer_world_id),
      pacing_(peer == rank ? nullptr : std::make_shared<SendPacing>()) {}

TagChannel::~TagChannel() {
  // Closed on the engine's owner first, unless UCX still holds the control
  // receive: then its callback frees it.
  if (!control_) return;
  Control* c = control_.release();
  c->channel = nullptr;
  if (!c->request) delete c;
}

uint64_t TagChannel::sendTag(uint64_t channel) const { return ucxtag::make(peer_world_id_, rank_, channel); }

uint64_t TagChannel::recvTag(uint64_t channel) const { return ucxtag::make(world_id_, peer_, channel); }

void TagChannel::open() {
  if (peer_ == rank_ || control_) return;
  control_ = std::make_unique<Control>();
  control_->channel = this;
  listen();
}

void TagChannel::listen() {
  Control& c = *control_;
  const uint64_t mine = ++c.posts;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &Control::onRecv;
  param.user_data = &c;
  void* r = ucp_tag_recv_nbx(host_.engine().worker(), &c.word, sizeof c.word, recvTag(ucxtag::kControl),
                             ucxtag::kExact, &param);
  if (UCS_PTR_IS_PTR(r) && c.ended != mine && c.posts == mine) c.request = r;
}

void TagChannel::heard(ucs_status_t status, uint64_t word) {
  if (status == UCS_ERR_CANCELED) return;
  if (status != UCS_OK) {
    if (!host_.aborted()) {
      host_.transportFailed(peer_, "the control channel from rank " + std::to_string(peer_) + " failed in UCX: " +
                                       ucs_status_string(status));
    }
    return;
  }
  if (ucxcontrol::take(host_, peer_, word, words_) && control_) listen();
}

void TagChannel::stopListening() {
  if (control_ && control_->request) ucp_request_cancel(host_.engine().worker(), control_->request);
}

void TagChannel::sendWord(uint64_t word) {
  if (link_->failed() || !link_->ep()) return;
  // UCX may keep the word until the send leaves.
  auto* held = new uint64_t(word);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    delete static_cast<uint64_t*>(arg);
  };
  param.user_data = held;
  void* r = ucp_tag_send_nbx(link_->ep(), held, sizeof *held, sendTag(ucxtag::kControl), &param);
  if (!UCS_PTR_IS_PTR(r)) delete held;  // done or failed at once; a failure breaks the link
}

// ------------------------------------------------------------- transfers

void TagChannel::post(UcxTransfer& t, uint64_t channel) {
  UcxEngine& engine = host_.engine();
  t.via.emplace<UcxTagState>().engine = &engine;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.user_data = &t;
  void* r;
  if (t.recv) {
    // Through the callback even when the message is there already: only
    // the callback tells the sender's size of a message that did not fit.
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &onRecv;
    // A message that came first may be a rendezvous, whose data only
    // progress fetches; one still to come wakes the workers' fds.
    if (arrived(channel)) engine.needProgress();
    r = ucp_tag_recv_nbx(engine.worker(), t.buffer, t.bytes, recvTag(channel), ucxtag::kExact, &param);
  } else {
    param.cb.send = &onSend;
    r = pacedTagSend(link_->ep(), t.buffer, t.bytes, sendTag(channel), param, pacing_,
                     std::get<UcxTagState>(t.via).marker);
  }
  if (r == nullptr) return ended(t, UCS_OK, t.bytes);
  if (UCS_PTR_IS_ERR(r)) return ended(t, UCS_PTR_STATUS(r), 0);
  // Else the callback may have run inside the call and freed the request.
  auto* s = std::get_if<UcxTagState>(&t.via);
  if (!s) return;
  s->request = r;
  if (!t.recv) {
    s->waiting = true;
    engine.sendWaiting();
    engine.needProgress();
  }
}

void TagChannel::onSend(void* request, ucs_status_t status, void* arg) {
  auto* t = static_cast<UcxTransfer*>(arg);
  ucp_request_free(request);
  ended(*t, status, t->bytes);
}

void TagChannel::onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg) {
  auto* t = static_cast<UcxTransfer*>(arg);
  // `info` lives in the request: read before it is freed.
  const size_t length = info ? info->length : 0;
  ucp_request_free(request);
  ended(*t, status, length);
}

void TagChannel::ended(UcxTransfer& t, ucs_status_t status, size_t length) {
  UcxTagState& s = std::get<UcxTagState>(t.via);
  if (s.waiting) s.engine->sendDone();
  if (s.marker) s.marker->markerEnded();
  t.via = std::monostate{};
  t.owner->transferEnded(t, status, length);
}

void TagChannel::cancel(UcxTransfer& t) {
  auto* s = std::get_if<UcxTagState>(&t.via);
  if (s && s->request) ucp_request_cancel(host_.engine().worker(), s->request);
}

bool TagChannel::arrived(uint64_t channel) const {
  ucp_tag_recv_info_t info;
  return ucp_tag_probe_nb(host_.engine().worker(), recvTag(channel), ucxtag::kExact, 0, &info) != nullptr;
}

void TagChannel::abandon(UcxTransfer& t) {
  // Its send goes to a process that is gone (or was given up): nothing to
  // poll for any more.
  auto* s = std::get_if<UcxTagState>(&t.via);
  if (s && s->waiting) {
    s->waiting = false;
    host_.engine().sendDone();
  }
}

// ------------------------------------------------------------- the end

void TagChannel::sayGoodbye() {
  if (peer_ == rank_ || link_->failed() || !link_->ep()) return;
  static const uint64_t kBye = ucxcontrol::kBye;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    --static_cast<TagChannel*>(arg)->flushing_;
  };
  param.user_data = this;
  // After everything else sent on the endpoint; the flush tells when it
  // left, before the endpoint is closed.
  void* bye = ucp_tag_send_nbx(link_->ep(), &kBye, sizeof kBye, sendTag(ucxtag::kControl), &param);
  if (UCS_PTR_IS_PTR(bye)) ++flushing_;
  void* flush = ucp_ep_flush_nbx(link_->ep(), &param);
  if (UCS_PTR_IS_PTR(flush)) ++flushing_;
}

void TagChannel::sayBroken(int blamed) {
  if (peer_ == rank_) return;
  sendWord(ucxcontrol::kBroken | static_cast<uint64_t>(blamed + 1));
}

void TagChannel::sayExcluded(uint64_t epoch) {
  if (peer_ == rank_ || link_->failed() || !link_->ep()) return;
  sendWord(ucxcontrol::kExcluded | (epoch & ~ucxcontrol::kKindMask));
  // The flush tells when the word left, before the endpoint is closed.
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    --static_cast<TagChannel*>(arg)->flushing_;
  };
  param.user_data = this;
  void* flush = ucp_ep_flush_nbx(link_->ep(), &param);
  if (UCS_PTR_IS_PTR(flush)) ++flushing_;
}

void dropTagged(ucp_worker_h worker, uint64_t tag, uint64_t mask) {
  ucp_tag_recv_info_t info;
  while (ucp_tag_message_h message = ucp_tag_probe_nb(worker, tag, mask, 1, &info)) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.recv = [](void* request, ucs_status_t, const ucp_tag_recv_info_t*, void*) { ucp_request_free(request); };
    ucp_tag_msg_recv_nbx(worker, nullptr, 0, message, &param);  // cut off: dropped
  }
}

void TagChannel::close() {
  if (closed_) return;
  closed_ = true;
  // What arrived for this channel and nobody will receive goes while the
  // endpoint it came through is open (a large message's sender is then
  // told it may stop). Exact tags find a message at once.
  ucp_worker_h worker = host_.engine().worker();
  dropTagged(worker, recvTag(ucxtag::kP2p), ucxtag::kExact);
  dropTagged(worker, recvTag(ucxtag::kControl), ucxtag::kExact);
  if (!control_) return;
  Control* c = control_.release();
  c->channel = nullptr;
  // Cancelling an unmatched receive calls it back at once, which frees it;
  // one that UCX still holds frees itself when it is called back.
  if (c->request) {
    ucp_request_cancel(worker, c->request);
    return;
  }
  delete c;
}

}  // namespace mw
