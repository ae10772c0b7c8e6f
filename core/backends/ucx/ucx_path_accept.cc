#include "core/backends/ucx/ucx_path_accept.h"

#include "core/backends/ucx/ucx_sockaddr.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {

UcxPathAcceptors::UcxPathAcceptors(UcxEngine& engine, const std::vector<std::string>& addresses)
    : engine_(engine), alive_(std::make_shared<UcxPathAcceptors*>(this)) {
  UcxEngine::Lock lock = engine_.lock();
  try {
    for (size_t i = 0; i < engine_.pathCount() && i < addresses.size(); ++i) {
      sockaddr_storage addr;
      socklen_t length = 0;
      if (!socketAddress(addresses[i], 0, addr, length)) {
        throw Error(Status::InvalidArgument, "path " + std::to_string(i) + " address '" + addresses[i] +
                                                 "' is not an IP address");
      }
      paths_.push_back(std::make_unique<Path>(Path{this, i}));
      Path& path = *paths_.back();
      ucp_listener_params_t params{};
      params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
      params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
      params.sockaddr.addrlen = length;
      params.conn_handler.cb = &UcxPathAcceptors::onConnectionRequest;
      params.conn_handler.arg = &path;
      ucs_status_t s = ucp_listener_create(engine_.pathWorker(i), &params, &path.listener);
      ucp_listener_attr_t attr{};
      attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
      if (s == UCS_OK) s = ucp_listener_query(path.listener, &attr);
      if (s != UCS_OK) {
        throw Error(Status::Backend, "UCX cannot listen on path " + std::to_string(i) + " address " + addresses[i] +
                                         ": " + ucs_status_string(s));
      }
      path.port = portOf(attr.sockaddr);
    }
  } catch (...) {
    for (auto& p : paths_) {
      if (p->listener) ucp_listener_destroy(p->listener);
    }
    throw;
  }
}

UcxPathAcceptors::~UcxPathAcceptors() {
  for (auto& p : paths_) ucp_listener_destroy(p->listener);
  while (!accepted_.empty()) close(accepted_.begin()->first);
}

void UcxPathAcceptors::onConnectionRequest(ucp_conn_request_h request, void* arg) {
  auto* path = static_cast<Path*>(arg);
  // Inside progress: the endpoint is made once it returned.
  path->owner->engine_.defer([alive = std::weak_ptr<UcxPathAcceptors*>(path->owner->alive_), index = path->index,
                              request] {
    if (auto held = alive.lock()) (*held)->accept(index, request);
  });
}

void UcxPathAcceptors::accept(size_t path, ucp_conn_request_h request) {
  auto a = std::make_unique<Accepted>(Accepted{this, next_id_++});
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxPathAcceptors::onError;
  params.err_handler.arg = a.get();
  const ucs_status_t s = ucp_ep_create(engine_.pathWorker(path), &params, &a->ep);
  if (s != UCS_OK) {
    // The connecting side's endpoint fails: that path is in doubt there.
    MW_LOG(LogLevel::Debug, "UCX cannot accept a connection on path %zu: %s", path, ucs_status_string(s));
    return;
  }
  const uint64_t id = a->id;
  accepted_.emplace(id, std::move(a));
}

void UcxPathAcceptors::onError(void* arg, ucp_ep_h, ucs_status_t) {
  // UCX reports nothing on an endpoint once it is closed: `arg` is alive.
  auto* a = static_cast<Accepted*>(arg);
  a->owner->engine_.defer([alive = std::weak_ptr<UcxPathAcceptors*>(a->owner->alive_), id = a->id] {
    if (auto held = alive.lock()) (*held)->close(id);
  });
}

void UcxPathAcceptors::close(uint64_t id) {
  auto it = accepted_.find(id);
  if (it == accepted_.end()) return;
  ucp_ep_h ep = it->second->ep;
  accepted_.erase(it);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* r = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
}

}  // namespace mw
