// Forming one incarnation (epoch) of a world over Redis: every rank claims
// its place, the last claim releases everyone, and a size mismatch poisons
// the forming epoch so no member waits for a world that cannot form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/store/incarnation.h"
#include "core/store/keys.h"
#include "core/store/lineage.h"
#include "core/store/redis_pool.h"

namespace mw {

struct Formation {
  uint64_t epoch = 0;
  std::vector<std::string> members;  // member id of each rank
  Lineage lineage;                   // a shrink's or grow's epoch says so
};

class Rendezvous {
 public:
  Rendezvous(RedisPool& pool, const Keys& keys, std::string member_id)
      : pool_(pool), keys_(keys), member_(std::move(member_id)) {}

  // Throws Error: InvalidArgument (sizes disagree), AlreadyExists (rank held
  // by a live member), Timeout, Store (Redis unreachable, or a value under
  // the world's keys that is not the library's, naming the key). The work
  // it does in Redis is bounded by `size`, whatever Redis holds.
  Formation join(const std::string& world, int rank, int size, Deadline deadline);

  // After this member claimed `rank` of `epoch` (of `size` members): waits
  // for every rank's claim and reads the formation, with its lineage.
  // Throws as join() does, and Error(WorldBroken) when a member gave up on
  // the epoch, or died, while it formed.
  Formation awaitClaims(RedisConnection& conn, const std::string& world, uint64_t epoch, int rank, int size,
                        Deadline deadline);

  // Once this member's transport is up: the world is formed when every
  // member has committed, so no member returns a world that another gave
  // up on. Throws Error: Store (the incarnation is gone from Redis, as
  // after a failover that lost it), WorldBroken (a member gave up before
  // it formed: its reason), Timeout; MovedOn (core/store/incarnation.h)
  // when a newer epoch of the world started meanwhile.
  void commit(const Incarnation& inc, int rank, Deadline deadline);

  const std::string& member() const { return member_; }
  RedisPool& pool() { return pool_; }
  const Keys& keys() const { return keys_; }

  // Withdraws a claim after a failed join; best effort.
  void leave(const std::string& world, uint64_t epoch, int rank) noexcept;

 private:
  RedisPool& pool_;
  const Keys& keys_;
  const std::string member_;

};

}  // namespace mw
