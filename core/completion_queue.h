// The context's queue of finished requests that mw_poll drains. Requests
// whose status the program already saw through test/wait, or that it freed,
// are taken out so they are never delivered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "core/wake_signal.h"

namespace mw {

class Readiness;
class Request;

class CompletionQueue {
 public:
  // `readiness` is the context's fd; the queue keeps it because requests
  // keep the queue, and may finish after their context is gone.
  explicit CompletionQueue(std::shared_ptr<Readiness> readiness) : readiness_(std::move(readiness)) {}

  void push(const std::shared_ptr<Request>& r);
  // Removes `r` if queued and marks it reported/released so it is never
  // delivered later.
  void markReported(Request& r);
  void release(Request& r);
  // Up to `max` requests, waiting up to `timeout` (negative: forever) for the
  // first, or until wake(). Each returned request is marked reported.
  std::vector<std::shared_ptr<Request>> pop(size_t max, std::chrono::milliseconds timeout);
  bool empty();
  void wake();

 private:
  std::shared_ptr<Request> unqueue(Request& r);  // under m_

  const std::shared_ptr<Readiness> readiness_;
  std::mutex m_;
  std::condition_variable cv_;
  WakeSignal wake_;
  std::list<std::shared_ptr<Request>> ready_;
};

}  // namespace mw
