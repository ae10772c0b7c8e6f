// One incarnation (epoch) of a world while a member forms it, as its waits
// see it. Every wait of a formation (the commit, and each wait of the
// transport exchange) blocks on a signal list; whoever ends the
// incarnation first (a member that gives up on it, or a join that starts
// the next epoch) pushes an "err:" token onto every list a member
// registered (core/store/incarnation_scripts.h). So no member waits out its
// timeout for an incarnation that can no longer form; it learns why from
// the world's record in Redis.
#pragma once

#include <cstdint>
#include <string>

#include "core/deadline.h"
#include "core/error.h"
#include "core/store/keys.h"
#include "core/store/lineage.h"
#include "core/store/redis_connection.h"

namespace mw {

// The world moved on to a newer incarnation while this member formed one
// (a member that lost its place in it, as in a failover, started anew): the
// member may join that one within the same create. MW_ERR_STORE when it
// reaches the caller, saying so.
class MovedOn : public Error {
 public:
  explicit MovedOn(const std::string& message) : Error(Status::Store, message) {}
};

class Incarnation {
 public:
  // `keys` outlives this.
  Incarnation(const Keys& keys, std::string world, uint64_t epoch, int size, Lineage lineage = {})
      : keys_(keys), world_(std::move(world)), epoch_(epoch), size_(size), lineage_(std::move(lineage)) {}

  const std::string& world() const { return world_; }
  uint64_t epoch() const { return epoch_; }
  int size() const { return size_; }
  // Shrunk or grown from an earlier epoch, or formed.
  const Lineage& lineage() const { return lineage_; }
  const Keys& keys() const { return keys_; }
  // The Redis key `suffix` of this incarnation.
  std::string key(const std::string& suffix) const { return keys_.worldEpoch(world_, epoch_, suffix); }
  // "world 'w' epoch e", for messages.
  std::string where() const;

  // Before blocking on signal list key(suffix): checks that this is still
  // the world's current, ready incarnation, and registers the list to be
  // woken when it ends, in one atomic step. Throws what ended() throws
  // when it is not, or Error(Store) when Redis refuses.
  void watch(RedisConnection& conn, const std::string& suffix, Deadline deadline) const;

  // After a wait was woken by a token other than the one it waited for
  // (`why`, its text): throws what ended the incarnation: MovedOn (a newer
  // epoch started), Error(WorldBroken) (a member gave up: its reason),
  // Error(Store) (the incarnation is gone from Redis, as after a failover
  // that lost it). Also WorldBroken, saying `why`, when Redis still shows
  // the incarnation ready.
  [[noreturn]] void ended(RedisConnection& conn, const std::string& why) const;

 private:
  const Keys& keys_;
  const std::string world_;
  const uint64_t epoch_;
  const int size_;
  const Lineage lineage_;
};

}  // namespace mw
