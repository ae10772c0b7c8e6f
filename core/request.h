// One asynchronous operation as the program sees it: a status that becomes
// final once, a user_data word, and the delivery bookkeeping that makes each
// completion reach the program exactly once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "core/op.h"
#include "core/progress_driver.h"

namespace mw {

class World;
class CompletionQueue;

class Request : public std::enable_shared_from_this<Request> {
 public:
  // The returned request holds a reference to itself on the caller's
  // behalf; release() drops it (mw_request_free). `user_data` is set before
  // anything can complete it.
  // `driver`, when set, is progressed by wait() for a bounded spin.
  static Request* create(std::shared_ptr<World> world, std::shared_ptr<CompletionQueue> cq,
                         uint64_t user_data = 0, std::shared_ptr<ProgressDriver> driver = nullptr);

  Status test();
  // Waits up to `timeout` (negative: forever); returns InProgress on timeout.
  Status wait(std::chrono::milliseconds timeout);
  void setUserData(uint64_t v) noexcept { user_data_.store(v, std::memory_order_relaxed); }
  uint64_t userData() const noexcept { return user_data_.load(std::memory_order_relaxed); }
  const std::shared_ptr<World>& world() const noexcept { return world_; }

  // What the request runs, set once before it is handed to the backend
  // (mw_poll_info reports it): its kind and, for a send or a receive, its
  // buffer's bytes.
  void describe(OpKind kind, size_t p2p_bytes) noexcept {
    kind_ = kind;
    p2p_bytes_ = p2p_bytes;
  }
  OpKind kind() const noexcept { return kind_; }
  // When it was issued (created): its operation's age counts from here.
  std::chrono::steady_clock::time_point issued() const noexcept { return issued_; }
  // The bytes a receive that succeeded wrote (a receive matches only a
  // send of its own size); 0 for anything else, and while in progress.
  // Reports nothing to the program, unlike test().
  size_t receivedBytes();

  // Called once by whoever finishes the operation; later calls are ignored.
  // The first tells the world, when counted in, that it has one operation
  // less pending (World::pending).
  void complete(Status status, const std::string& detail = std::string());
  void countIn() noexcept { counted_.store(true); }
  // True when it was counted in and had not completed: the issue failed.
  bool countOut() noexcept { return counted_.exchange(false); }
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  // mw_request_cancel: asks the world to take the operation back.
  void cancel();
  // Why the request failed; empty while in progress or after success.
  std::string detail();
  void release();

 private:
  friend class CompletionQueue;
  Request(std::shared_ptr<World> world, std::shared_ptr<CompletionQueue> cq, uint64_t user_data,
          std::shared_ptr<ProgressDriver> driver)
      : world_(std::move(world)), cq_(std::move(cq)), driver_(std::move(driver)), user_data_(user_data) {}
  void markReported();

  const std::shared_ptr<World> world_;
  const std::shared_ptr<CompletionQueue> cq_;
  const std::shared_ptr<ProgressDriver> driver_;
  std::shared_ptr<Request> caller_ref_;
  std::atomic<uint64_t> user_data_;
  std::atomic<bool> finished_{false};  // status_ is final; read without the lock
  std::atomic<bool> counted_{false};   // in its world's pending count
  OpKind kind_ = OpKind::Barrier;
  size_t p2p_bytes_ = 0;
  const std::chrono::steady_clock::time_point issued_ = std::chrono::steady_clock::now();

  std::mutex m_;
  std::condition_variable cv_;
  Status status_ = Status::InProgress;
  std::string detail_;
  // Threads inside wait() that will report the final status themselves:
  // a completion they see is not queued for mw_poll. Raised without m_,
  // lowered under it, read by complete() under it.
  std::atomic<int> waiters_{0};
  bool queued_for_poll_ = false;  // under m_: complete() pushed it to cq_

  // Guarded by the completion queue's mutex.
  bool reported_ = false;   // the program has seen the final status
  bool released_ = false;   // mw_request_free was called
  bool queued_ = false;
  std::list<std::shared_ptr<Request>>::iterator queue_pos_;
};

}  // namespace mw
