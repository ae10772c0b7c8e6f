// The key-value store every backend forms its transport over: values under
// one world incarnation's prefix in Redis, written once by their owner and
// read by the other members. Waiting blocks on a per-key signal list
// (core/store/redis_signal.h) that set() gives one token, whatever the
// world's size, so nothing polls. Gloo sees it through its own Store
// interface (core/backends/gloo/gloo_store.h); UCX and NCCL use it as is.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/store/redis_pool.h"

namespace mw {

class KvStore {
 public:
  // `world_size` is not needed by the signalling; it stays in the
  // signature the backends share.
  KvStore(RedisPool& pool, std::string prefix, int /*world_size*/, Deadline deadline)
      : pool_(pool), prefix_(std::move(prefix)), deadline_(deadline) {}

  // Checks every value get() reads: "" accepts it, anything else is why
  // not, and get() throws Error(Store) naming the key.
  using Check = std::function<std::string(const std::string& key, const std::vector<char>& value)>;
  void checkValuesWith(Check check) { check_ = std::move(check); }

  // Throws Error(Store) when Redis refuses or is unreachable.
  void set(const std::string& key, const std::vector<char>& data);
  // Waits for the value until the deadline given at construction (whatever
  // a caller asks for): Error(Timeout) then, Error(Store) for a value the
  // check refuses or a signal without a value.
  std::vector<char> get(const std::string& key);

 private:
  RedisPool& pool_;
  const std::string prefix_;
  const Deadline deadline_;
  std::map<std::string, std::vector<char>> seen_;
  Check check_;
};

}  // namespace mw
