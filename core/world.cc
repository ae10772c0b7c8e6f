#include "core/world.h"

#include <pthread.h>

#include "core/completion_queue.h"
#include "core/log.h"
#include "core/request.h"
#include "core/signals.h"

namespace mw {

namespace {
// How long destroy() waits for lanes to leave the backend after an abort.
constexpr std::chrono::milliseconds kDestroyGrace{2000};
}  // namespace

World::World(WorldIdentity id, std::unique_ptr<Communicator> comm, WorldOwner& owner,
             std::chrono::milliseconds op_timeout)
    : id_(std::move(id)), comm_(std::move(comm)), owner_(owner), op_timeout_(op_timeout) {}

World::~World() {
  // destroy() is the normal path; this covers a world dropped without it.
  destroy();
}

void World::start() {
  std::lock_guard<std::mutex> lock(m_);
  lane(kMainLane);
}

World::Lane& World::laneFor(const OpDesc& op) { return lane(op.kind == OpKind::Recv ? op.peer : kMainLane); }

World::Lane& World::lane(int key) {
  auto& slot = lanes_[key];
  if (!slot) {
    slot = std::make_unique<Lane>();
    slot->peer = key;
    Lane* lane = slot.get();
    // The thread keeps its world alive: see destroy() for a lane that
    // outlives it.
    SigpipeBlockedForNewThreads no_sigpipe;
    lane->thread = std::thread([self = shared_from_this(), lane] { self->laneMain(*lane); });
  }
  return *slot;
}

void World::notifyAll() {
  for (auto& [peer, lane] : lanes_) lane->cv.notify_all();
}

WorldState World::state() const {
  std::lock_guard<std::mutex> lock(m_);
  return state_;
}

Status World::failureStatus() const {
  return state_ == WorldState::Destroyed ? Status::Cancelled : Status::WorldBroken;
}

Request* World::submit(const OpDesc& op, uint64_t user_data) {
  validateOp(op, id_.rank, id_.size);
  std::lock_guard<std::mutex> issue(issue_m_);
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ == WorldState::Destroyed) {
      throw Error(Status::Cancelled, "world '" + id_.name + "' was destroyed");
    }
    if (state_ == WorldState::Broken) {
      throw Error(Status::WorldBroken, "world '" + id_.name + "' is broken: " + broken_detail_);
    }
  }
  std::unique_ptr<PendingOp> pending;
  try {
    pending = comm_->post(op);
  } catch (const TransportError& e) {
    breakWorld(e.peerRank(), e.what(), true);
    throw Error(Status::WorldBroken, "world '" + id_.name + "' is broken: " + e.what());
  }
  Request* r = Request::create(shared_from_this(), owner_.completions(), user_data);
  // An operation that already finished while it was posted (a send whose
  // receive was waiting) completes here, without waking a lane, unless an
  // earlier one of its lane is still pending: those complete in issue order.
  // The issue lock keeps the lane from taking new work meanwhile.
  bool lane_idle;
  {
    std::lock_guard<std::mutex> lock(m_);
    Lane& lane = laneFor(op);
    lane_idle = lane.queue.empty() && !lane.running;
  }
  if (lane_idle) {
    OpResult done;
    bool finished = false;
    try {
      finished = pending->finished(done);
    } catch (const TransportError& e) {
      breakWorld(e.peerRank(), e.what(), true);
      r->complete(Status::WorldBroken, "world '" + id_.name + "' is broken: " + e.what());
      return r;
    }
    if (finished) {
      r->complete(done.status, done.detail);
      return r;
    }
  }
  bool main_lane;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_) {
      r->complete(Status::Cancelled, "world '" + id_.name + "' was destroyed");
      return r;
    }
    Lane& lane = laneFor(op);
    lane.queue.push_back(Item{r->shared_from_this(), std::move(pending)});
    lane.cv.notify_one();
    main_lane = lane.peer == kMainLane;
  }
  if (main_lane) comm_->wake();  // the main lane idles in the backend
  return r;
}

void World::breakWorld(int peer_rank, const std::string& detail, bool announce) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ != WorldState::Ready) return;
    state_ = WorldState::Broken;
    broken_detail_ = detail;
    // The event is queued before any request can fail for this break, so a
    // program that sees a failed request finds the event (and the blamed
    // peer) already waiting. The owner only queues; it never calls back.
    owner_.worldBroken(shared_from_this(), peer_rank, detail, announce);
  }
  MW_LOG(LogLevel::Info, "world %s epoch %llu broken (peer %d): %s", id_.name.c_str(),
         static_cast<unsigned long long>(id_.epoch), peer_rank, detail.c_str());
  comm_->abort();
  std::lock_guard<std::mutex> lock(m_);
  notifyAll();
}

void World::cancel(Request& r) {
  if (r.finished()) return;
  if (comm_->cancel(r)) return;
  breakWorld(id_.rank, "rank " + std::to_string(id_.rank) + " cancelled an operation that was already under way",
             true);
}

bool World::destroy() {
  bool was_ready;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_) return false;
    was_ready = state_ == WorldState::Ready;
    state_ = WorldState::Destroyed;
    stopping_ = true;
    notifyAll();
  }
  comm_->abort();
  comm_->wake();
  // No lane is added once stopping_ is set, so the map is stable here.
  // Every wait of ours wakes on abort; a Gloo collective whose send sits
  // in the write queue of a hung peer does not (Gloo signals only bound
  // buffers there) and returns only at its timeout. Such a lane is left
  // to finish on its own, holding the world and its backend, rather than
  // making destroy hang.
  bool stuck = false;
  {
    std::unique_lock<std::mutex> lock(m_);
    auto all_exited = [&] {
      for (auto& [peer, lane] : lanes_) {
        if (!lane->exited) return false;
      }
      return true;
    };
    lane_exited_.wait_for(lock, kDestroyGrace, all_exited);
    for (auto& [peer, lane] : lanes_) {
      if (lane->exited) continue;
      stuck = true;
      MW_LOG(LogLevel::Warn, "world %s: a lane is still blocked in the backend %lld ms after abort; leaving it",
             id_.name.c_str(), static_cast<long long>(kDestroyGrace.count()));
    }
  }
  for (auto& [peer, lane] : lanes_) {
    if (!lane->thread.joinable()) continue;
    if (lane->exited) {
      lane->thread.join();
    } else {
      lane->thread.detach();
    }
  }
  if (!stuck) comm_->close();  // else the world's destructor closes it
  return was_ready;
}

void World::laneMain(Lane& lane) {
  std::string thread_name = (lane.peer == kMainLane ? "mw:" : "mw<" + std::to_string(lane.peer) + ":") + id_.name;
  thread_name.resize(std::min<size_t>(thread_name.size(), 15));
  pthread_setname_np(pthread_self(), thread_name.c_str());

  const bool main = lane.peer == kMainLane;
  for (;;) {
    Item item;
    bool idle_in_backend = false;
    {
      std::unique_lock<std::mutex> lock(m_);
      // The main lane of a healthy world idles inside the backend, where a
      // failing peer wakes it; every other lane idles here.
      if (!(main && state_ == WorldState::Ready)) {
        lane.cv.wait(lock, [&] { return stopping_ || !lane.queue.empty(); });
      }
      if (!lane.queue.empty()) {
        item = std::move(lane.queue.front());
        lane.queue.pop_front();
        lane.running = true;
      } else if (stopping_) {
        lane.exited = true;
        lane_exited_.notify_all();
        return;
      } else {
        idle_in_backend = true;
      }
    }
    if (item.request) {
      runItem(item);
      item = Item{};  // the operation's buffers go before the lane counts as idle
      std::lock_guard<std::mutex> lock(m_);
      lane.running = false;
    } else if (idle_in_backend) {
      try {
        comm_->idleWait();
      } catch (const TransportError& e) {
        breakWorld(e.peerRank(), e.what(), true);
      }
    }
  }
}

void World::runItem(Item& item) {
  {
    std::unique_lock<std::mutex> lock(m_);
    if (state_ != WorldState::Ready) {
      Status s = failureStatus();
      // What already arrived before a peer left or failed is delivered: a
      // member that leaves after its last send must not fail that send's
      // receive here just because this lane had not got to it yet.
      if (s == Status::WorldBroken) {
        lock.unlock();
        OpResult done;
        bool finished = false;
        try {
          finished = item.op->finished(done);
        } catch (const std::exception&) {
        }
        if (finished) {
          item.request->complete(done.status, done.detail);
          return;
        }
        lock.lock();
      }
      item.request->complete(s, "world '" + id_.name + "' " +
                                    (s == Status::Cancelled ? "was destroyed" : "is broken: " + broken_detail_));
      return;
    }
  }
  Deadline deadline = deadlineAfter(op_timeout_);
  try {
    OpResult r = item.op->run(deadline);
    item.request->complete(r.status, r.detail);
    return;
  } catch (const TransportError& e) {
    std::string detail = e.what();
    if (op_timeout_.count() > 0 && Clock::now() >= deadline) {
      detail = "operation ran past op_timeout_ms=" + std::to_string(op_timeout_.count()) + " (" + detail + ")";
    }
    breakWorld(e.peerRank(), detail, true);
  } catch (const std::exception& e) {
    breakWorld(-1, std::string("backend failure: ") + e.what(), true);
  }
  std::lock_guard<std::mutex> lock(m_);
  Status s = failureStatus();
  item.request->complete(s, "world '" + id_.name + "' " +
                                (s == Status::Cancelled ? "was destroyed" : "is broken: " + broken_detail_));
}

}  // namespace mw
