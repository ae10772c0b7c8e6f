// Gloo's rendezvous store over our Redis client, scoped to one world epoch.
// Waiting blocks on a per-key signal list (core/redis_signal.h) that set()
// gives one token, whatever the world's size, so nothing polls.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "core/deadline.h"
#include "core/redis_pool.h"

namespace mw {

class GlooStore : public gloo::rendezvous::Store {
 public:
  // `world_size` is not needed by the signalling; it stays in the
  // signature the backends share.
  GlooStore(RedisPool& pool, std::string prefix, int /*world_size*/, Deadline deadline)
      : pool_(pool), prefix_(std::move(prefix)), deadline_(deadline) {}

  // Checks every value get() reads: "" accepts it, anything else is why
  // not, and get() throws Error(Store) naming the key.
  using Check = std::function<std::string(const std::string& key, const std::vector<char>& value)>;
  void checkValuesWith(Check check) { check_ = std::move(check); }

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override;

 private:
  RedisPool& pool_;
  const std::string prefix_;
  const Deadline deadline_;  // the world creation's, whatever Gloo asks for
  std::map<std::string, std::vector<char>> seen_;
  Check check_;
};

}  // namespace mw
