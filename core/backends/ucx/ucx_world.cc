#include "core/backends/ucx/ucx_world.h"

#include <algorithm>

#include "core/backends/ucx/channels/tag_channel.h"
#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_collective.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/backend_registry.h"
#include "core/resize/resize_plan.h"
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

std::unique_ptr<UcxWorld> UcxWorld::connect(std::shared_ptr<UcxContext> ucx, RedisPool& pool,
                                            const Incarnation& inc, int rank, int size,
                                            const WorldSettings& settings, Deadline deadline) {
  return form(std::move(ucx), pool, inc, rank, size, settings, deadline, nullptr);
}

std::unique_ptr<UcxWorld> UcxWorld::form(std::shared_ptr<UcxContext> ucx, RedisPool& pool, const Incarnation& inc,
                                         int rank, int size, const WorldSettings& settings, Deadline deadline,
                                         const Inherited* inherited) {
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
  for (int r = 0; inherited && r < size; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (r != rank && inherited->old_member[i] && !inherited->links[i]) self.dropped.push_back(r);
  }
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
  // What is there already in one round trip; get() waits for the rest.
  std::vector<std::string> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::to_string(r));
  store.prefetch(ranks);
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
      // A pair keeps its link when neither end dropped it.
      std::shared_ptr<UcxLink> kept = inherited && !w->failover_ ? inherited->links[static_cast<size_t>(r)] : nullptr;
      if (kept && std::find(info.dropped.begin(), info.dropped.end(), rank) != info.dropped.end()) kept = nullptr;
      if (kept) {
        ucx->links().share(kept);
        p.link = std::move(kept);
        p.kept = true;
      } else {
        p.link = ucx->links().link(id, rank, info, r, !w->failover_);
      }
      if (w->failover_) w->failover_->connect(r, info.world_id, self.paths, info.paths);
      w->probeSameHost(r, self, info, on_paths);
      // Over a kept link the hello is also a fence: nothing of the old
      // world comes from the peer after it.
      if (p.kept && r != rank) p.same_host_hello = true;
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
  // Members of this host settle their rings before either starts.
  engine.call([&] { w->sendSameHostHellos(); });
  if (!engine.waitUntil(deadline, [&] { return w->sameHostHellosIn(); })) {
    throw Error(Status::Timeout, "world rendezvous: a member of this host did not send its same-host hello in time");
  }
  engine.call([&] { w->chooseChannels(); });
  return w;
}

UcxWorld::UcxWorld(std::shared_ptr<UcxContext> ucx, int rank, uint32_t world_id)
    : ucx_(std::move(ucx)), rank_(rank), world_id_(world_id) {}

UcxWorld::~UcxWorld() {
  ucx_->engine()->call([this] {
    hellos_.reset();
    if (state_ != UcxWorldState::Connecting) return;
    // Never started (rendezvous failed): its channels, links and id go.
    moveTo(UcxWorldState::Closed);
    closeChannels();
    ucx_->links().forget(world_id_);
    ucx_->releaseWorldId(world_id_);
  });
}

bool UcxWorld::moveTo(UcxWorldState next) {
  const UcxWorldState was = state_;
  if (worldTransition(state_, next)) return true;
  MW_LOG(LogLevel::Error, "world %u rank %d: no transition from %s to %s; it stays %s", world_id_, rank_,
         worldStateName(was), worldStateName(next), worldStateName(was));
  return false;
}

bool UcxWorld::aborted() const {
  return state_ == UcxWorldState::Aborted || state_ == UcxWorldState::Stopping || state_ == UcxWorldState::Closed ||
         state_ == UcxWorldState::Retired;
}

void UcxWorld::start(World& world) {
  world_ = &world;
  op_timeout_ = world.opTimeout();
  ucx_->engine()->call([this] { listen(); });
}

void UcxWorld::listen() {
  moveTo(UcxWorldState::Running);
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    p.listener = p.link->listen([this, r](const std::string& why) { onLinkFailed(r, why); });
    p.listening = true;
    p.channel->open();
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

bool UcxWorld::peerGone(int peer) const { return peers_[static_cast<size_t>(peer)].link->failed(); }

OpResult UcxWorld::failure() const {
  if (!failing_.empty() && world_ && world_->state() == WorldState::Ready) {
    return {Status::WorldBroken, "world '" + world_->name() + "' is broken: " + failing_};
  }
  return world_->failure();
}

void UcxWorld::submit(const OpDesc& op, const std::shared_ptr<Request>& r) {
  // The request holds the world, and with it this backend, until it ran.
  ucx_->engine()->runOrPost([this, op, r] { begin(op, r); });
}

void UcxWorld::begin(const OpDesc& op, const std::shared_ptr<Request>& r) {
  if (state_ != UcxWorldState::Running) {
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
  if (aborted() || pending_.empty()) return;
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
  if (result.status == Status::Cancelled && !aborted()) {
    order_.finishOutOfOrder(op->lane(), op->ticket(), std::move(result));
  } else {
    order_.finish(op->lane(), op->ticket(), std::move(result));
  }
  delete op;
}

bool UcxWorld::runsWhenBroken(const OpDesc& op) {
  if (op.kind != OpKind::Recv) return false;
  return ucx_->engine()->call([&] {
    if (state_ != UcxWorldState::Running || !departed(op.peer)) return false;
    return channel(op.peer).arrived(ucxtag::kP2p);
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

void UcxWorld::transportFailed(int peer, const std::string& detail) {
  transportFailed(peer, detail, BreakCause::Transport, Clock::now());
}

void UcxWorld::transportFailed(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence) {
  if (state_ == UcxWorldState::Running && moveTo(UcxWorldState::Failing)) {
    failing_ = detail.empty() ? "a transfer failed" : detail;
  }
  // Inside a UCX callback: breaking (and closing endpoints) waits.
  ucx_->engine()->defer([w = world_->shared_from_this(), this, peer, detail, cause, evidence] {
    breakBlaming(peer, detail, cause, evidence);
  });
}

void UcxWorld::onLinkFailed(int peer, const std::string& why) {
  if (!world_) return;
  // Sends waiting for it (in a ring, say) hold their callers' buffers.
  channel(peer).peerGone();
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
  // The pidfd may have told first (the link then failed for it), or the
  // endpoint's error may come before the pidfd turns readable.
  const bool gone = link.watched() && (link.exited() || ucx_->engine()->processGone(link.pid()));
  if (failover_ || aborted() || !link.watched() || gone) {
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
    if (!aborted()) world_->breakWorld(peer, detail, true, cause, evidence);
  };
  blame_timer_ = ucx_->engine()->schedule(std::chrono::steady_clock::now() + kPeerNoticeWait, blame);
}

void UcxWorld::goodbyeFrom(int peer) {
  // Everything the peer sent before it left arrived before this, in order.
  if (departed_[static_cast<size_t>(peer)] || !world_ || aborted()) return;
  departed_[static_cast<size_t>(peer)] = true;
  ucx_->engine()->defer([w = world_->shared_from_this(), this, peer] {
    channel(peer).peerGone();  // may close endpoints: not inside progress
    departing_ = true;
    // Every member hears the goodbye itself: no notice to announce.
    w->breakWorld(peer, "rank " + std::to_string(peer) + " left the world", false, BreakCause::PeerLeft);
    departing_ = false;
  });
}

void UcxWorld::brokenAt(int peer, int blamed) {
  if (!world_ || aborted()) return;
  const int named = blamed >= 0 && blamed < size() ? blamed : -1;
  // Inside a UCX callback: breaking (and closing channels) waits. The
  // member that saw the fault announces it; this one only heard.
  ucx_->engine()->defer([w = world_->shared_from_this(), peer, named] {
    w->breakWorld(named,
                  "rank " + std::to_string(peer) + " reported the world broken" +
                      (named >= 0 ? ", blaming rank " + std::to_string(named) : std::string()),
                  false, BreakCause::Marker);
  });
}

void UcxWorld::excludedBy(int peer, uint64_t epoch) {
  if (!world_ || aborted()) return;
  // Inside a UCX callback: breaking waits. The survivors formed the next
  // epoch without this member: nothing to announce.
  ucx_->engine()->defer([w = world_->shared_from_this(), rank = rank_, peer, epoch] {
    w->breakWorld(rank,
                  "rank " + std::to_string(rank) + " was excluded by the shrink of world '" + w->name() + "' epoch " +
                      std::to_string(w->epoch()) + " to epoch " + std::to_string(epoch) + " (told by rank " +
                      std::to_string(peer) + ")",
                  false, BreakCause::Marker);
  });
}

void UcxWorld::peerDeparted(int peer) {
  // It reads nothing more: sends waiting for it end now.
  channel(peer).peerGone();
  for (auto [req, op] : pendingNow()) {
    if (!stillPending(req, op)) continue;
    UcxOp::Entry entry(*op);
    op->peerDeparted(peer);
  }
}

void UcxWorld::abort() noexcept {
  ucx_->engine()->call([this] {
    if (aborted()) return;
    // A departure alone fails only what needs the member that left; after
    // a transport failure everything fails.
    if (departing_ && state_ == UcxWorldState::Running) {
      for (int r = 0; r < size(); ++r) {
        if (departed(r)) peerDeparted(r);
      }
      return;
    }
    abortAll();
  });
}

void UcxWorld::abortAll() {
  if (!moveTo(UcxWorldState::Aborted)) return;
  const bool broken = world_->failure().status == Status::WorldBroken;
  // A destroyed world still hears its loans come back until it closes.
  if (broken) {
    for (Peer& p : peers_) p.channel->stopListening();
  }
  for (auto [req, op] : pendingNow()) {
    if (!stillPending(req, op)) continue;  // an earlier abort finished it
    UcxOp::Entry entry(*op);
    op->abort();
  }
  // A break (not a destroy): the world's channels close now, which
  // completes what is pending on them; the links that nothing holds stay
  // for a shrink.
  if (broken) closeChannels(true);
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

bool UcxWorld::keepable(int peer) const {
  const Peer& p = peers_[static_cast<size_t>(peer)];
  if (failover_ || p.released || !p.link || p.link->failed() || departed(peer)) return false;
  return std::none_of(pending_.begin(), pending_.end(), [&](const auto& e) { return e.second->holds(peer); });
}

void UcxWorld::releaseLink(Peer& p) {
  if (p.released || !p.link) return;
  p.released = true;
  if (p.listening) p.link->unlisten(p.listener);
  p.listening = false;
  ucx_->links().release(p.link);
}

void UcxWorld::closeChannels(bool park) {
  // Which links stay is settled before the channels close, which ends
  // what was in flight on them.
  std::vector<bool> keep(peers_.size(), false);
  for (size_t r = 0; park && r < peers_.size(); ++r) keep[r] = keepable(static_cast<int>(r));
  // Told after everything sent; a member whose world is being resized
  // keeps quiet toward the successor's links.
  const bool tell = park && world_ && world_->breakAnnounced() && !world_->resizing();
  const int blamed = world_ ? world_->blamedRank() : -1;
  for (size_t r = 0; r < peers_.size(); ++r) {
    Peer& p = peers_[r];
    if (!p.channel) continue;
    if (keep[r] && tell) p.channel->sayBroken(blamed);
    p.channel->close();
  }
  if (failover_) failover_->close();
  // The few collective messages that came ahead of their operation: the
  // search by mask walks every message that waits, of every world, so it
  // only mops up. Once its endpoints are closed nothing arrives for the
  // world (every endpoint is its own); over a link kept after a break it
  // may, until the link goes or a successor's hello came over it.
  const uint64_t mine = ucxtag::make(world_id_, 0, 0);
  if (!failover_) dropTagged(engine().worker(), mine, ucxtag::kWorldMask);
  for (size_t r = 0; r < peers_.size(); ++r) {
    Peer& p = peers_[r];
    if (keep[r]) {
      parked_ = true;
      continue;
    }
    releaseLink(p);
  }
  // Links parked by the break go now: what came over them meanwhile too.
  if (!park && parked_ && !failover_) dropTagged(engine().worker(), mine, ucxtag::kWorldMask);
}

bool UcxWorld::flushed() const {
  for (const Peer& p : peers_) {
    if (!p.channel->flushed()) return false;
  }
  return true;
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
    if (state_ == UcxWorldState::Stopping || state_ == UcxWorldState::Closed || state_ == UcxWorldState::Retired) {
      return false;
    }
    if (!moveTo(UcxWorldState::Stopping)) return false;
    if (op_timer_) ucx_->engine()->cancel(op_timer_);
    op_timer_ = 0;
    if (blame_timer_) ucx_->engine()->cancel(blame_timer_);
    blame_timer_ = 0;
    if (world_->leftHealthy()) {
      for (Peer& p : peers_) p.channel->sayGoodbye();
    }
    return true;
  });
  if (!first) return;
  // Sends to live peers finish once the peers took them (or dropped them
  // when they heard of the break), and the goodbyes leave, for a bounded
  // time.
  engine.waitUntil(std::chrono::steady_clock::now() + kStopGrace, [this] { return pending_.empty() && flushed(); });
  engine.call([this] { close(); });
}

void UcxWorld::close() {
  moveTo(UcxWorldState::Closed);
  letGo();
}

void UcxWorld::letGo() {
  // Closing completes what is still pending on the channels (Cancelled);
  // what a peer that is gone holds completes with it.
  closeChannels();
  for (auto [req, op] : pendingNow()) abandon(op);
  if (failover_ && world_) ucx_->forgetPaths(world_->name());
  if (world_) ucx_->forgetSameHost(world_->name());
  ucx_->links().forget(world_id_);
  ucx_->releaseWorldId(world_id_);
}

// ------------------------------------------------------------- resize

std::unique_ptr<UcxWorld> UcxWorld::resized(const ResizePlan& plan, RedisPool& pool, const Incarnation& next,
                                            const WorldSettings& settings, Deadline deadline) {
  Inherited inherited;
  const bool keeps = ucx_->engine()->call([&] {
    excluded_.clear();
    for (int old = 0; plan.kind == ResizeKind::Shrink && old < plan.old_size && old < size(); ++old) {
      if (!plan.kept(old)) excluded_.push_back(old);
    }
    excluded_into_ = next.epoch();
    if (failover_) return false;
    inherited.links.assign(static_cast<size_t>(plan.new_size), nullptr);
    inherited.old_member.assign(static_cast<size_t>(plan.new_size), false);
    for (int old = 0; old < plan.old_size && old < size(); ++old) {
      if (!plan.kept(old)) continue;
      const size_t r = static_cast<size_t>(plan.new_rank_of[static_cast<size_t>(old)]);
      inherited.old_member[r] = true;
      if (keepable(old)) inherited.links[r] = peers_[static_cast<size_t>(old)].link;
    }
    return true;
  });
  if (!keeps) return nullptr;
  return form(ucx_, pool, next, plan.new_rank, plan.new_size, settings, deadline, &inherited);
}

std::unique_ptr<WorldBackend> UcxWorld::shrink(const ResizePlan& plan, BackendServices& services,
                                               const Incarnation& next, const WorldSpec&,
                                               const WorldSettings& settings, Deadline deadline) {
  return resized(plan, services.pool(), next, settings, deadline);
}

std::unique_ptr<WorldBackend> UcxWorld::grow(const ResizePlan& plan, BackendServices& services,
                                             const Incarnation& next, const WorldSpec&, const WorldSettings& settings,
                                             Deadline deadline) {
  return resized(plan, services.pool(), next, settings, deadline);
}

void UcxWorld::watchMembers(std::function<void(int peer, const std::string& why)> lost) {
  auto shared = std::make_shared<std::function<void(int, const std::string&)>>(std::move(lost));
  ucx_->engine()->call([&] {
    for (int r = 0; r < size(); ++r) {
      Peer& p = peers_[static_cast<size_t>(r)];
      if (r == rank_ || p.released || !p.link) continue;
      if (p.link->failed()) {
        (*shared)(r, p.link->failure());
        continue;
      }
      member_watch_.emplace_back(p.link, p.link->listen([shared, r](const std::string& why) { (*shared)(r, why); }));
    }
  });
}

void UcxWorld::unwatchMembers() noexcept {
  ucx_->engine()->call([this] {
    for (auto& [link, id] : member_watch_) link->unlisten(id);
    member_watch_.clear();
  });
}

void UcxWorld::retire(WorldBackend*) noexcept {
  // A ready world's excluded members that live hear it over their
  // endpoints before those close, in order, so that none of them takes the
  // close for a fault of ours (Redis tells them too, but may come later).
  UcxEngine& engine = *ucx_->engine();
  const bool telling = engine.call([this] {
    if (state_ != UcxWorldState::Running) return false;
    bool told = false;
    for (int r : excluded_) {
      Peer& p = peers_[static_cast<size_t>(r)];
      if (r == rank_ || !p.channel || p.released || !p.link || p.link->failed()) continue;
      p.channel->sayExcluded(excluded_into_);
      told = true;
    }
    return told;
  });
  if (telling) engine.waitUntil(std::chrono::steady_clock::now() + kStopGrace, [this] { return flushed(); });
  // The successor shares the links it keeps (UcxLinks::share): releasing
  // them here leaves them open. Every member that stays said its hello
  // over its link before the successor formed, so what of this world
  // still arrives is in, and goes with the world's id.
  engine.call([this] {
    if (!moveTo(UcxWorldState::Retired)) return;
    if (op_timer_) ucx_->engine()->cancel(op_timer_);
    op_timer_ = 0;
    if (blame_timer_) ucx_->engine()->cancel(blame_timer_);
    blame_timer_ = 0;
    for (auto [req, op] : pendingNow()) {
      if (!stillPending(req, op)) continue;
      UcxOp::Entry entry(*op);
      op->abort();
    }
    letGo();
  });
}

}  // namespace mw
