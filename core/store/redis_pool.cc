#include "core/store/redis_pool.h"

namespace mw {

namespace {
constexpr size_t kMaxIdle = 8;
}

RedisPool::Lease RedisPool::lease() {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(c));
    }
  }
  return Lease(*this, RedisConnection::connect(url_, timeout_));
}

void RedisPool::giveBack(std::unique_ptr<RedisConnection> c) {
  if (!c || c->broken()) return;
  c->setTimeout(timeout_);
  std::lock_guard<std::mutex> lock(m_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(c));
}

}  // namespace mw
