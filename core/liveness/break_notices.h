// The break notices this process owes the other members, and what each
// leaves in Redis: a durable marker under the incarnation's "broken" key
// (for members cut off from pub/sub right now), the world's meta record
// marked broken (for `multiworld status`), then a message on the
// namespace's events channel. Every rank a break names (and every member
// that leaves) joins the incarnation's "blamed" set: what a shrink with no
// list of its own excludes. A member that leaves a healthy incarnation
// records only that, in the meta record; one that gives up on an
// incarnation still forming also fails the rendezvous' commit
// (core/store/rendezvous.h) for the others.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "core/store/keys.h"
#include "core/store/redis_connection.h"

namespace mw {

struct Notice {
  std::string world;
  uint64_t epoch = 0;
  int detector = 0;  // this member's rank
  int peer = -1;     // the rank blamed, -1 if unknown
  std::string detail;
  bool left = false;  // the member left a healthy incarnation: meta state only
  // The member gave up on an incarnation it joined before it formed: the
  // break also wakes the members still forming it (at most `size` waits,
  // core/store/incarnation.h), after it is marked broken.
  bool gave_up = false;
  int size = 0;
  // A member of a shrink's or grow's attempt (of epoch `blame_epoch`)
  // was lost while it formed: the old epoch records `blame_rank` (its
  // rank there, -1 for a newcomer) among the ranks its break named, so
  // that the next attempt excludes it too. Nothing else happens once the
  // attempt formed.
  uint64_t blame_epoch = 0;
  int blame_rank = -1;
};

class NoticeQueue {
 public:
  // From any thread. Keeps the newest notices when too many wait.
  void push(Notice n);

  // Sends everything queued in one pipeline on `conn`. When the
  // connection fails, every notice stays queued, in order, for the next
  // connection, and the error is rethrown.
  void deliver(RedisConnection& conn, const Keys& keys, std::chrono::milliseconds marker_ttl);

 private:
  std::mutex m_;
  std::deque<Notice> queue_;
};

}  // namespace mw
