// A plain hiredis client for a lab that acts as an operator or an attacker
// writing to Redis directly, or that asks a sentinel or a server what it is.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mwlab {

using RedisReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

class RedisClient {
 public:
  // Over the unix socket; AUTH with user and password when a password is given.
  explicit RedisClient(const std::string& socket, const std::string& user = "", const std::string& password = "");
  // Over TCP to 127.0.0.1:port (a server of a SentinelGroup, or a sentinel).
  RedisClient(int port, const std::string& password);
  // Over TCP to host:port; every command waits at most `timeout`.
  RedisClient(const std::string& host, int port, const std::string& password, std::chrono::milliseconds timeout);
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

}  // namespace mwlab
