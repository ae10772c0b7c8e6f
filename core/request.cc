#include "core/request.h"

#include "core/completion_queue.h"
#include "core/world.h"

namespace mw {

Request* Request::create(std::shared_ptr<World> world, std::shared_ptr<CompletionQueue> cq,
                         uint64_t user_data, std::shared_ptr<ProgressDriver> driver) {
  // One allocation for the request and its count (a local class may
  // call the private constructor).
  struct Made : Request {
    Made(std::shared_ptr<World> w, std::shared_ptr<CompletionQueue> q, uint64_t u, std::shared_ptr<ProgressDriver> d)
        : Request(std::move(w), std::move(q), u, std::move(d)) {}
  };
  std::shared_ptr<Request> r =
      std::make_shared<Made>(std::move(world), std::move(cq), user_data, std::move(driver));
  r->caller_ref_ = r;
  return r.get();
}

Status Request::test() {
  Status s;
  {
    std::lock_guard<std::mutex> lock(m_);
    s = status_;
  }
  if (s != Status::InProgress) markReported();
  return s;
}

size_t Request::receivedBytes() {
  if (kind_ != OpKind::Recv) return 0;
  std::lock_guard<std::mutex> lock(m_);
  return status_ == Status::Ok ? p2p_bytes_ : 0;
}

Status Request::wait(std::chrono::milliseconds timeout) {
  // Finished already (a send a ring took at once), it reads no clock.
  const bool was_finished = finished();
  if (!was_finished) waiters_.fetch_add(1);
  const auto deadline = timeout.count() < 0 || was_finished
                            ? std::chrono::steady_clock::time_point::max()
                            : std::chrono::steady_clock::now() + timeout;  // the spin counts against it
  if (driver_ && timeout.count() != 0 && !was_finished) driver_->spinUntil([this] { return finished(); }, deadline);
  Status s;
  bool queued;
  {
    std::unique_lock<std::mutex> lock(m_);
    auto done = [&] { return status_ != Status::InProgress; };
    if (timeout.count() < 0) {
      cv_.wait(lock, done);
    } else {
      cv_.wait_until(lock, deadline, done);
    }
    s = status_;
    queued = queued_for_poll_;
    if (!was_finished) waiters_.fetch_sub(1);
  }
  if (s != Status::InProgress && queued) markReported();
  return s;
}

void Request::complete(Status status, const std::string& detail) {
  bool waited;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (status_ != Status::InProgress) return;
    // Before the program can see it finished: a shrink that follows its
    // wait finds nothing pending, and a caller that waited for it finds it
    // in the metrics.
    if (countOut() && world_) world_->opEnded();
    if (world_) {
      if (const metrics::WorldMetrics* m = world_->metrics()) {
        m->completed(kind_, status, std::chrono::steady_clock::now() - issued_, p2p_bytes_);
      }
    }
    status_ = status;
    detail_ = detail;
    finished_.store(true, std::memory_order_release);
    // A thread in wait() reports it before it lets go of m_.
    waited = waiters_.load() > 0;
    queued_for_poll_ = !waited;
  }
  cv_.notify_all();
  if (!waited) cq_->push(shared_from_this());
}

void Request::cancel() {
  if (finished() || !world_) return;
  world_->cancel(*this);
}

std::string Request::detail() {
  std::lock_guard<std::mutex> lock(m_);
  return detail_;
}

void Request::markReported() { cq_->markReported(*this); }

void Request::release() {
  cq_->release(*this);
  // The last line: may destroy *this when nobody else holds it.
  std::shared_ptr<Request> self = std::move(caller_ref_);
}

}  // namespace mw
