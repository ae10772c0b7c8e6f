// A plain hiredis client for tests that act as an operator or an attacker
// writing to Redis directly, and a process that measures how quickly Redis
// answers while a test runs.
#pragma once

#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace mwtest {

using RedisReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

class RedisClient {
 public:
  // Over the unix socket; AUTH with user and password when a password is given.
  explicit RedisClient(const std::string& socket, const std::string& user = "", const std::string& password = "");
  // Over TCP to 127.0.0.1:port (a server of a SentinelGroup, or a sentinel).
  RedisClient(int port, const std::string& password);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  bool ok() const { return c_ != nullptr && c_->err == 0; }
  // One command (binary-safe arguments); nullptr when the connection failed.
  RedisReplyPtr cmd(const std::vector<std::string>& args);
  // The reply as text: a string/status/error's text, an integer in decimal,
  // "(nil)", or "(array of N)".
  std::string text(const std::vector<std::string>& args);
  // After SUBSCRIBE: the next message pushed to this client, or nullptr
  // when none came within `timeout` (the connection is unusable then).
  RedisReplyPtr nextPushed(std::chrono::milliseconds timeout);

 private:
  redisContext* c_ = nullptr;
};

struct PingStats {
  std::atomic<int> stop{0};
  std::atomic<int64_t> pings{0};
  std::atomic<int64_t> failures{0};
  std::atomic<int64_t> worst_us{0};  // slowest PING round trip seen
};

// Forks a process (owned by `workers`) that PINGs the Redis on `socket`
// about every millisecond until stats.stop is set, and returns once the
// first PING was answered (or 10 s passed: then stats.pings stays 0).
void startPinger(Workers& workers, const std::string& socket, PingStats& stats);

}  // namespace mwtest
