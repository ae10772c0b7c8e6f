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

bool World::moveTo(WorldState next) {
  WorldState s = state_.load();
  const WorldState was = s;
  if (worldTransition(s, next)) {
    state_.store(s);
    return true;
  }
  MW_LOG(LogLevel::Error, "world %s epoch %llu rank %d: no transition from %s to %s; it stays %s", id_.name.c_str(),
         static_cast<unsigned long long>(id_.epoch), id_.rank, worldStateName(was), worldStateName(next),
         worldStateName(was));
  return false;
}

OpResult World::failure() const {
  std::lock_guard<std::mutex> lock(m_);
  const std::string world = "world '" + id_.name + "' epoch " + std::to_string(id_.epoch);
  if (state_ == WorldState::Destroyed) return {Status::Cancelled, "world '" + id_.name + "' was destroyed"};
  if (state_ == WorldState::Retired) {
    return {Status::InvalidArgument, world + " was retired by a " + resize_verb_ + " into epoch " +
                                         std::to_string(successor_epoch_) +
                                         ": issue on the world it returned; mw_world_destroy frees this handle"};
  }
  if (cancelling_) return {Status::Cancelled, world + ": cancelled by MW_SHRINK_ABORT for a shrink"};
  return {Status::WorldBroken, "world '" + id_.name + "' is broken: " + broken_detail_};
}

bool World::leftHealthy() const {
  std::lock_guard<std::mutex> lock(m_);
  return left_healthy_;
}

int World::blamedRank() const {
  std::lock_guard<std::mutex> lock(m_);
  return broken_peer_;
}

bool World::breakAnnounced() const {
  std::lock_guard<std::mutex> lock(m_);
  return broken_announced_;
}

void World::beginResize(bool cancel_pending, const char* verb) {
  std::lock_guard<std::mutex> issue(issue_m_);
  bool cancel = false;
  {
    std::lock_guard<std::mutex> lock(m_);
    const std::string world = "world '" + id_.name + "' epoch " + std::to_string(id_.epoch);
    if (state_ == WorldState::Destroyed) throw Error(Status::InvalidArgument, world + " was destroyed");
    if (state_ == WorldState::Retired) {
      throw Error(Status::InvalidArgument, world + " was already retired by a " + resize_verb_ + " into epoch " +
                                               std::to_string(successor_epoch_) + ": " + verb + " that world instead");
    }
    if (resizing_.load()) {
      throw Error(Status::InvalidArgument, world + ": a " + resize_verb_ + " of it is already under way");
    }
    // A DEFAULT shrink of a broken world goes on only where the agreed
    // list excludes the member its break named (ResizeRendezvous).
    if (!cancel_pending && state_ == WorldState::Broken && std::string(verb) == "grow") {
      throw Error(Status::InvalidArgument,
                  world + " is broken (" + broken_detail_ + "): a broken world cannot grow; shrink it with "
                  "MW_SHRINK_ABORT");
    }
    const int pending = pending_.load();
    if (!cancel_pending && pending > 0) {
      throw Error(Status::InvalidArgument,
                  world + " has " + std::to_string(pending) + " operation" + (pending == 1 ? "" : "s") +
                      " pending: " +
                      (std::string(verb) == "grow" ? "a grow needs none; wait for them first"
                                                   : "MW_SHRINK_DEFAULT needs none (MW_SHRINK_ABORT cancels them)"));
    }
    resizing_ = true;
    resize_verb_ = verb;
    cancel = cancel_pending && pending > 0;
    cancelling_ = cancel;
  }
  // What is pending completes with failure(): Cancelled.
  if (cancel) backend_->abort();
}

void World::endResize(const std::string& why) {
  std::lock_guard<std::mutex> lock(m_);
  resizing_ = false;
  if (!cancelling_) return;
  cancelling_ = false;
  if (state_ != WorldState::Ready) return;
  // Its backend stopped running operations for the shrink.
  if (!moveTo(WorldState::Broken)) return;
  broken_detail_ = "its operations were cancelled by MW_SHRINK_ABORT and the shrink failed: " + why;
  broken_peer_ = -1;
  if (metrics_) metrics_->broke(BreakCause::Cancel, Clock::duration::zero());
  owner_.worldBroken(shared_from_this(), -1, broken_detail_, false);
}

void World::retire(uint64_t successor_epoch, const char* verb, WorldBackend* successor) {
  {
    std::lock_guard<std::mutex> lock(m_);
    moveTo(WorldState::Retired);
    successor_epoch_ = successor_epoch;
    resize_verb_ = verb;
    resizing_ = false;
    cancelling_ = false;
  }
  backend_->retire(successor);
}

Request* World::submit(const OpDesc& desc, uint64_t user_data) {
  const OpDesc op = canonicalOp(desc);
  validateOp(op, id_.rank, id_.size);
  std::lock_guard<std::mutex> issue(issue_m_);
  if (resizing_.load()) {
    throw Error(Status::InvalidArgument, "world '" + id_.name + "' epoch " + std::to_string(id_.epoch) +
                                             " is being shrunk or grown: nothing is issued on it until that returns");
  }
  const WorldState now = state();
  if (now != WorldState::Ready && !(now == WorldState::Broken && backend_->runsWhenBroken(op))) {
    OpResult f = failure();
    throw Error(f.status, f.detail);
  }
  Request* r = Request::create(shared_from_this(), owner_.completions(), user_data, backend_->driver());
  const bool p2p = op.kind == OpKind::Recv || op.kind == OpKind::Send;
  r->describe(op.kind, p2p ? op.count * dtypeSize(op.dtype) : 0);
  pending_.fetch_add(1);
  r->countIn();
  try {
    backend_->submit(op, r->shared_from_this());
  } catch (const TransportError& e) {
    if (r->countOut()) pending_.fetch_sub(1);
    breakWorld(e.peerRank(), e.what(), true, BreakCause::Transport);
    r->release();
    throw Error(Status::WorldBroken, "world '" + id_.name + "' is broken: " + e.what());
  } catch (...) {
    if (r->countOut()) pending_.fetch_sub(1);
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
    if (state_ == WorldState::Destroyed || state_ == WorldState::Retired) return;
    if (state_ == WorldState::Ready && moveTo(WorldState::Broken)) {
      broken_detail_ = detail;
      broken_peer_ = peer_rank;
      broken_announced_ = announce;
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
    left_healthy_ = was_ready;
    const bool retired = state_ == WorldState::Retired;
    moveTo(WorldState::Destroyed);
    // Its backend ended when it retired.
    if (retired) return false;
  }
  backend_->abort();
  backend_->stop();
  return was_ready;
}

}  // namespace mw
