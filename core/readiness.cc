#include "core/readiness.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace mw {

Readiness::~Readiness() {
  if (fd_ >= 0) ::close(fd_);
}

void Readiness::added(size_t n) noexcept {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(m_);
  queued_ += n;
  if (fd_ >= 0 && !readable_) signal(true);
}

void Readiness::removed(size_t n) noexcept {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(m_);
  queued_ = n > queued_ ? 0 : queued_ - n;
  if (fd_ >= 0 && readable_ && queued_ == 0) signal(false);
}

int Readiness::fd() {
  std::lock_guard<std::mutex> lock(m_);
  if (fd_ < 0) {
    fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ < 0) throw Error(Status::Internal, std::string("eventfd for the context fd: ") + std::strerror(errno));
    if (queued_ > 0) signal(true);
  }
  return fd_;
}

// The counter holds 1 while readable and 0 otherwise, so one write or one
// read flips it; neither can block or fail on a counter of 0 or 1.
void Readiness::signal(bool readable) noexcept {
  uint64_t v = 1;
  ssize_t n = readable ? ::write(fd_, &v, sizeof v) : ::read(fd_, &v, sizeof v);
  (void)n;
  readable_ = readable;
}

}  // namespace mw
