// The fd behind mw_context_fd: readable while any completion or event of
// the context is queued, so an event loop can sleep on it.
//
// The queues report every change of their length, under their own locks.
// The fd itself (an eventfd) is touched only when the total moves between
// zero and non-zero, and only once somebody asked for it: a program that
// never calls mw_context_fd pays one uncontended lock per change.
#pragma once

#include <cstddef>
#include <mutex>

namespace mw {

class Readiness {
 public:
  Readiness() = default;
  ~Readiness();
  Readiness(const Readiness&) = delete;
  Readiness& operator=(const Readiness&) = delete;

  void added(size_t n) noexcept;
  void removed(size_t n) noexcept;

  // Creates the eventfd on first use, readable at once if anything is
  // queued. Throws Error(Internal) when the system has no fd to give.
  int fd();

 private:
  void signal(bool readable) noexcept;  // under m_

  std::mutex m_;
  size_t queued_ = 0;
  int fd_ = -1;
  bool readable_ = false;
};

}  // namespace mw
