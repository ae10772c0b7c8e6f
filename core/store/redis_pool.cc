#include "core/store/redis_pool.h"

#include <exception>

namespace mw {

namespace {
constexpr size_t kMaxIdle = 8;
}

RedisPool::Lease RedisPool::lease() {
  const uint64_t now = connector_.generation();
  {
    std::lock_guard<std::mutex> lock(m_);
    while (!idle_.empty()) {
      auto [generation, c] = std::move(idle_.back());
      idle_.pop_back();
      if (generation == now) return Lease(*this, std::move(c), generation);
    }
  }
  return Lease(*this, connector_.connect(), now);
}

void RedisPool::giveBack(std::unique_ptr<RedisConnection> c, uint64_t generation) {
  if (!c || c->broken() || generation != connector_.generation()) return;
  try {
    c->setTimeout(connector_.timeout());
  } catch (const std::exception&) {
    return;  // from a destructor: a connection that cannot be reset is dropped
  }
  std::lock_guard<std::mutex> lock(m_);
  if (idle_.size() < kMaxIdle) idle_.emplace_back(generation, std::move(c));
}

}  // namespace mw
