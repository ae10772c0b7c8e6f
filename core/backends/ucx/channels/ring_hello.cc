#include "core/backends/ucx/channels/ring_hello.h"

#include <algorithm>

#include "core/backends/ucx/ucx_engine.h"
#include "core/error.h"
#include "core/same_host/ring_pair.h"

namespace mw {
namespace {

struct HelloMessage {
  static constexpr uint64_t kMagic = 0x316873776dull;  // "mwsh1"
  uint64_t magic = kMagic;
  uint32_t reads = 0;    // the sender reads the receiver: it takes the receiver's ring
  uint32_t offered = 0;  // the fds below hold the sender's ring, for the receiver to take
  int32_t memfd = -1, wake_fd = -1, space_fd = -1, unused = 0;
  uint64_t capacity = 0;
};

}  // namespace

// What this member sent one peer, what came, and UCX's requests for both.
// UCX may call back after the hellos were let go of (a formation that
// failed), so a hello abandoned with a request still held deletes itself
// once its last request is called back.
struct RingHellos::Hello {
  int peer = -1;
  HelloMessage out, in;
  void* send_request = nullptr;
  void* recv_request = nullptr;
  bool received = false;
  ucs_status_t recv_status = UCS_OK;
  size_t recv_length = 0;
  bool abandoned = false;

  void maybeDelete() {
    if (abandoned && !send_request && !recv_request) delete this;
  }
  static void onSent(void* request, ucs_status_t, void* arg) {
    auto* h = static_cast<Hello*>(arg);
    ucp_request_free(request);
    h->send_request = nullptr;
    h->maybeDelete();
  }
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg) {
    auto* h = static_cast<Hello*>(arg);
    h->recv_length = info ? info->length : 0;  // it lives in the request
    ucp_request_free(request);
    h->recv_request = nullptr;
    h->received = true;
    h->recv_status = status;
    h->maybeDelete();
  }
};

RingHellos::RingHellos(UcxEngine& engine) : engine_(engine) {}

RingHellos::~RingHellos() {
  for (auto& h : hellos_) {
    if (h->recv_request) ucp_request_cancel(engine_.worker(), h->recv_request);
    if (h->send_request || h->recv_request) {
      h->abandoned = true;
      h.release();  // deletes itself once UCX called it back
    }
  }
}

void RingHellos::send(int peer, ucp_ep_h ep, uint64_t send_tag, uint64_t recv_tag, bool reads,
                      const samehost::RingPair* ring) {
  auto h = std::make_unique<Hello>();
  h->peer = peer;
  h->out.reads = reads ? 1 : 0;
  if (ring) {
    const samehost::RingFds fds = ring->offer();
    h->out.offered = 1;
    h->out.memfd = fds.memfd;
    h->out.wake_fd = fds.wake_fd;
    h->out.space_fd = fds.space_fd;
    h->out.capacity = fds.capacity;
  }
  Hello* raw = h.get();
  hellos_.push_back(std::move(h));
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &Hello::onReceived;
  param.user_data = raw;
  void* rr = ucp_tag_recv_nbx(engine_.worker(), &raw->in, sizeof raw->in, recv_tag, ~uint64_t{0}, &param);
  if (UCS_PTR_IS_ERR(rr)) {
    raw->received = true;
    raw->recv_status = UCS_PTR_STATUS(rr);
  } else if (!raw->received) {
    raw->recv_request = rr;
  }
  ucp_request_param_t out{};
  out.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  out.cb.send = &Hello::onSent;
  out.user_data = raw;
  void* sr = ucp_tag_send_nbx(ep, &raw->out, sizeof raw->out, send_tag, &out);
  if (UCS_PTR_IS_PTR(sr)) raw->send_request = sr;  // a failure fails the link, which the wait sees
  engine_.needProgress();
}

bool RingHellos::in(const std::function<bool(int peer)>& failed) const {
  return std::all_of(hellos_.begin(), hellos_.end(), [&](const auto& h) { return h->received || failed(h->peer); });
}

RingHellos::Taken RingHellos::take(int peer, const std::string& who, bool reads, samehost::RingPair* ring,
                                   int peer_pidfd) {
  auto it = std::find_if(hellos_.begin(), hellos_.end(), [&](const auto& h) { return h->peer == peer; });
  if (it == hellos_.end()) return {};
  const Hello& h = **it;
  if (h.recv_status != UCS_OK || h.recv_length != sizeof h.in || h.in.magic != HelloMessage::kMagic) {
    throw Error(Status::Backend, "world rendezvous: the same-host hello of " + who + " is not one (" +
                                     std::to_string(h.recv_length) + " bytes, " + ucs_status_string(h.recv_status) +
                                     ")");
  }
  Taken t;
  t.lends = ring && h.in.reads;
  if (reads && h.in.offered && ring) {
    const samehost::RingFds fds{h.in.memfd, h.in.wake_fd, h.in.space_fd, h.in.capacity};
    try {
      ring->attach(peer_pidfd, fds);
    } catch (const Error& e) {
      // It writes into its ring from its start on, for this member to read.
      throw Error(Status::Backend, "world rendezvous: taking the same-host ring of " + who + " failed: " + e.what());
    }
    t.reads = true;
  }
  return t;
}

}  // namespace mw
