// Connections for callers that block on Redis (world creation), one per
// concurrent caller, so one slow rendezvous never holds up another. A
// connection made before the connector's latest invalidation (a failover,
// a lost link) is dropped rather than reused.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/store/redis_connection.h"
#include "core/store/redis_connector.h"

namespace mw {

class RedisPool {
 public:
  explicit RedisPool(RedisConnector& connector) : connector_(connector) {}

  class Lease {
   public:
    Lease(RedisPool& pool, std::unique_ptr<RedisConnection> c, uint64_t generation)
        : pool_(pool), c_(std::move(c)), generation_(generation) {}
    Lease(Lease&&) = default;
    ~Lease() { pool_.giveBack(std::move(c_), generation_); }
    RedisConnection* operator->() { return c_.get(); }
    RedisConnection& operator*() { return *c_; }

   private:
    RedisPool& pool_;
    std::unique_ptr<RedisConnection> c_;
    uint64_t generation_;
  };

  // Throws Error(Store) when no connection can be made.
  Lease lease();
  const RedisUrl& url() const { return connector_.url(); }
  std::chrono::milliseconds timeout() const { return connector_.timeout(); }
  RedisConnector& connector() { return connector_; }

 private:
  void giveBack(std::unique_ptr<RedisConnection> c, uint64_t generation);
  // Under m_: the idle connections their server closed. An idle connection
  // has nothing to read, so a readable one was closed: Sentinel kills the
  // clients of an instance it reconfigures, and Redis those idle past its
  // `timeout`. They go at once, rather than failing a later lease's
  // command and holding a descriptor until then.
  std::vector<std::unique_ptr<RedisConnection>> takeClosed();

  RedisConnector& connector_;
  std::mutex m_;
  std::vector<std::pair<uint64_t, std::unique_ptr<RedisConnection>>> idle_;  // with their generation
};

}  // namespace mw
