#include "core/store/redis_connector.h"

#include "core/store/sentinel.h"

namespace mw {

std::unique_ptr<RedisConnection> RedisConnector::connect() const {
  return viaSentinel() ? connectToMaster(url_, timeout_) : RedisConnection::connect(url_, timeout_);
}

}  // namespace mw
