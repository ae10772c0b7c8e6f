// Where things live in Redis. World names are wrapped in braces, which names
// cannot contain, so "a:1" and world "a" epoch 1 never collide (and every key
// of a world shares one Redis Cluster hash slot).
#pragma once

#include <cstdint>
#include <string>

namespace mw {

class Keys {
 public:
  explicit Keys(std::string ns) : ns_(std::move(ns)) {}

  const std::string& ns() const { return ns_; }
  std::string heartbeatPrefix() const { return ns_ + ":hb:"; }
  std::string heartbeat(const std::string& member) const { return heartbeatPrefix() + member; }
  // What a member's data paths are and which it sees down (`multiworld
  // status`), next to its heartbeat.
  std::string paths(const std::string& member) const { return ns_ + ":paths:" + member; }
  // Its metrics snapshot (core/metrics/wire.h), for `multiworld metrics`.
  std::string metrics(const std::string& member) const { return ns_ + ":metrics:" + member; }
  std::string worldMeta(const std::string& world) const { return ns_ + ":world:{" + world + "}"; }
  // Keys of one incarnation are worldEpochBase(world) + epoch + ":" + suffix.
  std::string worldEpochBase(const std::string& world) const { return worldMeta(world) + ":"; }
  std::string worldEpoch(const std::string& world, uint64_t epoch, const std::string& suffix) const {
    return worldEpochBase(world) + std::to_string(epoch) + ":" + suffix;
  }
  std::string eventsChannel() const { return ns_ + ":events"; }

 private:
  std::string ns_;
};

}  // namespace mw
