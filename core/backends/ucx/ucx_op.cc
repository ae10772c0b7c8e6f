#include "core/backends/ucx/ucx_op.h"

#include <algorithm>
#include <cstring>

#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/request.h"

namespace mw {

UcxOp::UcxOp(UcxWorld& world, std::shared_ptr<Request> request, int lane, OrderedCompletions::Ticket ticket)
    : world_(&world),
      engine_(world.engine()),
      request_(std::move(request)),
      started_(request_->issued()),
      lane_(lane),
      ticket_(ticket) {}

UcxOp::Entry::~Entry() {
  if (--op_.entries_ == 0) op_.settle();
}

void UcxOp::settle() {
  if (world_ && done_ && in_flight_ == 0) world_->finished(this, result_);  // deletes this
}

void UcxOp::finish(OpResult result) {
  if (done_) return;
  done_ = true;
  result_ = std::move(result);
}

void UcxOp::abort() {
  if (world_) {
    OpResult failure = world_->failure();
    // A broken world's peers may never answer; one that is destroyed lets
    // them read what they were lent until it closes.
    const bool broken = failure.status == Status::WorldBroken;
    finish(std::move(failure));
    if (broken) giveUpLoans(-1);
  }
  std::vector<UcxTransfer*> recvs;
  for (UcxTransfer* t : posted_) {
    if (t->recv) recvs.push_back(t);
  }
  for (UcxTransfer* t : recvs) cancelRecv(*t);
}

void UcxOp::cancelRecv(UcxTransfer& t) {
  if (!t.in_flight) return;
  if (t.request) {
    ucp_request_cancel(world_->worker(), t.request);
  } else if (t.path_recv) {
    world_->failover()->cancelRecv(t.peer, t.path_recv);
  } else if (t.ring_recv) {
    if (samehost::RingPair* ring = world_->ring(t.peer, true)) ring->cancelRecv(t.ring_recv);
  }
}

void UcxOp::peerDeparted(int peer) {
  std::vector<UcxTransfer*> involved;
  for (UcxTransfer* t : posted_) {
    if (t->peer == peer) involved.push_back(t);
  }
  for (UcxTransfer* t : involved) {
    if (!t->recv) {
      finish(world_->failure());  // it will never be received
      if (t->loan) giveUpLoans(peer);
    } else {
      cancelRecv(*t);  // one already receiving stays
    }
  }
}

bool UcxOp::onlyGonePeersHold() const {
  return std::all_of(posted_.begin(), posted_.end(), [&](const UcxTransfer* t) { return world_->peerGone(t->peer); });
}

void UcxOp::orphan() {
  // Its caller gets the buffers back now: what it lent is withdrawn first.
  for (UcxTransfer* t : posted_) {
    if (t->loan) world_->unlend(t->loan->descriptor.id);
  }
  world_ = nullptr;
  giveUpLoans(-1);
  // Its sends go to a process that is gone (or were given up): nothing to
  // poll for any more.
  for (UcxTransfer* t : posted_) {
    if (t->waiting) {
      t->waiting = false;
      engine_.sendDone();
    }
  }
}

void UcxOp::post(UcxTransfer& t, uint64_t channel, void* buffer) {
  t.op = this;
  t.in_flight = true;
  t.request = nullptr;
  t.buffer = buffer;
  ++in_flight_;
  posted_.push_back(&t);
  if (world_->departed(t.peer) && !(t.recv && arrived(t, channel))) {
    // A member that left gets nothing more, and sent all it ever will.
    ended(t, UCS_ERR_CANCELED, 0);
    return;
  }
  if (world_->failover()) {
    engine_.needProgress();
    postOnPaths(t, channel, buffer);
    return;
  }
  if (samehost::RingPair* ring = world_->ring(t.peer, t.recv)) {
    t.path = metrics::DataPath::Ring;
    postOnRing(t, channel, buffer, *ring);
    return;
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.user_data = &t;
  void* r;
  if (t.recv) {
    // Through the callback even when the message is there already: only
    // the callback tells the sender's size of a message that did not fit.
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &UcxOp::onRecv;
    // A message that came first may be a rendezvous, whose data only
    // progress fetches; one still to come wakes the workers' fds.
    if (arrived(t, channel)) engine_.needProgress();
    r = ucp_tag_recv_nbx(world_->worker(), buffer, t.bytes, world_->recvTag(t.peer, channel), ucxtag::kExact,
                         &param);
  } else {
    param.cb.send = &UcxOp::onSend;
    r = pacedTagSend(world_->endpoint(t.peer), buffer, t.bytes, world_->sendTag(t.peer, channel), param,
                     world_->sendPacing(t.peer), t.marker);
  }
  if (r == nullptr) {
    ended(t, UCS_OK, t.bytes);
  } else if (UCS_PTR_IS_ERR(r)) {
    ended(t, UCS_PTR_STATUS(r), 0);
  } else if (t.in_flight) {
    t.request = r;
    if (!t.recv) {
      t.waiting = true;
      engine_.sendWaiting();
      engine_.needProgress();
    }
  }
  // else the callback ran inside the call and freed the request
}

void UcxOp::postOnPaths(UcxTransfer& t, uint64_t channel, void* buffer) {
  UcxFailover& paths = *world_->failover();
  UcxTransfer* tp = &t;
  if (t.recv) {
    const uint64_t id = paths.recv(t.peer, channel, buffer, t.bytes, [this, tp](DeliveryOutcome o, size_t length) {
      tp->path_recv = 0;
      Entry entry(*this);
      ended(*tp, UcxFailover::ucsStatus(o), length);
    });
    if (t.in_flight) t.path_recv = id;
  } else {
    paths.send(t.peer, channel, buffer, t.bytes, [this, tp](DeliveryOutcome o) {
      Entry entry(*this);
      ended(*tp, UcxFailover::ucsStatus(o), tp->bytes);
    });
  }
}

bool UcxOp::arrived(const UcxTransfer& t, uint64_t channel) {
  if (world_->failover()) return world_->failover()->arrived(t.peer, channel);
  if (samehost::RingPair* ring = world_->ring(t.peer, true)) return ring->arrived(channel);
  ucp_tag_recv_info_t info;
  return ucp_tag_probe_nb(world_->worker(), world_->recvTag(t.peer, channel), ucxtag::kExact, 0, &info) != nullptr;
}

void UcxOp::onSend(void* request, ucs_status_t status, void* arg) {
  auto* t = static_cast<UcxTransfer*>(arg);
  ucp_request_free(request);
  t->request = nullptr;
  UcxOp& op = *t->op;
  Entry entry(op);
  op.ended(*t, status, t->bytes);
}

void UcxOp::onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg) {
  auto* t = static_cast<UcxTransfer*>(arg);
  // `info` lives in the request: read before it is freed.
  const size_t length = info ? info->length : 0;
  ucp_request_free(request);
  t->request = nullptr;
  UcxOp& op = *t->op;
  Entry entry(op);
  op.ended(*t, status, length);
}

void UcxOp::ended(UcxTransfer& t, ucs_status_t status, size_t length) {
  if (t.waiting) {
    t.waiting = false;
    engine_.sendDone();
  }
  if (t.marker) {
    t.marker->markerEnded();
    t.marker.reset();
  }
  t.in_flight = false;
  t.status = status;
  t.length = length;
  --in_flight_;
  posted_.erase(std::find(posted_.begin(), posted_.end(), &t));
  if (!world_) return;
  // A receive counts once its message matched it whole (sizes equal).
  if (status == UCS_OK && (!t.recv || length == t.bytes)) world_->transferred(t.path, t.recv, t.bytes);
  transferDone(t);
}

// ---------------------------------------------------------------- p2p

UcxP2p::UcxP2p(UcxWorld& world, std::shared_ptr<Request> request, OrderedCompletions::Ticket ticket,
               const OpDesc& op)
    : UcxOp(world, std::move(request), OrderedCompletions::laneOf(op), ticket), op_(op) {
  transfer_.peer = op.peer;
  transfer_.recv = op.kind == OpKind::Recv;
  transfer_.bytes = op.count * dtypeSize(op.dtype);
}

void UcxP2p::start() {
  void* buffer = transfer_.recv ? op_.recvbuf : const_cast<void*>(op_.sendbuf);
  post(transfer_, ucxtag::kP2p, buffer);
}

bool UcxP2p::takeBack() {
  if (!transfer_.recv || !transfer_.in_flight || !(transfer_.request || transfer_.path_recv || transfer_.ring_recv)) {
    return false;
  }
  // Removes a receive nothing matched yet, calling it back at once;
  // one already receiving stays.
  taking_back_ = true;
  cancelRecv(transfer_);
  taking_back_ = false;
  return !transfer_.in_flight;
}

void UcxP2p::transferDone(UcxTransfer& t) {
  if (t.status == UCS_OK && (!t.recv || t.length == t.bytes)) return finish({});
  // Failures only from here: the success path builds no strings.
  const char* what = t.recv ? "recv" : "send";
  const std::string from = std::string(t.recv ? " from" : " to") + " rank " + std::to_string(t.peer);
  if (t.recv && (t.status == UCS_OK || t.status == UCS_ERR_MESSAGE_TRUNCATED)) {
    // As in MPI: the receive fails, the send succeeded, the world goes on.
    return finish({Status::InvalidArgument, "recv of " + std::to_string(t.bytes) + " bytes" + from +
                                                " matched a send of " + std::to_string(t.length) + " bytes"});
  }
  if (t.status == UCS_ERR_CANCELED) {
    if (taking_back_) return finish({Status::Cancelled, "the receive was cancelled before a message matched it"});
    return finish(world_->failure());
  }
  const std::string detail =
      std::string(what) + from + " failed in UCX: " + ucs_status_string(t.status);
  world_->transportFailed(t.peer, detail);
  finish(world_->failure());
}

}  // namespace mw
