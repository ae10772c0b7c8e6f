#include "core/backends/ucx/ucx_world.h"

#include <algorithm>

#include "core/backends/ucx/ucx_collective.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_rings.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "core/request.h"
#include "core/store/kv_store.h"
#include "core/world.h"

namespace mw {
namespace {

// How long stop() lets sends to live peers finish before it gives them up.
constexpr std::chrono::milliseconds kStopGrace{500};
// How long a member whose endpoints to a live peer of this host failed
// waits for the break notice that says why, before it blames the peer.
constexpr std::chrono::milliseconds kPeerNoticeWait{250};

// The shape byte of a collective's tag: members that disagree on it never
// match (see ucx_tag.h).
uint8_t shapeOf(const OpDesc& op) {
  uint64_t h = 1469598103934665603ULL;
  for (uint64_t v : {static_cast<uint64_t>(op.kind), static_cast<uint64_t>(op.count),
                     static_cast<uint64_t>(op.dtype), static_cast<uint64_t>(op.redop),
                     static_cast<uint64_t>(static_cast<int64_t>(op.peer))}) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
  return static_cast<uint8_t>(h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24));
}

}  // namespace

// The receive that waits for a peer's control words (ucx_same_host.h):
// its goodbye when it leaves, and the same-host path's.
struct UcxWorld::Control {
  UcxWorld* world = nullptr;  // null once the world stopped
  int peer = -1;
  void* request = nullptr;
  bool ended = false;
  uint64_t word = 0;
  uint64_t path_recv = 0;  // the receive, in a world that sends over its paths

  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void* arg) {
    auto* c = static_cast<Control*>(arg);
    ucp_request_free(request);
    c->request = nullptr;
    c->ended = true;
    if (c->world) c->world->onControl(*c, status);
  }
};

std::unique_ptr<UcxWorld> UcxWorld::connect(std::shared_ptr<UcxContext> ucx, RedisPool& pool,
                                            const Incarnation& inc, int rank, int size,
                                            const WorldSettings& settings, Deadline deadline) {
  const bool path_failover = settings.path_failover;
  if (size > ucxtag::kMaxRanks) {
    throw Error(Status::Unsupported, "UCX worlds have at most " + std::to_string(ucxtag::kMaxRanks) +
                                         " members; size " + std::to_string(size) + " was asked for");
  }
  const uint32_t id = ucx->engine()->call([&] {
    const uint32_t fresh = ucx->allocateWorldId();
    // Before the record is out: lower ranks connect as soon as they read it.
    ucx->links().expect(fresh, rank);
    return fresh;
  });
  std::unique_ptr<UcxWorld> w(new UcxWorld(ucx, rank, id));
  w->same_host_ = settings.same_host_path;
  w->same_host_min_bytes_ = settings.same_host_min_bytes;
  w->metrics_ = settings.metrics;
  UcxEngine& engine = *ucx->engine();
  UcxPeerInfo self = thisProcess();
  self.listen_ip = ucx->links().listenIp();
  self.listen_port = ucx->links().listenPort();
  self.world_id = id;
  for (size_t i = 0; i < ucx->paths().size(); ++i) {
    // A path without a worker's port makes every member decide against
    // failover below.
    const bool worker = path_failover && i < engine.pathCount();
    self.paths.push_back(UcxPath{ucx->paths()[i], worker ? ucx->pathListenPort(i) : uint16_t{0},
                                 worker ? ucx->probePort(i) : uint16_t{0}});
  }
  if (ucx->router() && path_failover) {
    // Before the record is out: a peer may send as soon as it read it.
    engine.call([&] {
      w->failover_ = std::make_shared<UcxFailover>(engine, *ucx->router(), id, rank, size, ucx->pathTimeout(),
                                                   ucx->memberTimeout());
      w->failover_->countInto(settings.metrics);
    });
  }
  KvStore store(pool, inc, "u:", deadline);
  const std::string mine = encodePeerInfo(self);
  store.set(std::to_string(rank), std::vector<char>(mine.begin(), mine.end()));
  std::vector<UcxPeerInfo> infos(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::vector<char> bytes = store.get(std::to_string(r));
    if (!decodePeerInfo(std::string(bytes.begin(), bytes.end()), infos[static_cast<size_t>(r)])) {
      throw Error(Status::Store, "world rendezvous: the UCX record of rank " + std::to_string(r) + " under " +
                                     store.prefix() + " is malformed (" + std::to_string(bytes.size()) + " bytes)");
    }
  }
  // Every member decides alike, from the same records.
  const bool on_paths = std::all_of(infos.begin(), infos.end(), [](const UcxPeerInfo& info) {
    return info.paths.size() >= 2 &&
           std::all_of(info.paths.begin(), info.paths.end(), [](const UcxPath& p) { return p.listen_port != 0; });
  });
  engine.call([&] {
    if (w->failover_ && !on_paths) {
      w->failover_->close();
      w->failover_.reset();
    }
    w->peers_.resize(static_cast<size_t>(size));
    w->departed_.assign(static_cast<size_t>(size), false);
    if (w->failover_) ucx->links().forget(id);
    for (int r = 0; r < size; ++r) {
      Peer& p = w->peers_[static_cast<size_t>(r)];
      const UcxPeerInfo& info = infos[static_cast<size_t>(r)];
      p.world_id = info.world_id;
      if (r != rank) p.pacing = std::make_shared<SendPacing>();
      p.link = ucx->links().link(id, rank, info, r, !w->failover_);
      if (w->failover_) w->failover_->connect(r, info.world_id, self.paths, info.paths);
      w->probeSameHost(r, self, info, on_paths);
    }
  });
  // The endpoints of lower ranks arrive as they connect.
  auto firstUnsettled = [&w] {
    for (size_t r = 0; r < w->peers_.size(); ++r) {
      if (!w->peers_[r].link->settled()) return static_cast<int>(r);
    }
    return -1;
  };
  if (!engine.waitUntil(deadline, [&] { return firstUnsettled() < 0; })) {
    const int late = engine.call(firstUnsettled);
    if (late >= 0) {
      const UcxPeerInfo& info = infos[static_cast<size_t>(late)];
      throw Error(Status::Timeout, "world rendezvous: rank " + std::to_string(late) + " (pid " +
                                       std::to_string(info.pid) + " at " + info.listen_ip + ") did not connect in time");
    }
  }
  // Members of this host settle their rings before either starts (ucx_rings.cc).
  engine.call([&] { w->sendSameHostHellos(); });
  if (!engine.waitUntil(deadline, [&] { return w->sameHostHellosIn(); })) {
    throw Error(Status::Timeout, "world rendezvous: a member of this host did not send its same-host hello in time");
  }
  engine.call([&] { w->takeRings(); });
  return w;
}

UcxWorld::UcxWorld(std::shared_ptr<UcxContext> ucx, int rank, uint32_t world_id)
    : ucx_(std::move(ucx)), rank_(rank), world_id_(world_id) {}

UcxWorld::~UcxWorld() {
  if (!stopped_) {
    // Never started (rendezvous failed): only links and the id to give back.
    ucx_->engine()->call([this] {
      if (failover_) failover_->close();
      abandonHellos();
      dropRings();
      for (Peer& p : peers_) {
        if (p.link) ucx_->links().release(p.link);
      }
      ucx_->links().forget(world_id_);
      ucx_->releaseWorldId(world_id_);
    });
  }
}

void UcxWorld::start(World& world) {
  world_ = &world;
  op_timeout_ = world.opTimeout();
  ucx_->engine()->call([this] { listen(); });
}

void UcxWorld::listen() {
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    p.listener = p.link->listen([this, r](const std::string& why) { onLinkFailed(r, why); });
    p.listening = true;
    if (r != rank_) postControl(r);
  }
  reportSameHost();
  if (failover_) startFailover();
  for (int r = 0; r < size(); ++r) {
    // A link may have failed between rendezvous and now.
    if (peers_[static_cast<size_t>(r)].link->failed()) {
      onLinkFailed(r, peers_[static_cast<size_t>(r)].link->failure());
    }
  }
}

void UcxWorld::startFailover() {
  UcxFailover::Hooks hooks;
  hooks.path_changed = [this](int peer, bool up, const PathChange& path, const std::string& detail) {
    ucx_->notePath(world_->name(), peer, path.remote_address, up);
    world_->owner().pathChanged(world_->shared_from_this(), peer, up, path, detail);
  };
  // Every path fell silent a member timeout before the verdict.
  hooks.unreachable = [this](int peer, const std::string& detail) {
    transportFailed(peer, detail, BreakCause::Link, Clock::now() - ucx_->memberTimeout());
  };
  hooks.gone = [this](int peer) {
    const UcxLink& link = *peers_[static_cast<size_t>(peer)].link;
    return link.failed() || (link.watched() && ucx_->engine()->processGone(link.pid()));
  };
  failover_->start(std::move(hooks));
}

ucp_ep_h UcxWorld::endpoint(int peer) const { return peers_[static_cast<size_t>(peer)].link->ep(); }

uint64_t UcxWorld::sendTag(int peer, uint64_t channel) const {
  return ucxtag::make(peers_[static_cast<size_t>(peer)].world_id, rank_, channel);
}

uint64_t UcxWorld::recvTag(int peer, uint64_t channel) const { return ucxtag::make(world_id_, peer, channel); }

bool UcxWorld::peerGone(int peer) const { return peers_[static_cast<size_t>(peer)].link->failed(); }

OpResult UcxWorld::failure() const {
  if (!failing_.empty() && world_->state() == WorldState::Ready) {
    return {Status::WorldBroken, "world '" + world_->name() + "' is broken: " + failing_};
  }
  return world_->failure();
}

void UcxWorld::submit(const OpDesc& op, const std::shared_ptr<Request>& r) {
  // The request holds the world, and with it this backend, until it ran.
  ucx_->engine()->runOrPost([this, op, r] { begin(op, r); });
}

void UcxWorld::begin(const OpDesc& op, const std::shared_ptr<Request>& r) {
  if (aborted_ || stopped_ || !failing_.empty()) {
    OpResult f = failure();
    r->complete(f.status, f.detail);
    return;
  }
  std::unique_ptr<UcxSchedule> schedule;
  if (op.kind != OpKind::Send && op.kind != OpKind::Recv) {
    try {
      schedule = makeUcxSchedule(op, rank_, size());
    } catch (const Error& e) {
      r->complete(e.status(), e.what());
      return;
    }
  }
  const int lane = OrderedCompletions::laneOf(op);
  const OrderedCompletions::Ticket ticket = order_.enqueue(lane, r);
  UcxOp* u;
  if (!schedule) {
    u = new UcxP2p(*this, r, ticket, op);
  } else {
    const uint64_t channel = ucxtag::collective(collectives_++, shapeOf(op));
    u = new UcxCollective(*this, r, ticket, op, channel, std::move(schedule));
  }
  pending_[r.get()] = u;
  ucx_->engine()->transferStarted();
  if (op_timeout_.count() > 0 && op_timer_ == 0) armOpTimer(u->started() + op_timeout_);
  {
    UcxOp::Entry entry(*u);
    u->start();
  }
  // As UCX asks of whoever posts before anyone sleeps: progress, where the
  // post left UCX work that no event of the workers' fds announces.
  ucx_->engine()->progressIfNeeded();
}

void UcxWorld::armOpTimer(Clock::time_point when) {
  op_timer_ = ucx_->engine()->schedule(when, [this] { onOpTimer(); });
}

// op_timeout_ms: the oldest operation still running decides.
void UcxWorld::onOpTimer() {
  op_timer_ = 0;
  if (aborted_ || stopped_ || pending_.empty()) return;
  Clock::time_point oldest = Clock::time_point::max();
  for (auto& [req, op] : pending_) oldest = std::min(oldest, op->started());
  if (Clock::now() - oldest < op_timeout_) {
    armOpTimer(oldest + op_timeout_);
    return;
  }
  world_->breakWorld(-1, "an operation ran past op_timeout_ms=" + std::to_string(op_timeout_.count()), true,
                     BreakCause::OpTimeout, oldest);
}

void UcxWorld::finished(UcxOp* op, OpResult result) {
  pending_.erase(op->request());
  ucx_->engine()->transferEnded();
  if (result.status == Status::Cancelled && !aborted_) {
    order_.finishOutOfOrder(op->lane(), op->ticket(), std::move(result));
  } else {
    order_.finish(op->lane(), op->ticket(), std::move(result));
  }
  delete op;
}

bool UcxWorld::runsWhenBroken(const OpDesc& op) {
  if (op.kind != OpKind::Recv) return false;
  return ucx_->engine()->call([&] {
    if (aborted_ || !departed(op.peer)) return false;
    if (failover_) return failover_->arrived(op.peer, ucxtag::kP2p);
    if (samehost::RingPair* ring = this->ring(op.peer, true)) return ring->arrived(ucxtag::kP2p);
    ucp_tag_recv_info_t info;
    return ucp_tag_probe_nb(worker(), recvTag(op.peer, ucxtag::kP2p), ucxtag::kExact, 0, &info) != nullptr;
  });
}

bool UcxWorld::cancel(Request& r) noexcept {
  return ucx_->engine()->call([&] {
    auto it = pending_.find(&r);
    if (it == pending_.end()) return true;  // already finished: nothing to take back
    UcxOp* op = it->second;
    UcxOp::Entry entry(*op);
    return op->takeBack();
  });
}

void UcxWorld::transportFailed(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence) {
  if (failing_.empty()) failing_ = detail.empty() ? "a transfer failed" : detail;
  // Inside a UCX callback: breaking (and closing endpoints) waits.
  ucx_->engine()->defer([w = world_->shared_from_this(), this, peer, detail, cause, evidence] {
    breakBlaming(peer, detail, cause, evidence);
  });
}

void UcxWorld::onLinkFailed(int peer, const std::string& why) {
  if (!world_) return;
  if (failover_) failover_->peerLeft(peer);
  // Sends waiting for room in its ring hold their callers' buffers.
  if (samehost::RingPair* ring = peers_[static_cast<size_t>(peer)].ring.get()) ring->abandonSends();
  // A member that said goodbye may well exit: that breaks nothing more.
  if (!departed(peer)) {
    breakBlaming(peer, "rank " + std::to_string(peer) + " is unreachable: " + why, BreakCause::Transport, Clock::now());
  }
  // Its transfers will never finish: what only it held completes now,
  // also when the world had broken before.
  abandonWhatOnlyGonePeersHold();
}

void UcxWorld::breakBlaming(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence) {
  const UcxLink& link = *peers_[static_cast<size_t>(peer)].link;
  const bool gone = link.watched() && ucx_->engine()->processGone(link.pid());
  if (failover_ || aborted_ || stopped_ || !link.watched() || gone) {
    world_->breakWorld(peer, detail, true, gone ? BreakCause::PeerExit : cause, evidence);
    return;
  }
  // Its process lives on this host, so it closed the endpoints itself:
  // the world broke there, for a cause its notice names (a third member's
  // fault, say), and that notice breaks this member too. Blaming the peer
  // is the last resort.
  if (blame_timer_ != 0) return;
  auto blame = [this, peer, detail, cause, evidence] {
    blame_timer_ = 0;
    if (!aborted_ && !stopped_) world_->breakWorld(peer, detail, true, cause, evidence);
  };
  blame_timer_ = ucx_->engine()->schedule(std::chrono::steady_clock::now() + kPeerNoticeWait, blame);
}

void UcxWorld::postControl(int peer) {
  auto c = std::make_unique<Control>();
  c->world = this;
  c->peer = peer;
  Control* raw = c.get();
  control_.push_back(std::move(c));
  armControl(*raw);
}

void UcxWorld::armControl(Control& c) {
  Control* raw = &c;
  raw->ended = false;
  if (failover_) {
    const uint64_t id = failover_->recv(c.peer, ucxtag::kControl, &raw->word, sizeof raw->word,
                                        [raw](DeliveryOutcome o, size_t) {
                                          raw->path_recv = 0;
                                          raw->ended = true;
                                          if (raw->world) raw->world->onControl(*raw, UcxFailover::ucsStatus(o));
                                        });
    if (!raw->ended) raw->path_recv = id;
    return;
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &Control::onRecv;
  param.user_data = raw;
  void* r = ucp_tag_recv_nbx(worker(), &raw->word, sizeof raw->word, recvTag(c.peer, ucxtag::kControl),
                             ucxtag::kExact, &param);
  if (UCS_PTR_IS_PTR(r) && !raw->ended) raw->request = r;
}

void UcxWorld::onControl(Control& c, ucs_status_t status) {
  const int peer = c.peer;
  if (status == UCS_ERR_CANCELED || !world_) return;
  if (status != UCS_OK) {
    if (!aborted_) {
      transportFailed(peer, "the control channel from rank " + std::to_string(peer) + " failed in UCX: " +
                                ucs_status_string(status));
    }
    return;
  }
  const uint64_t word = c.word;
  if (takeWord(peer, word)) return armControl(c);
  if (aborted_) return;
  if (word != ucxcontrol::kBye) {
    transportFailed(peer, "rank " + std::to_string(peer) + " sent an unknown control word " + std::to_string(word));
    return;
  }
  onGoodbye(peer);
}

bool UcxWorld::takeWord(int peer, uint64_t word) {
  switch (word & ucxcontrol::kKindMask) {
    case ucxcontrol::kReturned:
      // Also after an abort: a destroyed world's loans may still come back.
      onLoanReturned(peer, word & ~ucxcontrol::kKindMask);
      return true;
    case ucxcontrol::kMatched:
      onMarkerMatched(peer, static_cast<uint32_t>(word & ~ucxcontrol::kKindMask));
      return true;
    default:
      return false;
  }
}

void UcxWorld::onGoodbye(int peer) {
  // Everything the peer sent before it left arrived before this, in order.
  departed_[static_cast<size_t>(peer)] = true;
  ucx_->engine()->defer([w = world_->shared_from_this(), this, peer] {
    if (failover_) failover_->peerLeft(peer);  // closes endpoints: not inside progress
    departing_ = true;
    // Every member hears the goodbye itself: no notice to announce.
    w->breakWorld(peer, "rank " + std::to_string(peer) + " left the world", false, BreakCause::PeerLeft);
    departing_ = false;
  });
}

void UcxWorld::peerDeparted(int peer) {
  // It reads nothing more: sends waiting for room in its ring end now.
  if (samehost::RingPair* ring = peers_[static_cast<size_t>(peer)].ring.get()) ring->abandonSends();
  for (auto [req, op] : pendingNow()) {
    if (!stillPending(req, op)) continue;
    UcxOp::Entry entry(*op);
    op->peerDeparted(peer);
  }
}

void UcxWorld::abort() noexcept {
  ucx_->engine()->call([this] {
    if (aborted_) return;
    if (departing_) {
      for (int r = 0; r < size(); ++r) {
        if (departed(r)) peerDeparted(r);
      }
      return;
    }
    abortAll();
  });
}

void UcxWorld::abortAll() {
  aborted_ = true;
  const bool broken = world_->failure().status == Status::WorldBroken;
  // A destroyed world still hears its loans come back until it closes.
  if (broken) {
    for (auto& c : control_) {
      if (c->request) ucp_request_cancel(worker(), c->request);
      if (c->path_recv) failover_->cancelRecv(c->peer, c->path_recv);
    }
  }
  for (auto [req, op] : pendingNow()) {
    if (!stillPending(req, op)) continue;  // an earlier abort finished it
    UcxOp::Entry entry(*op);
    op->abort();
  }
  // A break (not a destroy): the world's endpoints go now, which completes
  // what is pending on them.
  if (broken) forceCloseLinks();
  abandonWhatOnlyGonePeersHold();
}

std::vector<std::pair<Request*, UcxOp*>> UcxWorld::pendingNow() const {
  return std::vector<std::pair<Request*, UcxOp*>>(pending_.begin(), pending_.end());
}

bool UcxWorld::stillPending(Request* r, UcxOp* op) const {
  auto it = pending_.find(r);
  return it != pending_.end() && it->second == op;
}

void UcxWorld::abandonWhatOnlyGonePeersHold() {
  for (auto [req, op] : pendingNow()) {
    if (stillPending(req, op) && op->done() && op->onlyGonePeersHold()) abandon(op);
  }
}

void UcxWorld::forceCloseLinks() {
  drainArrivals();
  dropRings();
  endCopiedMarkers();  // their receivers can no longer answer
  if (failover_) failover_->close();
  for (Peer& p : peers_) {
    if (p.listening) p.link->unlisten(p.listener);
    p.listening = false;
    ucx_->links().release(p.link);
  }
}

// What arrived for this world and nobody will receive goes before its
// endpoints close, while the endpoints it came through are open (a large
// message's sender is then told it may stop). Nothing arrives once they
// are closed: every endpoint is this world's own. Exact tags find a
// message at once; the search by mask walks every message that waits, of
// every world, so it only mops up the few collective messages that came
// ahead of their operation.
void UcxWorld::drainArrivals() {
  if (failover_) {
    failover_->dropArrivals();
    return;
  }
  auto drop = [&](uint64_t tag, uint64_t mask) {
    ucp_tag_recv_info_t info;
    while (ucp_tag_message_h message = ucp_tag_probe_nb(worker(), tag, mask, 1, &info)) {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
      param.cb.recv = [](void* request, ucs_status_t, const ucp_tag_recv_info_t*, void*) {
        ucp_request_free(request);
      };
      ucp_tag_msg_recv_nbx(worker(), nullptr, 0, message, &param);  // cut off: dropped
    }
  };
  for (int r = 0; r < size(); ++r) {
    drop(recvTag(r, ucxtag::kP2p), ucxtag::kExact);
    drop(recvTag(r, ucxtag::kControl), ucxtag::kExact);
  }
  drop(ucxtag::make(world_id_, 0, 0), ucxtag::kWorldMask);
}

void UcxWorld::sendGoodbyes() {
  static const uint64_t kBye = ucxcontrol::kBye;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    auto* w = static_cast<UcxWorld*>(arg);
    --w->flushing_;
  };
  param.user_data = this;
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (failover_ && r != rank_ && !p.link->failed()) {
      // Acknowledged once the peer has it: no flush to wait for.
      ++flushing_;
      failover_->send(r, ucxtag::kControl, &kBye, sizeof kBye, [this](DeliveryOutcome) { --flushing_; });
      continue;
    }
    if (r == rank_ || p.link->failed() || !p.link->ep()) continue;
    if (p.lends && p.ring) {
      p.ring->sendBye();  // after everything sent into the ring; stop() waits until it is in
      continue;
    }
    // After everything else sent on the endpoint; the flush tells when it
    // left, before the endpoint is closed.
    void* bye = ucp_tag_send_nbx(p.link->ep(), &kBye, sizeof kBye, sendTag(r, ucxtag::kControl), &param);
    if (UCS_PTR_IS_PTR(bye)) ++flushing_;
    void* flush = ucp_ep_flush_nbx(p.link->ep(), &param);
    if (UCS_PTR_IS_PTR(flush)) ++flushing_;
  }
}

void UcxWorld::abandon(UcxOp* op) {
  // UCX may still call it back; it lives on with the context, unheard.
  pending_.erase(op->request());
  ucx_->engine()->transferEnded();
  OpResult f = failure();
  if (op->done()) f = op->result();
  const int lane = op->lane();
  const OrderedCompletions::Ticket ticket = op->ticket();
  op->orphan();
  ucx_->adopt(std::unique_ptr<UcxOp>(op));
  order_.finish(lane, ticket, f);
}

void UcxWorld::stop() noexcept {
  UcxEngine& engine = *ucx_->engine();
  const bool first = engine.call([this] {
    if (stopped_) return false;
    stopped_ = true;
    if (op_timer_) ucx_->engine()->cancel(op_timer_);
    op_timer_ = 0;
    if (blame_timer_) ucx_->engine()->cancel(blame_timer_);
    blame_timer_ = 0;
    if (world_->failure().status == Status::Cancelled) sendGoodbyes();
    return true;
  });
  if (!first) return;
  // Sends to live peers finish once the peers took them (or dropped them
  // when they heard of the break), and the goodbyes leave, for a bounded
  // time.
  engine.waitUntil(std::chrono::steady_clock::now() + kStopGrace,
                   [this] { return pending_.empty() && flushing_ == 0 && ringsFlushed(); });
  engine.call([this] { close(); });
}

void UcxWorld::close() {
  // Closing completes what is still pending on the endpoints (Cancelled);
  // what a peer that is gone holds completes with it.
  forceCloseLinks();
  for (auto [req, op] : pendingNow()) abandon(op);
  loans_.clear();
  endCopiedMarkers();
  for (auto& c : control_) {
    c->world = nullptr;
    if (c->request) ucp_request_cancel(worker(), c->request);
    // Cancelling an unmatched receive calls it back at once; one that is
    // somehow still held stays allocated rather than be called back freed.
    if (c->request) c.release();
  }
  control_.clear();
  if (failover_ && world_) ucx_->forgetPaths(world_->name());
  if (world_) ucx_->forgetSameHost(world_->name());
  ucx_->links().forget(world_id_);
  ucx_->releaseWorldId(world_id_);
}

}  // namespace mw
