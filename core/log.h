// Minimal leveled logging to stderr; the level is process-wide and set from
// the most recently created context's log_level.
#pragma once

#include "core/config.h"

namespace mw {

void setLogLevel(LogLevel level) noexcept;
bool logEnabled(LogLevel level) noexcept;
void logMessage(LogLevel level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

#define MW_LOG(level, ...)                                      \
  do {                                                          \
    if (::mw::logEnabled(level)) ::mw::logMessage(level, __VA_ARGS__); \
  } while (0)

}  // namespace mw
