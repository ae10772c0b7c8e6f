#include "core/world.h"

#include <pthread.h>

#include "core/completion_queue.h"
#include "core/log.h"
#include "core/request.h"

namespace mw {

World::World(WorldIdentity id, std::unique_ptr<Communicator> comm, WorldOwner& owner,
             std::chrono::milliseconds op_timeout)
    : id_(std::move(id)), comm_(std::move(comm)), owner_(owner), op_timeout_(op_timeout) {}

World::~World() {
  // destroy() is the normal path; this covers a world that never started.
  if (worker_.joinable()) destroy();
}

void World::start() { worker_ = std::thread([this] { workerMain(); }); }

WorldState World::state() const {
  std::lock_guard<std::mutex> lock(m_);
  return state_;
}

Status World::failureStatus() const {
  return state_ == WorldState::Destroyed ? Status::Cancelled : Status::WorldBroken;
}

Request* World::submit(const OpDesc& op) {
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
  Request* r = Request::create(shared_from_this(), owner_.completions());
  {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back(Item{r->shared_from_this(), std::move(pending)});
  }
  cv_.notify_one();
  comm_->wake();
  return r;
}

void World::breakWorld(int peer_rank, const std::string& detail, bool announce) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ != WorldState::Ready) return;
    state_ = WorldState::Broken;
    broken_detail_ = detail;
  }
  MW_LOG(LogLevel::Info, "world %s epoch %llu broken (peer %d): %s", id_.name.c_str(),
         static_cast<unsigned long long>(id_.epoch), peer_rank, detail.c_str());
  comm_->abort();
  cv_.notify_all();
  owner_.worldBroken(shared_from_this(), peer_rank, detail, announce);
}

bool World::destroy() {
  bool was_ready;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ == WorldState::Destroyed && !worker_.joinable()) return false;
    was_ready = state_ == WorldState::Ready;
    state_ = WorldState::Destroyed;
    stopping_ = true;
  }
  comm_->abort();
  cv_.notify_all();
  comm_->wake();
  if (worker_.joinable()) worker_.join();
  comm_->close();
  return was_ready;
}

void World::workerMain() {
  std::string thread_name = "mw:" + id_.name;
  thread_name.resize(std::min<size_t>(thread_name.size(), 15));
  pthread_setname_np(pthread_self(), thread_name.c_str());

  for (;;) {
    Item item;
    bool healthy;
    {
      std::unique_lock<std::mutex> lock(m_);
      healthy = state_ == WorldState::Ready;
      if (!healthy) cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (!queue_.empty()) {
        item = std::move(queue_.front());
        queue_.pop_front();
      } else if (stopping_) {
        return;
      }
    }
    if (item.request) {
      runItem(item);
      continue;
    }
    try {
      comm_->idleWait();
    } catch (const TransportError& e) {
      breakWorld(e.peerRank(), e.what(), true);
    }
  }
}

void World::runItem(Item& item) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (state_ != WorldState::Ready) {
      Status s = failureStatus();
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
