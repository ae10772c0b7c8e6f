#include "core/backends/ucx/ucx_links.h"

#include <cstring>

#include "core/backends/ucx/ucx_endpoint.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {

// The active message that names an accepted endpoint's world, and its
// acknowledgement (the same header, on the accepted endpoint).
constexpr uint16_t kHelloId = 1;
constexpr uint16_t kHelloAckId = 2;
constexpr uint32_t kHelloMagic = 0x6d77686c;  // "mwhl"
constexpr uint32_t kHelloAckMagic = 0x6d776861;  // "mwha"

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
  const std::string ip = !bind_ip.empty() ? bind_ip : publish_ip.find(':') != std::string::npos ? "::" : "0.0.0.0";
  engine_.call([&] { startListening(ip); });
}

void UcxLinks::startListening(const std::string& ip) {
  setHandler(kHelloId, &UcxLinks::onHello);
  setHandler(kHelloAckId, &UcxLinks::onHelloAck);
  const ucs_status_t s =
      startListener(engine_.worker(), ip, &UcxLinks::onConnectionRequest, this, &listener_, &listen_port_);
  if (s != UCS_OK) {
    setHandler(kHelloId, nullptr);
    setHandler(kHelloAckId, nullptr);
    if (s == UCS_ERR_INVALID_ADDR) {
      throw Error(Status::InvalidArgument, "UCX cannot listen on '" + ip + "': not an IP address");
    }
    throw Error(Status::Backend, "UCX cannot listen on " + ip + ": " + ucs_status_string(s));
  }
}

UcxLinks::~UcxLinks() {
  ucp_listener_destroy(listener_);
  setHandler(kHelloId, nullptr);
  setHandler(kHelloAckId, nullptr);
  while (!endpoints_.empty()) closeEndpoint(endpoints_.begin()->first);
}

void UcxLinks::setHandler(uint16_t id, ucp_am_recv_callback_t cb) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.cb = cb;
  p.arg = this;
  const ucs_status_t s = ucp_worker_set_am_recv_handler(engine_.worker(), &p);
  if (s != UCS_OK && cb) {
    throw Error(Status::Backend, std::string("UCX refused a message handler: ") + ucs_status_string(s));
  }
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
  ucp_ep_h ep = nullptr;
  const ucs_status_t s = acceptEndpoint(engine_.worker(), request, &UcxLinks::onEndpointError, arg.get(), &ep);
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

ucs_status_t UcxLinks::onHelloAck(void* arg, const void* header, size_t header_length, void*, size_t,
                                  const ucp_am_recv_param_t* param) {
  auto* links = static_cast<UcxLinks*>(arg);
  Hello h;
  if (header_length == sizeof h) std::memcpy(&h, header, sizeof h);
  if (h.magic != kHelloAckMagic || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return UCS_OK;
  for (auto& [id, e] : links->endpoints_) {
    if (e.ep != param->reply_ep || !e.awaiting_ack) continue;
    e.awaiting_ack = false;
    if (auto link = e.link.lock()) --link->setups_;
  }
  return UCS_OK;
}

void UcxLinks::claim(const WorldRank& key, ucp_ep_h ep) {
  uint64_t id = 0;
  for (const auto& [i, e] : endpoints_) {
    if (e.ep == ep && !e.named && e.link.expired()) id = i;
  }
  if (id == 0) return;  // not one accepted and unnamed: a hello again, say
  auto expected = expected_.find(key);
  if (expected == expected_.end() || expected->second.parked != 0) {
    // No such world, no such rank, or a second endpoint for one pair:
    // closing fails the sender's endpoint, which breaks its world there.
    engine_.defer([alive = std::weak_ptr<UcxLinks*>(alive_), id] {
      if (auto held = alive.lock()) (*held)->closeEndpoint(id);
    });
    return;
  }
  endpoints_.at(id).named = true;
  if (auto link = expected->second.link.lock()) {
    take(*link, id);
    expected_.erase(expected);
  } else {
    expected->second.parked = id;
  }
  Hello ack;
  ack.magic = kHelloAckMagic;
  ack.world_id = key.first;
  ack.rank = key.second;
  ack.pid = thisProcess().pid;
  sendHeader(ep, kHelloAckId, ack, UCP_AM_SEND_FLAG_REPLY);
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
  --link.setups_;
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
    if (rank <= peer_rank) connectTo(*link, peer, rank);
    if (rank >= peer_rank) {
      ++link->setups_;
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
        peer.pid, peer.start_ticks,
        [this, raw] {
          raw->exited_ = true;
          fail(*raw, "its process " + std::to_string(raw->pid_) + " exited");
        },
        link->watch_);
    if (!link->watched_) {
      close(*link);
      throw Error(Status::Backend, "peer process " + std::to_string(peer.pid) + " is gone");
    }
  }
  return link;
}

void UcxLinks::connectTo(UcxLink& link, const UcxPeerInfo& peer, int rank) {
  const uint64_t id = next_endpoint_++;
  auto arg = std::make_unique<ErrorArg>(ErrorArg{this, id});
  ucp_ep_h ep = nullptr;
  const ucs_status_t s = connectEndpoint(engine_.worker(), peer.listen_ip, peer.listen_port,
                                         &UcxLinks::onEndpointError, arg.get(), &ep);
  if (s != UCS_OK) {
    throw Error(Status::Backend, "UCX cannot connect to pid " + std::to_string(peer.pid) + " at " + peer.listen_ip +
                                     ":" + std::to_string(peer.listen_port) + ": " + ucs_status_string(s));
  }
  endpoints_.emplace(id, Endpoint{ep, link.weak_from_this(), std::move(arg), true});
  ++link.setups_;
  link.ep_ = ep;
  link.ep_id_ = id;

  // The first message on the endpoint, ahead of any data.
  Hello hello;
  hello.world_id = peer.world_id;
  hello.rank = rank;
  hello.pid = thisProcess().pid;
  sendHeader(ep, kHelloId, hello, UCP_AM_SEND_FLAG_REPLY);
}

void UcxLinks::share(const std::shared_ptr<UcxLink>& link) { ++link->holders_; }

void UcxLinks::release(const std::shared_ptr<UcxLink>& link) {
  if (--link->holders_ > 0) return;
  close(*link);
}

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
  forceClose(ep);
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
