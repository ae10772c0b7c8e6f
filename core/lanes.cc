#include "core/lanes.h"

#include <pthread.h>

#include <optional>

#include "core/log.h"
#include "core/request.h"
#include "core/signals.h"
#include "core/world.h"

namespace mw {

namespace {
// How long stop() waits for lanes to leave the backend after an abort.
constexpr std::chrono::milliseconds kStopGrace{2000};
}  // namespace

LaneBackend::~LaneBackend() {
  // A lane left behind by stop() holds the world, and so this backend,
  // until it leaves the communicator; only then is it safe to close.
  if (stuck_) comm_->close();
}

void LaneBackend::start(World& world) {
  world_ = &world;
  std::lock_guard<std::mutex> lock(m_);
  lane(kMainLane);
}

LaneBackend::Lane& LaneBackend::laneFor(const OpDesc& op) {
  return lane(op.kind == OpKind::Recv ? op.peer : kMainLane);
}

LaneBackend::Lane& LaneBackend::lane(int key) {
  auto& slot = lanes_[key];
  if (!slot) {
    slot = std::make_unique<Lane>();
    slot->peer = key;
    Lane* lane = slot.get();
    // The thread keeps its world (and so this backend) alive: see stop()
    // for a lane that outlives it.
    SigpipeBlockedForNewThreads no_sigpipe;
    lane->thread = std::thread([self = world_->shared_from_this(), this, lane] { laneMain(*lane); });
  }
  return *slot;
}

void LaneBackend::notifyAll() {
  for (auto& [peer, lane] : lanes_) lane->cv.notify_all();
}

void LaneBackend::submit(const OpDesc& op, const std::shared_ptr<Request>& r) {
  std::unique_ptr<PendingOp> pending = comm_->post(op);
  // An operation that already finished while it was posted (a send whose
  // receive was waiting) completes here, without waking a lane, unless an
  // earlier one of its lane is still pending: those complete in issue order.
  // The world's issue lock keeps the lane from taking new work meanwhile.
  bool lane_idle;
  {
    std::lock_guard<std::mutex> lock(m_);
    Lane& lane = laneFor(op);
    lane_idle = lane.queue.empty() && !lane.running;
  }
  if (lane_idle) {
    OpResult done;
    if (pending->finished(done)) {  // throws TransportError like post()
      r->complete(done.status, done.detail);
      return;
    }
  }
  bool main_lane;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (stopping_) {
      OpResult f = world_->failure();
      r->complete(f.status, f.detail);
      return;
    }
    Lane& lane = laneFor(op);
    lane.queue.push_back(Item{r, std::move(pending)});
    lane.cv.notify_one();
    main_lane = lane.peer == kMainLane;
  }
  if (main_lane) comm_->wake();  // the main lane idles in the backend
}

void LaneBackend::abort() noexcept {
  comm_->abort(world_ ? world_->blamedRank() : -1);
  std::lock_guard<std::mutex> lock(m_);
  aborted_ = true;
  notifyAll();
}

void LaneBackend::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
    notifyAll();
  }
  comm_->wake();
  // No lane is added once stopping_ is set, so the map is stable here.
  // Every wait of ours wakes on abort; a Gloo collective whose send sits
  // in the write queue of a hung peer does not (Gloo signals only bound
  // buffers there) and returns only at its timeout. Such a lane is left
  // to finish on its own, holding the world and its backend, rather than
  // making destroy hang.
  {
    std::unique_lock<std::mutex> lock(m_);
    auto all_exited = [&] {
      for (auto& [peer, lane] : lanes_) {
        if (!lane->exited) return false;
      }
      return true;
    };
    lane_exited_.wait_for(lock, kStopGrace, all_exited);
    for (auto& [peer, lane] : lanes_) {
      if (lane->exited) continue;
      stuck_ = true;
      MW_LOG(LogLevel::Warn, "world %s: a lane is still blocked in the backend %lld ms after abort; leaving it",
             world_->name().c_str(), static_cast<long long>(kStopGrace.count()));
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
  if (!stuck_) comm_->close();  // else the destructor closes it
}

void LaneBackend::breakOn(const TransportError& e) {
  const std::chrono::milliseconds op_timeout = world_->opTimeout();
  if (op_timeout.count() > 0) {
    const auto now = Clock::now();
    std::optional<Clock::time_point> started;
    {
      std::lock_guard<std::mutex> lock(m_);
      for (auto& [peer, lane] : lanes_) {
        if (lane->running && lane->deadline <= now) started = lane->deadline - op_timeout;
      }
    }
    if (started) {
      world_->breakWorld(e.peerRank(),
                         "an operation ran past op_timeout_ms=" + std::to_string(op_timeout.count()) + " (" +
                             e.what() + ")",
                         true, BreakCause::OpTimeout, *started);
      return;
    }
  }
  world_->breakWorld(e.peerRank(), e.what(), true, BreakCause::Transport);
}

void LaneBackend::laneMain(Lane& lane) {
  std::string thread_name = (lane.peer == kMainLane ? "mw:" : "mw<" + std::to_string(lane.peer) + ":") + world_->name();
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
      if (!(main && !aborted_)) {
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
      runItem(lane, item);
      item = Item{};  // the operation's buffers go before the lane counts as idle
      std::lock_guard<std::mutex> lock(m_);
      lane.running = false;
    } else if (idle_in_backend) {
      try {
        comm_->idleWait();
      } catch (const TransportError& e) {
        breakOn(e);
      }
    }
  }
}

void LaneBackend::runItem(Lane& lane, Item& item) {
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(m_);
    aborted = aborted_;
  }
  if (aborted) {
    OpResult f = world_->failure();
    // What already arrived before a peer left or failed is delivered: a
    // member that leaves after its last send must not fail that send's
    // receive here just because this lane had not got to it yet. Only in
    // order, though: once an earlier operation of the lane failed, a later
    // message (whose header overtook the earlier one's payload) must not
    // complete as if the lost one had never been sent.
    if (f.status == Status::WorldBroken && !lane.lost) {
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
    }
    lane.lost = true;
    item.request->complete(f.status, f.detail);
    return;
  }
  const Deadline deadline = deadlineAfter(world_->opTimeout());
  {
    std::lock_guard<std::mutex> lock(m_);
    lane.deadline = deadline;
  }
  try {
    OpResult r = item.op->run(deadline);
    item.request->complete(r.status, r.detail);
    return;
  } catch (const TransportError& e) {
    breakOn(e);
  } catch (const std::exception& e) {
    world_->breakWorld(-1, std::string("backend failure: ") + e.what(), true, BreakCause::Backend);
  }
  lane.lost = true;
  OpResult f = world_->failure();
  item.request->complete(f.status, f.detail);
}

}  // namespace mw
