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

namespace mw {

class Request;

class CompletionQueue {
 public:
  void push(const std::shared_ptr<Request>& r);
  // Removes `r` if queued and marks it reported/released so it is never
  // delivered later.
  void markReported(Request& r);
  void release(Request& r);
  // Up to `max` requests, waiting up to `timeout` (negative: forever) for the
  // first. Each returned request is marked reported.
  std::vector<std::shared_ptr<Request>> pop(size_t max, std::chrono::milliseconds timeout);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<Request>> ready_;
};

}  // namespace mw
