#include "core/backends/ucx/ucx_links.h"

#include <cstring>

#include "core/backends/ucx/ucx_sockaddr.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {

// The active message that names an accepted endpoint's world.
constexpr uint16_t kHelloId = 1;
constexpr uint32_t kHelloMagic = 0x6d77686c;  // "mwhl"

struct Hello {
  uint32_t magic = kHelloMagic;
  uint32_t world_id = 0;  // at the accepting member
  int32_t rank = -1;      // of the connecting member
  int32_t pid = 0;        // of the connecting member
};

}  // namespace

uint64_t UcxLink::listen(std::function<void(const std::string&)> on_failure) {
  uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(on_failure));
  return id;
}

void UcxLink::unlisten(uint64_t id) { listeners_.erase(id); }

UcxLinks::UcxLinks(UcxEngine& engine, const std::string& bind_ip, const std::string& publish_ip)
    : engine_(engine), listen_ip_(publish_ip), alive_(std::make_shared<UcxLinks*>(this)) {
  sockaddr_storage addr;
  socklen_t length = 0;
  const bool v6 = publish_ip.find(':') != std::string::npos;
  const std::string any = v6 ? "::" : "0.0.0.0";
  if (!socketAddress(bind_ip.empty() ? any : bind_ip, 0, addr, length)) {
    throw Error(Status::InvalidArgument, "UCX cannot listen on '" + bind_ip + "': not an IP address");
  }
  UcxEngine::Lock lock = engine_.lock();
  ucp_am_handler_param_t hello{};
  hello.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hello.id = kHelloId;
  hello.cb = &UcxLinks::onHello;
  hello.arg = this;
  ucs_status_t s = ucp_worker_set_am_recv_handler(engine_.worker(), &hello);
  if (s != UCS_OK) throw Error(Status::Backend, std::string("UCX refused a message handler: ") + ucs_status_string(s));
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = length;
  params.conn_handler.cb = &UcxLinks::onConnectionRequest;
  params.conn_handler.arg = this;
  s = ucp_listener_create(engine_.worker(), &params, &listener_);
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (s == UCS_OK) s = ucp_listener_query(listener_, &attr);
  if (s != UCS_OK) {
    if (listener_) ucp_listener_destroy(listener_);
    hello.cb = nullptr;
    ucp_worker_set_am_recv_handler(engine_.worker(), &hello);
    throw Error(Status::Backend, "UCX cannot listen on " + (bind_ip.empty() ? any : bind_ip) + ": " +
                                     ucs_status_string(s));
  }
  listen_port_ = portOf(attr.sockaddr);
}

UcxLinks::~UcxLinks() {
  ucp_listener_destroy(listener_);
  ucp_am_handler_param_t hello{};
  hello.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  hello.id = kHelloId;
  hello.cb = nullptr;
  ucp_worker_set_am_recv_handler(engine_.worker(), &hello);
  while (!endpoints_.empty()) closeEndpoint(endpoints_.begin()->first);
}

void UcxLinks::onConnectionRequest(ucp_conn_request_h request, void* arg) {
  auto* links = static_cast<UcxLinks*>(arg);
  // Inside progress: the endpoint is made once it returned.
  links->engine_.defer([alive = std::weak_ptr<UcxLinks*>(links->alive_), request] {
    if (auto held = alive.lock()) (*held)->accept(request);
  });
}

void UcxLinks::accept(ucp_conn_request_h request) {
  const uint64_t id = next_endpoint_++;
  auto arg = std::make_unique<ErrorArg>(ErrorArg{this, id});
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxLinks::onEndpointError;
  params.err_handler.arg = arg.get();
  ucp_ep_h ep = nullptr;
  const ucs_status_t s = ucp_ep_create(engine_.worker(), &params, &ep);
  if (s != UCS_OK) {
    // The connecting side's endpoint fails: its world breaks there.
    MW_LOG(LogLevel::Debug, "UCX cannot accept a connection: %s", ucs_status_string(s));
    return;
  }
  endpoints_.emplace(id, Endpoint{ep, {}, std::move(arg)});
}

ucs_status_t UcxLinks::onHello(void* arg, const void* header, size_t header_length, void*, size_t,
                               const ucp_am_recv_param_t* param) {
  auto* links = static_cast<UcxLinks*>(arg);
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) || !param->reply_ep) return UCS_OK;
  Hello h;
  // From the network: anything but a hello of this version names no world.
  if (header_length == sizeof h) std::memcpy(&h, header, sizeof h);
  links->claim(h.magic == kHelloMagic ? WorldRank{h.world_id, h.rank} : WorldRank{0, -1}, param->reply_ep);
  return UCS_OK;
}

void UcxLinks::claim(const WorldRank& key, ucp_ep_h ep) {
  uint64_t id = 0;
  for (const auto& [i, e] : endpoints_) {
    if (e.ep == ep && e.link.expired()) id = i;
  }
  if (id == 0) return;  // not one accepted and unclaimed
  auto expected = expected_.find(key);
  if (expected == expected_.end() || expected->second.parked != 0) {
    // No such world, no such rank, or a second endpoint for one pair:
    // closing fails the sender's endpoint, which breaks its world there.
    engine_.defer([alive = std::weak_ptr<UcxLinks*>(alive_), id] {
      if (auto held = alive.lock()) (*held)->closeEndpoint(id);
    });
    return;
  }
  if (auto link = expected->second.link.lock()) {
    take(*link, id);
    expected_.erase(expected);
  } else {
    expected->second.parked = id;
  }
}

void UcxLinks::take(UcxLink& link, uint64_t id) {
  Endpoint& e = endpoints_.at(id);
  e.link = link.weak_from_this();
  if (!link.ep_) {
    link.ep_ = e.ep;
    link.ep_id_ = id;
  } else {
    link.inbound_ = e.ep;
    link.inbound_id_ = id;
  }
  settled_.notify_all();
}

void UcxLinks::expect(uint32_t world_id, int rank) {
  for (int r = 0; r <= rank; ++r) expected_.emplace(WorldRank{world_id, r}, Expected{});
}

void UcxLinks::forget(uint32_t world_id) {
  auto it = expected_.lower_bound(WorldRank{world_id, -1});
  while (it != expected_.end() && it->first.first == world_id) {
    if (it->second.parked) closeEndpoint(it->second.parked);
    it = expected_.erase(it);
  }
}

std::shared_ptr<UcxLink> UcxLinks::link(uint32_t world_id, int rank, const UcxPeerInfo& peer, int peer_rank,
                                        bool data) {
  auto link = std::make_shared<UcxLink>();
  link->table_ = this;
  link->pid_ = peer.pid;
  if (data) {
    link->wants_ep_ = true;
    if (rank <= peer_rank) connectTo(*link, peer, rank);
    if (rank >= peer_rank) {
      auto expected = expected_.find(WorldRank{world_id, peer_rank});
      if (expected == expected_.end()) {
        close(*link);
        throw Error(Status::Internal, "UCX links: rank " + std::to_string(peer_rank) + " of world id " +
                                          std::to_string(world_id) + " was not expected");
      }
      if (expected->second.parked) {
        take(*link, expected->second.parked);
        expected_.erase(expected);
      } else {
        expected->second.link = link;
      }
    }
  }
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

void UcxLinks::connectTo(UcxLink& link, const UcxPeerInfo& peer, int rank) {
  sockaddr_storage addr;
  socklen_t length = 0;
  if (!socketAddress(peer.listen_ip, peer.listen_port, addr, length)) {
    throw Error(Status::Backend, "pid " + std::to_string(peer.pid) + " published '" + peer.listen_ip +
                                     "', not an IP address");
  }
  const uint64_t id = next_endpoint_++;
  auto arg = std::make_unique<ErrorArg>(ErrorArg{this, id});
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = length;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxLinks::onEndpointError;
  params.err_handler.arg = arg.get();
  ucp_ep_h ep = nullptr;
  const ucs_status_t s = ucp_ep_create(engine_.worker(), &params, &ep);
  if (s != UCS_OK) {
    throw Error(Status::Backend, "UCX cannot connect to pid " + std::to_string(peer.pid) + " at " + peer.listen_ip +
                                     ":" + std::to_string(peer.listen_port) + ": " + ucs_status_string(s));
  }
  endpoints_.emplace(id, Endpoint{ep, link.weak_from_this(), std::move(arg)});
  link.ep_ = ep;
  link.ep_id_ = id;

  // The first message on the endpoint, ahead of any data.
  auto* hello = new Hello;
  hello->world_id = peer.world_id;
  hello->rank = rank;
  hello->pid = thisProcess().pid;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  param.user_data = hello;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    delete static_cast<Hello*>(arg);
  };
  void* r = ucp_am_send_nbx(ep, kHelloId, hello, sizeof *hello, nullptr, 0, &param);
  if (!UCS_PTR_IS_PTR(r)) delete hello;
}

void UcxLinks::release(const std::shared_ptr<UcxLink>& link) { close(*link); }

void UcxLinks::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  // UCX reports nothing on an endpoint once it is closed, so `arg` is
  // alive. Inside progress: closing must wait, and the world holding the
  // link may let go of it meanwhile.
  const ErrorArg a = *static_cast<ErrorArg*>(arg);
  a.links->engine_.defer([alive = std::weak_ptr<UcxLinks*>(a.links->alive_), id = a.id, status] {
    if (auto held = alive.lock()) (*held)->endpointFailed(id, status);
  });
}

void UcxLinks::endpointFailed(uint64_t id, ucs_status_t status) {
  auto e = endpoints_.find(id);
  if (e == endpoints_.end()) return;
  std::shared_ptr<UcxLink> link = e->second.link.lock();
  if (!link) {
    // Accepted, and no world took it: nothing to tell.
    for (auto& [key, expected] : expected_) {
      if (expected.parked == id) expected.parked = 0;
    }
    closeEndpoint(id);
    return;
  }
  fail(*link, std::string("UCX reported ") + ucs_status_string(status));
}

void UcxLinks::fail(UcxLink& link, const std::string& why) {
  if (link.failed_) return;
  link.failed_ = true;
  link.failure_ = why;
  settled_.notify_all();
  // The listeners may release the link (and drop the last reference).
  std::shared_ptr<UcxLink> hold = link.shared_from_this();
  auto listeners = std::move(link.listeners_);
  for (auto& [id, on_failure] : listeners) on_failure(why);
}

void UcxLinks::closeEndpoint(uint64_t id) {
  auto e = endpoints_.find(id);
  if (e == endpoints_.end()) return;
  ucp_ep_h ep = e->second.ep;
  endpoints_.erase(e);  // a closed endpoint reports nothing more
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // completes what is pending, Cancelled
  void* req = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(req)) {
    ucp_request_free(req);
  } else if (UCS_PTR_IS_ERR(req)) {
    MW_LOG(LogLevel::Debug, "closing a UCX endpoint: %s", ucs_status_string(UCS_PTR_STATUS(req)));
  }
}

void UcxLinks::close(UcxLink& link) {
  if (link.watched_) {
    engine_.unwatchProcess(link.watch_);
    link.watched_ = false;
  }
  // Waiting for an endpoint that has not come: it is closed when it does.
  for (auto& [key, expected] : expected_) {
    if (expected.link.lock().get() == &link) expected.link.reset();
  }
  closeEndpoint(link.ep_id_);
  closeEndpoint(link.inbound_id_);
  link.ep_ = link.inbound_ = nullptr;
  link.ep_id_ = link.inbound_id_ = 0;
}

}  // namespace mw
