#include "core/backends/ucx/rails/ucx_path_wire.h"

#include <cstring>
#include <string>

#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/error.h"

namespace mw {

UcxPathRouter::UcxPathRouter(UcxEngine& engine) {
  const std::pair<uint16_t, ucp_am_recv_callback_t> handlers[] = {
      {pathwire::kData, &onMessage<pathwire::kData>},
      {pathwire::kAck, &onMessage<pathwire::kAck>},
      {pathwire::kProbe, &onMessage<pathwire::kProbe>},
      {pathwire::kProbeAck, &onMessage<pathwire::kProbeAck>},
  };
  for (size_t path = 0; path < engine.pathCount(); ++path) {
    args_.push_back(std::make_unique<HandlerArg>(HandlerArg{this, engine.pathWorker(path), path}));
    for (const auto& [id, cb] : handlers) {
      ucp_am_handler_param_t p{};
      p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
      p.id = id;
      p.cb = cb;
      p.arg = args_.back().get();
      const ucs_status_t s = ucp_worker_set_am_recv_handler(engine.pathWorker(path), &p);
      if (s != UCS_OK) {
        throw Error(Status::Backend, "UCX refused an active message handler on path " + std::to_string(path) + ": " +
                                         ucs_status_string(s));
      }
    }
  }
}

template <uint16_t Id>
ucs_status_t UcxPathRouter::onMessage(void* arg, const void* header, size_t header_length, void* data,
                                      size_t length, const ucp_am_recv_param_t* param) {
  // From the network: a header of another size, or for a world this
  // context does not have (any more), is dropped.
  if (header_length != sizeof(pathwire::Header)) return UCS_OK;
  pathwire::Header h;
  std::memcpy(&h, header, sizeof h);
  auto* handler = static_cast<HandlerArg*>(arg);
  UcxPathRouter* router = handler->router;
  auto it = router->worlds_.find(h.to_world);
  if (it == router->worlds_.end()) return UCS_OK;
  UcxFailover& world = *it->second;
  switch (Id) {
    case pathwire::kData:
      return world.onData(h, data, length, *param, handler->worker, handler->path);
    case pathwire::kAck:
      world.onAck(h, handler->path);
      return UCS_OK;
    case pathwire::kProbe:
      world.onProbe(h, *param);
      return UCS_OK;
    default:
      world.onProbeAck(h);
      return UCS_OK;
  }
}

void UcxPathRouter::pathFailed(size_t path) {
  for (const auto& [id, world] : worlds_) world->suspectPath(path);
}

bool UcxPathRouter::cutOff() const {
  size_t peers = 0;
  for (const auto& [id, world] : worlds_) {
    const UcxFailover::Reach r = world->reach();
    if (r.reachable) return false;
    peers += r.peers;
  }
  return peers >= 2;
}

void UcxPathRouter::noteReach(std::chrono::steady_clock::time_point now) {
  if (now - reach_noted_ < kReachNoteEvery) return;
  reach_noted_ = now;
  if (cutOff()) last_cut_off_ = now;
}

bool UcxPathRouter::cutOffSince(std::chrono::steady_clock::time_point since) const {
  return last_cut_off_ >= since || cutOff();
}

}  // namespace mw
