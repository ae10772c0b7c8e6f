#include "core/world.h"

#include "core/communicator.h"
#include "core/completion_queue.h"
#include "core/log.h"
#include "core/request.h"

namespace mw {

World::World(WorldIdentity id, std::unique_ptr<WorldBackend> backend, WorldOwner& owner,
             std::chrono::milliseconds op_timeout, std::shared_ptr<const metrics::WorldMetrics> metrics)
    : id_(std::move(id)),
      backend_(std::move(backend)),
      owner_(owner),
      op_timeout_(op_timeout),
      metrics_(std::move(metrics)) {}

World::~World() {
  // destroy() is the normal path; this covers a world dropped without it.
  destroy();
}

void World::start() { backend_->start(*this); }

WorldState World::state() const { return state_.load(); }

OpResult World::failure() const {
  std::lock_guard<std::mutex> lock(m_);
  if (state_ == WorldState::Destroyed) return {Status::Cancelled, "world '" + id_.name + "' was destroyed"};
  return {Status::WorldBroken, "world '" + id_.name + "' is broken: " + broken_detail_};
}

int World::blamedRank() const {
  std::lock_guard<std::mutex> lock(m_);
  return broken_peer_;
}

Request* World::submit(const OpDesc& desc, uint64_t user_data) {
  const OpDesc op = canonicalOp(desc);
  validateOp(op, id_.rank, id_.size);
  std::lock_guard<std::mutex> issue(issue_m_);
  const WorldState now = state();
  if (now != WorldState::Ready && !(now == WorldState::Broken && backend_->runsWhenBroken(op))) {
    OpResult f = failure();
    throw Error(f.status, f.detail);
  }
  Request* r = Request::create(shared_from_this(), owner_.completions(), user_data, backend_->driver());
  const bool p2p = op.kind == OpKind::Recv || op.kind == OpKind::Send;
  r->describe(op.kind, p2p ? op.count * dtypeSize(op.dtype) : 0);
  try {
    backend_->submit(op, r->shared_from_this());
  } catch (const TransportError& e) {
    breakWorld(e.peerRank(), e.what(), true, BreakCause::Transport);
    r->release();
    throw Error(Status::WorldBroken, "world '" + id_.name + "' is broken: " + e.what());
  } catch (...) {
    r->release();
    throw;
  }
  return r;
}

void World::cancel(Request& r) {
  if (r.finished()) return;
  if (backend_->cancel(r)) return;
  breakWorld(id_.rank, "rank " + std::to_string(id_.rank) + " cancelled an operation that was already under way",
             true, BreakCause::Cancel);
}

void World::breakWorld(int peer_rank, const std::string& detail, bool announce, BreakCause cause,
                       Clock::time_point evidence) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ == WorldState::Destroyed) return;
    if (state_ == WorldState::Ready) {
      state_ = WorldState::Broken;
      broken_detail_ = detail;
      broken_peer_ = peer_rank;
      if (metrics_) metrics_->broke(cause, Clock::now() - evidence);
      // The event is queued before any request can fail for this break, so
      // a program that sees a failed request finds the event (and the
      // blamed peer) already waiting. The owner only queues; it never
      // calls back.
      owner_.worldBroken(shared_from_this(), peer_rank, detail, announce);
      MW_LOG(LogLevel::Info, "world %s epoch %llu broken (peer %d): %s", id_.name.c_str(),
             static_cast<unsigned long long>(id_.epoch), peer_rank, detail.c_str());
    }
  }
  // Also on a world broken already: a backend that let operations finish
  // with what had arrived (a member left) stops them now.
  backend_->abort();
}

bool World::destroy() {
  bool was_ready;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopped_) return false;
    stopped_ = true;
    was_ready = state_ == WorldState::Ready;
    state_ = WorldState::Destroyed;
  }
  backend_->abort();
  backend_->stop();
  return was_ready;
}

}  // namespace mw
