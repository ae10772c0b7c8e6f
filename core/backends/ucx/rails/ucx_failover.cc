#include "core/backends/ucx/rails/ucx_failover.h"

#include <algorithm>

#include "core/backends/ucx/ucx_endpoint.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {

// One transmission of a message on one endpoint, for its completion
// callback; UCX reads the header until then.
struct UcxFailover::Attempt {
  pathwire::Header header;
  SendWindow::MessagePtr message;
  std::weak_ptr<UcxFailover> owner;
  UcxEngine* engine = nullptr;
  int peer = 0;
  uint64_t ep_serial = 0;
};

// What an endpoint's error handler needs; freed when the endpoint closes.
struct UcxFailover::EpGuard {
  std::weak_ptr<UcxFailover> owner;
  UcxEngine* engine = nullptr;
  int peer = 0;
  uint64_t serial = 0;
};

UcxFailover::UcxFailover(UcxEngine& engine, UcxPathRouter& router, uint32_t world_id, int rank, int size,
                         std::chrono::milliseconds path_timeout, std::chrono::milliseconds member_timeout)
    : engine_(engine),
      router_(router),
      world_id_(world_id),
      rank_(rank),
      path_timeout_(path_timeout),
      member_timeout_(member_timeout),
      peers_(static_cast<size_t>(size)) {
  for (int r = 0; r < size; ++r) peers_[static_cast<size_t>(r)].rank = r;
  router_.add(world_id_, this);
}

UcxFailover::~UcxFailover() { close(); }

void UcxFailover::connect(int peer, uint32_t world_id, const std::vector<UcxPath>& mine,
                          const std::vector<UcxPath>& theirs) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  p.world_id = world_id;
  const size_t n = std::min({mine.size(), theirs.size(), engine_.pathCount()});
  p.paths.resize(n);
  const auto now = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    Path& path = p.paths[i];
    path.index = i;
    path.local_ip = mine[i].ip;
    path.peer_ip = theirs[i].ip;
    path.peer_listen_port = theirs[i].listen_port;
    path.peer_probe_port = theirs[i].probe_port;
    path.silent_since = now - path_timeout_;
    startReach(p, path);
  }
  p.sending.restart();
  p.heard = now;
  p.connected = true;
  armTimer();
}

void UcxFailover::start(Hooks hooks) {
  hooks_ = std::move(hooks);
  // A path not up yet has been silent only since the world formed: forming
  // may take long (a member joins late), and a peer's world answers probes
  // only once it exists: counted from connect(), a world whose paths come up
  // just after it forms would break at once as unreachable.
  const auto now = Clock::now();
  for (Peer& p : peers_) {
    for (Path& path : p.paths) {
      if (pathIsDown(path.state) && !path.announced) path.silent_since = now - path_timeout_;
    }
  }
}

void UcxFailover::close() {
  if (closed_) return;
  closed_ = true;
  router_.remove(world_id_);
  if (timer_) engine_.cancel(timer_);
  timer_ = 0;
  // Closing completes what UCX holds (Cancelled); then what it never got,
  // and every receive, end here.
  for (Peer& p : peers_) {
    for (Path& path : p.paths) {
      closeEndpoint(path.ep, path.ep_serial);
      closeEndpoint(path.probe_ep, path.probe_serial);
      path.reach.reset();
    }
  }
  dropArrivals();
  for (Peer& p : peers_) {
    p.sending.giveUp();
    p.receiving.giveUp();
  }
  guards_.clear();
}

ucp_ep_h UcxFailover::openEndpoint(Peer& p, size_t path, uint64_t& serial) {
  serial = next_serial_++;
  auto guard = std::make_unique<EpGuard>(EpGuard{weak_from_this(), &engine_, p.rank, serial});
  auto on_error = [](void* arg, ucp_ep_h, ucs_status_t status) {
    auto* g = static_cast<EpGuard*>(arg);
    // Inside progress: the endpoint closes once it returned.
    g->engine->defer([owner = g->owner, peer = g->peer, serial = g->serial, status] {
      if (auto f = owner.lock()) f->onEndpointError(peer, serial, status);
    });
  };
  // A client-server endpoint to the peer's path listener (ucx_path_accept.h).
  ucp_ep_h ep = nullptr;
  const ucs_status_t s = connectEndpoint(engine_.pathWorker(path), p.paths[path].peer_ip,
                                         p.paths[path].peer_listen_port, on_error, guard.get(), &ep);
  if (s == UCS_OK) guards_[serial] = std::move(guard);
  if (s != UCS_OK) {
    throw Error(Status::Backend, "UCX cannot connect path " + std::to_string(path) + " to rank " +
                                     std::to_string(p.rank) + " at " + p.paths[path].peer_ip + ": " +
                                     ucs_status_string(s));
  }
  return ep;
}

void UcxFailover::closeEndpoint(ucp_ep_h& ep, uint64_t serial) {
  if (!ep) return;
  ucp_ep_h closing = ep;
  ep = nullptr;
  forceClose(closing);  // completes what is pending on it, Cancelled
  guards_.erase(serial);  // a closed endpoint reports nothing more
}

std::string UcxFailover::pathName(const Peer& p, const Path& path) const {
  return "path " + std::to_string(path.index) + " (" + path.local_ip + " to " + path.peer_ip + ") to rank " +
         std::to_string(p.rank);
}

// ---------------------------------------------------------------- sending

void UcxFailover::send(int peer, uint64_t channel, const void* buffer, size_t bytes, SendDone done) {
  if (closed_) {
    done(DeliveryOutcome::GivenUp);
    return;
  }
  Peer& p = peers_[static_cast<size_t>(peer)];
  transmit(p, p.sending.add(channel, buffer, bytes, std::move(done)));
  armTimer();
}

void UcxFailover::transmit(Peer& p, const SendWindow::MessagePtr& m) {
  if (p.left || p.paths.empty() || p.current >= p.paths.size()) return;
  Path& path = p.paths[p.current];
  if (pathIsDown(path.state) || !path.ep) return;  // it goes when a path comes back
  auto* a = new Attempt{{}, m, weak_from_this(), &engine_, p.rank, path.ep_serial};
  a->header.to_world = p.world_id;
  a->header.from_world = world_id_;
  a->header.from_rank = static_cast<uint32_t>(rank_);
  a->header.channel = m->channel;
  a->header.seq = m->seq;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
  param.user_data = a;
  param.cb.send = [](void* request, ucs_status_t status, void* arg) {
    ucp_request_free(request);
    std::unique_ptr<Attempt> a(static_cast<Attempt*>(arg));
    a->engine->sendDone();
    if (auto f = a->owner.lock()) f->attemptEnded(a->peer, a->ep_serial, status, *a->message);
  };
  void* r = ucp_am_send_nbx(path.ep, pathwire::kData, &a->header, sizeof a->header, m->buffer, m->bytes, &param);
  if (metrics_ && !UCS_PTR_IS_ERR(r)) metrics_->sentOnRail(path.index, m->bytes);
  if (UCS_PTR_IS_PTR(r)) {
    p.sending.transmitting(*m);
    engine_.sendWaiting();
    return;
  }
  delete a;
  if (UCS_PTR_IS_ERR(r)) {
    const uint64_t serial = path.ep_serial;
    const ucs_status_t s = UCS_PTR_STATUS(r);
    engine_.defer([w = weak_from_this(), peer = p.rank, serial, s] {
      if (auto f = w.lock()) f->onEndpointError(peer, serial, s);
    });
  }
}

void UcxFailover::attemptEnded(int peer, uint64_t ep_serial, ucs_status_t status, SendWindow::Message& m) {
  if (status != UCS_OK && status != UCS_ERR_CANCELED) {
    engine_.defer([w = weak_from_this(), peer, ep_serial, status] {
      if (auto f = w.lock()) f->onEndpointError(peer, ep_serial, status);
    });
  }
  peers_[static_cast<size_t>(peer)].sending.transmitted(m);
}

void UcxFailover::onAck(const pathwire::Header& h, size_t path) {
  if (closed_ || h.from_rank >= peers_.size()) return;
  Peer& p = peers_[h.from_rank];
  if (path < p.paths.size()) p.paths[path].proven = true;
  // Old news and nonsense change nothing, and are no sign of life: a path
  // that brings only those does not deliver.
  if (p.sending.acknowledge(h.seq)) p.heard = Clock::now();
}

PathChange UcxFailover::pathChange(const Peer& p, const Path& path) const {
  PathChange c;
  c.index = static_cast<int>(path.index);
  c.local_address = path.local_ip;
  c.remote_address = path.peer_ip;
  c.outstanding_messages = p.sending.messages();
  c.outstanding_bytes = p.sending.bytes();
  return c;
}

// Every message not acknowledged goes again, in order, on the current
// path; the receiver drops what it already has.
void UcxFailover::retransmit(Peer& p) {
  p.sending.restart();
  for (const auto& m : p.sending.unacknowledged()) transmit(p, m);
}

// The member left or its process is gone: nothing more goes to it, and
// what it was sent is given up.
void UcxFailover::peerLeft(int peer) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (closed_ || p.left) return;
  p.left = true;
  for (Path& path : p.paths) {
    closeEndpoint(path.ep, path.ep_serial);
    closeEndpoint(path.probe_ep, path.probe_serial);
    path.reach.reset();
  }
  p.sending.giveUp();
}

}  // namespace mw
