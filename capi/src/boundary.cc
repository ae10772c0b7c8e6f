#include "capi/src/boundary.h"

namespace mw::capi {
namespace {
thread_local std::string t_last_error;
}

void setLastError(const std::string& message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();
  }
}

const char* lastError() noexcept { return t_last_error.c_str(); }

mw_status_t fail(Status s, const std::string& message) noexcept {
  setLastError(std::string(statusName(s)) + ": " + message);
  return toC(s);
}

void requireNonNull(const void* p, const char* what) {
  if (!p) throw Error(Status::InvalidArgument, std::string(what) + " is NULL");
}

std::chrono::milliseconds timeoutArg(int timeout_ms, const char* what) {
  if (timeout_ms < -1) {
    throw Error(Status::InvalidArgument,
                std::string(what) + " " + std::to_string(timeout_ms) + " must be >= 0, or -1 for no limit");
  }
  return std::chrono::milliseconds(timeout_ms);
}

}  // namespace mw::capi
