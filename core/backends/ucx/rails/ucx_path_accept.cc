#include "core/backends/ucx/rails/ucx_path_accept.h"

#include "core/backends/ucx/ucx_endpoint.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {

UcxPathAcceptors::UcxPathAcceptors(UcxEngine& engine, const std::vector<std::string>& addresses)
    : engine_(engine), alive_(std::make_shared<UcxPathAcceptors*>(this)) {
  engine_.call([&] { listen(addresses); });
}

void UcxPathAcceptors::listen(const std::vector<std::string>& addresses) {
  try {
    for (size_t i = 0; i < engine_.pathCount() && i < addresses.size(); ++i) {
      paths_.push_back(std::make_unique<Path>(Path{this, i}));
      Path& path = *paths_.back();
      const ucs_status_t s = startListener(engine_.pathWorker(i), addresses[i], &UcxPathAcceptors::onConnectionRequest,
                                           &path, &path.listener, &path.port);
      if (s == UCS_ERR_INVALID_ADDR) {
        throw Error(Status::InvalidArgument, "path " + std::to_string(i) + " address '" + addresses[i] +
                                                 "' is not an IP address");
      }
      if (s != UCS_OK) {
        throw Error(Status::Backend, "UCX cannot listen on path " + std::to_string(i) + " address " + addresses[i] +
                                         ": " + ucs_status_string(s));
      }
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
  const ucs_status_t s = acceptEndpoint(engine_.pathWorker(path), request, &UcxPathAcceptors::onError, a.get(), &a->ep);
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
  forceClose(ep);
}

}  // namespace mw
