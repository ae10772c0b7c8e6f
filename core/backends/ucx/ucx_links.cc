#include "core/backends/ucx/ucx_links.h"

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {

// What UCX_TLS says about shared memory between processes (the mm
// transports; cma alone moves no messages). Unset: UCX uses it.
bool tlsAllowsSharedMemory() {
  const char* env = std::getenv("UCX_TLS");
  if (!env || !*env) return true;
  std::string list(env);
  const bool exclude = list[0] == '^';
  if (exclude) list.erase(0, 1);
  bool named_all = false, named_sm = false, named_posix = false, named_sysv = false;
  std::istringstream in(list);
  for (std::string tl; std::getline(in, tl, ',');) {
    named_all |= tl == "all";
    named_sm |= tl == "sm" || tl == "shm" || tl == "mm";
    named_posix |= tl == "posix";
    named_sysv |= tl == "sysv";
  }
  if (exclude) return !(named_all || named_sm || (named_posix && named_sysv));
  return named_all || named_sm || named_posix || named_sysv;
}

}  // namespace

uint64_t UcxLink::listen(std::function<void(const std::string&)> on_failure) {
  uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(on_failure));
  return id;
}

void UcxLink::unlisten(uint64_t id) { listeners_.erase(id); }

UcxLinks::UcxLinks(UcxEngine& engine) : engine_(engine), shared_memory_(tlsAllowsSharedMemory()) {}

UcxLinks::~UcxLinks() {
  for (auto& [key, link] : shared_) close(*link, false);
  shared_.clear();
}

std::shared_ptr<UcxLink> UcxLinks::connect(const UcxPeerInfo& peer) {
  const UcxPeerInfo self = thisProcess();
  const bool same_host = peer.host == self.host;
  const bool shared = same_host && shared_memory_;
  if (shared) {
    auto it = shared_.find(peer.address);
    if (it != shared_.end()) return it->second;
  }
  auto link = std::make_shared<UcxLink>();
  link->table_ = this;
  link->shared_ = shared;
  link->pid_ = peer.pid;
  link->key_ = peer.address;

  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer.address.data());
  // Mode NONE still reports transport errors to a handler, if one is set;
  // without one, UCX 1.13 treats them as fatal.
  params.err_mode = shared ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxLinks::onEndpointError;
  params.err_handler.arg = link.get();
  ucs_status_t s = ucp_ep_create(engine_.worker(), &params, &link->ep_);
  if (s != UCS_OK) {
    throw Error(Status::Backend, std::string("UCX cannot connect to pid ") + std::to_string(peer.pid) + ": " +
                                     ucs_status_string(s));
  }
  // A process of this host cannot reset a connection when it dies; its
  // pidfd tells. Our own process never exits under us.
  if (same_host && peer.pid != self.pid) {
    UcxLink* raw = link.get();
    link->watched_ = engine_.watchProcess(
        peer.pid, peer.start_ticks, [this, raw] { fail(*raw, "its process " + std::to_string(raw->pid_) + " exited"); },
        link->watch_);
    if (!link->watched_) {
      close(*link, false);
      throw Error(Status::Backend, "peer process " + std::to_string(peer.pid) + " is gone");
    }
  }
  if (shared) shared_[peer.address] = link;
  return link;
}

void UcxLinks::release(const std::shared_ptr<UcxLink>& link) {
  if (link->shared_) return;
  close(*link, true);
}

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
  // Keep the link alive while its listeners run: they may release it.
  std::shared_ptr<UcxLink> hold;
  if (link.shared_) {
    auto it = shared_.find(link.key_);
    if (it != shared_.end() && it->second.get() == &link) {
      hold = it->second;
      shared_.erase(it);
    }
  }
  auto listeners = std::move(link.listeners_);
  for (auto& [id, on_failure] : listeners) on_failure(why);
  if (link.shared_) close(link, false);
}

void UcxLinks::close(UcxLink& link, bool force) {
  if (link.watched_) {
    engine_.unwatchProcess(link.watch_);
    link.watched_ = false;
  }
  if (!link.ep_) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // Mode NONE cannot be forced; its close flushes, and UCX keeps the
  // endpoint (until the worker goes) while the peer has one to us.
  param.flags = (force && !link.shared_) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  void* req = ucp_ep_close_nbx(link.ep_, &param);
  link.ep_ = nullptr;
  if (UCS_PTR_IS_PTR(req)) {
    // A flush towards a process that is gone never ends; UCX frees the
    // request with the worker.
    ucp_request_free(req);
  } else if (UCS_PTR_IS_ERR(req)) {
    MW_LOG(LogLevel::Debug, "closing a UCX endpoint: %s", ucs_status_string(UCS_PTR_STATUS(req)));
  }
}

}  // namespace mw
