#include "core/store/redis_pool.h"

#include <poll.h>

#include <exception>

namespace mw {

namespace {
constexpr size_t kMaxIdle = 8;
}

std::vector<std::unique_ptr<RedisConnection>> RedisPool::takeClosed() {
  std::vector<std::unique_ptr<RedisConnection>> closed;
  if (idle_.empty()) return closed;
  std::vector<pollfd> fds;
  for (const auto& [generation, c] : idle_) fds.push_back({c->fd(), POLLIN | POLLRDHUP, 0});
  if (::poll(fds.data(), fds.size(), 0) <= 0) return closed;
  size_t kept = 0;
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (fds[i].revents == 0) {
      idle_[kept++] = std::move(idle_[i]);
    } else {
      closed.push_back(std::move(idle_[i].second));
    }
  }
  idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(kept), idle_.end());
  return closed;
}

RedisPool::Lease RedisPool::lease() {
  const uint64_t now = connector_.generation();
  std::vector<std::unique_ptr<RedisConnection>> closed;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(m_);
    closed = takeClosed();
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
  std::vector<std::unique_ptr<RedisConnection>> closed;  // freed outside the lock
  std::lock_guard<std::mutex> lock(m_);
  closed = takeClosed();
  if (idle_.size() < kMaxIdle) idle_.emplace_back(generation, std::move(c));
}

}  // namespace mw
