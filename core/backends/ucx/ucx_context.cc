#include "core/backends/ucx/ucx_context.h"

#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/error.h"

namespace mw {
namespace {

// Long enough for every member to have learnt of a break (heartbeat
// timeouts are seconds at most in practice) and stopped sending.
constexpr std::chrono::seconds kDrainFor{30};

}  // namespace

// A receive that takes every message still arriving for a retired world
// id and drops it (truncated into no buffer: a large message's sender is
// released as if it had been received).
struct UcxContext::Drain {
  UcxContext* owner = nullptr;
  uint32_t id = 0;
  std::chrono::steady_clock::time_point until;
  void* request = nullptr;
  bool cancelled = false;

  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void* arg) {
    auto* d = static_cast<Drain*>(arg);
    ucp_request_free(request);
    d->request = nullptr;
    if (status == UCS_ERR_CANCELED || d->cancelled) return;
    d->post();
  }

  void post() {
    ucp_worker_h worker = owner->engine_->worker();
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv = &Drain::onRecv;
    param.user_data = this;
    for (;;) {
      void* r = ucp_tag_recv_nbx(worker, nullptr, 0, ucxtag::make(id, 0, 0), ucxtag::kWorldMask, &param);
      if (UCS_PTR_IS_PTR(r)) {
        request = r;
        return;
      }
      // Taken at once from the messages that had arrived (an empty one, or
      // one cut off): take the next. Anything else ends the draining.
      if (r != nullptr && UCS_PTR_STATUS(r) != UCS_ERR_MESSAGE_TRUNCATED) return;
    }
  }

  void cancel() {
    if (cancelled) return;
    cancelled = true;
    if (request) ucp_request_cancel(owner->engine_->worker(), request);
  }
};

UcxContext::UcxContext(std::chrono::microseconds spin)
    : engine_(std::make_shared<UcxEngine>(spin)), links_(std::make_unique<UcxLinks>(*engine_)) {}

UcxContext::~UcxContext() { shutdown(); }

void UcxContext::shutdown() {
  {
    UcxEngine::Lock lock = engine_->lock();
    if (!links_) return;
    for (auto& [id, d] : drains_) d->cancel();
    links_.reset();
    engine_->progressLocked();
  }
  engine_->shutdown();
  // After the worker: nothing can call back into them any more.
  orphans_.clear();
  drains_.clear();
}

uint32_t UcxContext::allocateWorldId() {
  sweepDrains();
  for (uint32_t tries = 0; tries < ucxtag::kMaxWorldId; ++tries) {
    uint32_t id = next_id_;
    next_id_ = next_id_ == ucxtag::kMaxWorldId ? 1 : next_id_ + 1;
    if (in_use_.count(id) || drains_.count(id)) continue;
    in_use_.insert(id);
    return id;
  }
  throw Error(Status::Unsupported, "every UCX world id of this context is in use (" +
                                       std::to_string(ucxtag::kMaxWorldId) + " worlds)");
}

void UcxContext::retireWorldId(uint32_t id) {
  in_use_.erase(id);
  auto d = std::make_unique<Drain>();
  d->owner = this;
  d->id = id;
  d->until = std::chrono::steady_clock::now() + kDrainFor;
  d->post();
  drains_[id] = std::move(d);
  sweepDrains();
}

void UcxContext::sweepDrains() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = drains_.begin(); it != drains_.end();) {
    Drain& d = *it->second;
    if (now < d.until) {
      ++it;
      continue;
    }
    d.cancel();
    if (d.request) {
      ++it;  // its cancellation completes on a later progress; swept then
    } else {
      it = drains_.erase(it);
    }
  }
}

void UcxContext::adopt(std::unique_ptr<UcxOp> op) { orphans_.push_back(std::move(op)); }

}  // namespace mw
