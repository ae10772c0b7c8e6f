// The key-value store every backend forms its transport over: values under
// one world incarnation's prefix in Redis, written once by their owner and
// read by the other members. Waiting blocks on a per-key signal list
// (core/store/redis_signal.h) that set() gives one token, whatever the
// world's size, so nothing polls; the incarnation watches each wait
// (core/store/incarnation.h), so a member that gives up on it, or a newer
// epoch of the world, ends the wait at once. Gloo sees it through its own
// Store interface (core/backends/gloo/gloo_store.h); UCX and NCCL use it as
// is.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/store/incarnation.h"
#include "core/store/redis_pool.h"

namespace mw {

class KvStore {
 public:
  // Keys live under incarnation.key(tag); `incarnation` outlives this.
  KvStore(RedisPool& pool, const Incarnation& incarnation, std::string tag, Deadline deadline)
      : pool_(pool), incarnation_(incarnation), tag_(std::move(tag)), prefix_(incarnation.key(tag_)),
        deadline_(deadline) {}

  // Checks every value get() reads: "" accepts it, anything else is why
  // not, and get() throws Error(Store) naming the key.
  using Check = std::function<std::string(const std::string& key, const std::vector<char>& value)>;
  void checkValuesWith(Check check) { check_ = std::move(check); }

  // Where the keys live, for messages.
  const std::string& prefix() const { return prefix_; }

  // Throws Error(Store) when Redis refuses or is unreachable.
  void set(const std::string& key, const std::vector<char>& data);
  // Waits for the value until the deadline given at construction (whatever
  // a caller asks for): Error(Timeout) then, Error(Store) for a value the
  // check refuses or a signal without a value, and what
  // Incarnation::ended() throws when the incarnation ends meanwhile.
  std::vector<char> get(const std::string& key);
  // Reads every one of `keys` that is there already in one round trip
  // (MGET), checked as get() checks it, so that get() returns those at
  // once and waits only for the rest. Throws Error(Store) as get() does.
  void prefetch(const std::vector<std::string>& keys);

 private:
  RedisPool& pool_;
  const Incarnation& incarnation_;
  const std::string tag_;
  const std::string prefix_;
  const Deadline deadline_;
  std::map<std::string, std::vector<char>> seen_;
  Check check_;
};

}  // namespace mw
