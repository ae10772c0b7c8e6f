// A thin RAII wrapper over hiredis's synchronous API.
//
// One RedisConnection is used by one thread at a time. Any failure of the
// connection itself (I/O error, EOF, protocol error, socket timeout) throws
// Error(Status::Store) and marks the connection broken(): from then on every
// call throws at once without touching the socket. A reply of type
// REDIS_REPLY_ERROR is a normal reply and is returned, not thrown.
//
// Writes are done with SIGPIPE blocked for the calling thread, and a SIGPIPE
// raised by the write is consumed, so a vanished server never kills the
// process.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/store/redis_url.h"

namespace mw {

// Frees with freeReplyObject; accepts nullptr.
void freeRedisReply(redisReply* r) noexcept;

using RedisReply = std::unique_ptr<redisReply, void (*)(redisReply*)>;

class RedisConnection {
 public:
  // Connects (timeout bounds the connect; 0 = no limit), sets the socket
  // timeout for every later round trip to `timeout`, enables TCP keepalive,
  // then AUTH (with user when given) when a password is set, and SELECT db
  // when non-zero. Throws Error(Store, "redis <redacted url>: <why>") on
  // failure, including "... AUTH failed: <server msg>". A negative timeout
  // throws Error(InvalidArgument).
  static std::unique_ptr<RedisConnection> connect(
      const RedisUrl& url, std::chrono::milliseconds timeout);

  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // One round trip. Throws Error(InvalidArgument) for empty args and
  // Error(Internal) while pipelined replies are still unread.
  RedisReply command(const std::vector<std::string>& args);

  // Pipelining: append N commands (buffered locally), then read N replies in
  // order with readReply(); the first readReply() sends the buffer.
  void append(const std::vector<std::string>& args);
  // Throws Error(Internal) when no appended reply is outstanding.
  RedisReply readReply();
  // Number of appended commands whose replies are not read yet.
  size_t pendingReplies() const { return pending_; }

  // Socket send/receive timeout for later round trips; 0 = no limit. For
  // blocking commands such as BLPOP callers raise it temporarily.
  void setTimeout(std::chrono::milliseconds t);

  bool broken() const { return broken_; }
  int fd() const;
  // The redacted URL this connection was made to.
  const std::string& url() const { return url_; }

  // For a subscriber connection driven by poll(2) on fd(): reads what the
  // socket has right now (never blocks) and returns every complete reply
  // buffered, possibly none. Replies may already be buffered after a
  // command() (e.g. messages that arrived with the SUBSCRIBE reply), so call
  // it once after subscribing even when poll() reports nothing. Throws
  // Error(Store) on EOF/error.
  std::vector<RedisReply> readAvailable();

 private:
  RedisConnection(redisContext* c, std::string redactedUrl);
  void checkUsable() const;
  [[noreturn]] void fail(const std::string& what);

  redisContext* c_;
  std::string url_;
  bool broken_ = false;
  std::string brokenReason_;
  size_t pending_ = 0;
};

// Helpers for reading replies defensively: nothing from Redis may crash the
// process.
// STRING/STATUS/ERROR text, "" otherwise (including nullptr).
std::string replyString(const redisReply* r);
bool replyIsError(const redisReply* r);
// INTEGER, or a STRING that parses fully as an integer, else fallback.
long long replyInteger(const redisReply* r, long long fallback);

}  // namespace mw
