// The core's error vocabulary. Core code throws Error; the C boundary turns
// it into an mw_status_t plus the thread-local message.
#pragma once

#include <stdexcept>
#include <string>

namespace mw {

// Values equal the C API's mw_status_t so the boundary converts by cast.
enum class Status : int {
  Ok = 0,
  InProgress = 1,
  InvalidArgument = -1,
  NotFound = -2,
  AlreadyExists = -3,
  Timeout = -4,
  WorldBroken = -5,
  Store = -6,
  Backend = -7,
  Unsupported = -8,
  Cancelled = -9,
  Internal = -10,
  NoMemory = -11,
};

const char* statusName(Status s) noexcept;

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

}  // namespace mw
