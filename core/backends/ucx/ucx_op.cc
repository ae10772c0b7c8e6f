#include "core/backends/ucx/ucx_op.h"

#include <algorithm>

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
    if (broken) {
      for (UcxTransfer* t : std::vector<UcxTransfer*>(posted_)) {
        if (t->in_flight) world_->channel(t->peer).withdraw(*t);
      }
    }
  }
  std::vector<UcxTransfer*> recvs;
  for (UcxTransfer* t : posted_) {
    if (t->recv) recvs.push_back(t);
  }
  for (UcxTransfer* t : recvs) cancelRecv(*t);
}

void UcxOp::cancelRecv(UcxTransfer& t) {
  if (t.in_flight && world_) world_->channel(t.peer).cancel(t);
}

void UcxOp::peerDeparted(int peer) {
  std::vector<UcxTransfer*> involved;
  for (UcxTransfer* t : posted_) {
    if (t->peer == peer) involved.push_back(t);
  }
  for (UcxTransfer* t : involved) {
    if (!t->in_flight) continue;  // ended meanwhile
    if (!t->recv) {
      finish(world_->failure());  // it will never be received
      world_->channel(peer).withdraw(*t);
    } else {
      cancelRecv(*t);  // one already receiving stays
    }
  }
}

bool UcxOp::holds(int peer) const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [&](const UcxTransfer* t) { return t->in_flight && t->peer == peer; });
}

bool UcxOp::onlyGonePeersHold() const {
  return std::all_of(posted_.begin(), posted_.end(), [&](const UcxTransfer* t) { return world_->peerGone(t->peer); });
}

void UcxOp::orphan() {
  // Its caller gets the buffers back now: what it lent is withdrawn, and
  // its sends go to a process that is gone (or were given up): nothing to
  // poll for any more. What ends meanwhile reaches no world.
  std::vector<std::pair<UcxTransfer*, UcxChannel*>> held;
  for (UcxTransfer* t : posted_) held.emplace_back(t, &world_->channel(t->peer));
  world_ = nullptr;
  for (auto [t, channel] : held) {
    if (t->in_flight) channel->abandon(*t);
  }
}

void UcxOp::post(UcxTransfer& t, uint64_t channel, void* buffer) {
  t.owner = this;
  t.in_flight = true;
  t.buffer = buffer;
  ++in_flight_;
  posted_.push_back(&t);
  if (world_->departed(t.peer) && !(t.recv && world_->channel(t.peer).arrived(channel))) {
    // A member that left gets nothing more, and sent all it ever will.
    transferEnded(t, UCS_ERR_CANCELED, 0);
    return;
  }
  world_->channel(t.peer).post(t, channel);
}

void UcxOp::transferEnded(UcxTransfer& t, ucs_status_t status, size_t length) {
  Entry entry(*this);
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
  if (!transfer_.recv || !transfer_.in_flight) return false;
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
