#include "core/backends/ucx/ucx_links.h"

#include "core/error.h"
#include "core/log.h"

namespace mw {

uint64_t UcxLink::listen(std::function<void(const std::string&)> on_failure) {
  uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(on_failure));
  return id;
}

void UcxLink::unlisten(uint64_t id) { listeners_.erase(id); }

std::shared_ptr<UcxLink> UcxLinks::connect(const UcxPeerInfo& peer, bool endpoint) {
  auto link = std::make_shared<UcxLink>();
  link->table_ = this;
  link->pid_ = peer.pid;
  if (endpoint) openEndpoint(*link, peer);
  const UcxPeerInfo self = thisProcess();
  if (peer.host == self.host && peer.pid != self.pid) {
    UcxLink* raw = link.get();
    link->watched_ = engine_.watchProcess(
        peer.pid, peer.start_ticks, [this, raw] { fail(*raw, "its process " + std::to_string(raw->pid_) + " exited"); },
        link->watch_);
    if (!link->watched_) {
      close(*link);
      throw Error(Status::Backend, "peer process " + std::to_string(peer.pid) + " is gone");
    }
  }
  return link;
}

void UcxLinks::openEndpoint(UcxLink& link, const UcxPeerInfo& peer) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxLinks::onEndpointError;
  params.err_handler.arg = &link;
  ucs_status_t s = ucp_ep_create(engine_.worker(), &params, &link.ep_);
  if (s != UCS_OK) {
    throw Error(Status::Backend, std::string("UCX cannot connect to pid ") + std::to_string(peer.pid) + ": " +
                                     ucs_status_string(s));
  }
}

void UcxLinks::release(const std::shared_ptr<UcxLink>& link) { close(*link); }

void UcxLinks::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* link = static_cast<UcxLink*>(arg);
  // Inside ucp_worker_progress: closing the endpoint must wait, and the
  // world holding the link may let go of it meanwhile.
  UcxLinks* table = link->table_;
  table->engine_.defer([table, weak = link->weak_from_this(), status] {
    if (auto held = weak.lock()) table->fail(*held, std::string("UCX reported ") + ucs_status_string(status));
  });
}

void UcxLinks::fail(UcxLink& link, const std::string& why) {
  if (link.failed_) return;
  link.failed_ = true;
  link.failure_ = why;
  // The listeners may release the link (and drop the last reference).
  std::shared_ptr<UcxLink> hold = link.shared_from_this();
  auto listeners = std::move(link.listeners_);
  for (auto& [id, on_failure] : listeners) on_failure(why);
}

void UcxLinks::close(UcxLink& link) {
  if (link.watched_) {
    engine_.unwatchProcess(link.watch_);
    link.watched_ = false;
  }
  if (!link.ep_) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // completes what is pending, Cancelled
  void* req = ucp_ep_close_nbx(link.ep_, &param);
  link.ep_ = nullptr;
  if (UCS_PTR_IS_PTR(req)) {
    ucp_request_free(req);
  } else if (UCS_PTR_IS_ERR(req)) {
    MW_LOG(LogLevel::Debug, "closing a UCX endpoint: %s", ucs_status_string(UCS_PTR_STATUS(req)));
  }
}

}  // namespace mw
