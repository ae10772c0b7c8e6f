#include "core/backends/ucx/ucx_collective.h"

#include "core/backends/ucx/ucx_world.h"

namespace mw {

UcxCollective::UcxCollective(UcxWorld& world, std::shared_ptr<Request> request, OrderedCompletions::Ticket ticket,
                             const OpDesc& op, uint64_t channel, std::unique_ptr<UcxSchedule> schedule)
    : UcxOp(world, std::move(request), OrderedCompletions::kMainLane, ticket),
      op_(op),
      channel_(channel),
      schedule_(std::move(schedule)) {}

void UcxCollective::start() { advance(); }

void UcxCollective::transferDone(UcxTransfer& t) {
  --remaining_;
  if (t.status == UCS_ERR_CANCELED) {
    finish(world_->failure());
  } else if (t.status != UCS_OK && t.status != UCS_ERR_MESSAGE_TRUNCATED) {
    world_->transportFailed(t.peer, std::string(opName(op_.kind)) + (t.recv ? ": receiving from" : ": sending to") +
                                        " rank " + std::to_string(t.peer) + " failed in UCX: " +
                                        ucs_status_string(t.status));
    finish(world_->failure());
  } else if (t.recv && t.length != t.bytes) {
    // The shape byte of the tag keeps most disagreements from matching;
    // one that matched anyway cannot be completed on any member.
    world_->transportFailed(t.peer, std::string(opName(op_.kind)) + ": rank " + std::to_string(t.peer) + " sent " +
                                        std::to_string(t.length) + " bytes where this member expected " +
                                        std::to_string(t.bytes) + ": the members disagree on its shape");
    finish(world_->failure());
  }
  if (remaining_ == 0) advance();
}

void UcxCollective::advance() {
  if (advancing_) return;  // a transfer completed inside post(): the loop below goes on
  advancing_ = true;
  while (remaining_ == 0 && !done()) {
    if (world_->aborted()) {
      finish(world_->failure());
      break;
    }
    specs_.clear();
    if (!schedule_->next(specs_)) {
      finish({});
      break;
    }
    step_.assign(specs_.size(), UcxTransfer{});
    remaining_ = specs_.size();
    for (size_t i = 0; i < specs_.size() && !done(); ++i) {
      UcxTransfer& t = step_[i];
      t.peer = specs_[i].peer;
      t.recv = specs_[i].recv;
      t.bytes = specs_[i].bytes;
      post(t, channel_, specs_[i].buffer);
    }
  }
  advancing_ = false;
}

}  // namespace mw
