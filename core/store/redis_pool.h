// Connections for callers that block on Redis (world creation), one per
// concurrent caller, so one slow rendezvous never holds up another.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "core/store/redis_connection.h"
#include "core/store/redis_url.h"

namespace mw {

class RedisPool {
 public:
  RedisPool(RedisUrl url, std::chrono::milliseconds timeout) : url_(std::move(url)), timeout_(timeout) {}

  class Lease {
   public:
    Lease(RedisPool& pool, std::unique_ptr<RedisConnection> c) : pool_(pool), c_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease() { pool_.giveBack(std::move(c_)); }
    RedisConnection* operator->() { return c_.get(); }
    RedisConnection& operator*() { return *c_; }

   private:
    RedisPool& pool_;
    std::unique_ptr<RedisConnection> c_;
  };

  // Throws Error(Store) when no connection can be made.
  Lease lease();
  const RedisUrl& url() const { return url_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void giveBack(std::unique_ptr<RedisConnection> c);

  const RedisUrl url_;
  const std::chrono::milliseconds timeout_;
  std::mutex m_;
  std::vector<std::unique_ptr<RedisConnection>> idle_;
};

}  // namespace mw
