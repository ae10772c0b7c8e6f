#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <unistd.h>

namespace mw {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};

const char* levelName(LogLevel l) {
  switch (l) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warn";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
    case LogLevel::Off: break;
  }
  return "";
}
}  // namespace

void setLogLevel(LogLevel level) noexcept { g_level.store(static_cast<int>(level)); }

bool logEnabled(LogLevel level) noexcept {
  return level != LogLevel::Off && static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void logMessage(LogLevel level, const char* fmt, ...) noexcept {
  char line[1024];
  int n = std::snprintf(line, sizeof line, "multiworld[%d] %s: ", static_cast<int>(getpid()),
                        levelName(level));
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "%s\n", line);
}

}  // namespace mw
