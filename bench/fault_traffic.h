// Checked, continuous two-way traffic on a two-rank world for the faults
// suite (after tests/support/traffic.cc, rewritten here so that the bench
// does not link the tests' support library): each side keeps `window` sends
// and `window` receives outstanding, every received message is checked word
// for word, and what a process sees (messages received, the moment it first
// saw the world break) is published in shared memory for the parent.
#pragma once

#include <multiworld/multiworld.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/lab/clock.h"

namespace mwbench {

// The lab's clock: one for every process of the run.
using mwlab::monotonicNs;

// What one process publishes about one of its worlds. Lives in shared
// memory (lock-free atomics only).
struct LaneStats {
  std::atomic<int64_t> received{0};      // checked messages from the peer
  std::atomic<int64_t> broken_at_ns{0};  // CLOCK_MONOTONIC of the first sign of a break, 0 = none
  std::atomic<int> broken_by{0};         // kByRequest or kByEvent: which sign came first
  std::atomic<int> blamed{-2};           // peer_rank of the break event, -2 = no event yet
  std::atomic<int> corrupt{0};           // messages that failed the check
  std::atomic<int> errors{0};            // statuses other than OK, WORLD_BROKEN, CANCELLED

  static constexpr int kByRequest = 1;
  static constexpr int kByEvent = 2;

  // Only while nobody else writes it.
  void reset();
  // Records the first sign of a break (later ones are ignored); true when
  // this call was the first.
  bool markBroken(int by);
  void noteBlamed(int peer_rank);
};

// A context with these settings (redis_url, namespace, bind_address, ...);
// NULL, with the reason on stderr, when that fails.
mw_context_t* newBenchContext(const std::vector<std::pair<std::string, std::string>>& settings);

// The traffic of this process on one two-rank world. The world stays owned
// by the caller, who must destroy it (which cancels what is still pending)
// before releaseAfterDestroy() and before the Lane goes away: the pending
// requests point into the Lane's buffers.
class Lane {
 public:
  // `tag` (1..2^31) tells this lane's completions from others' on the same
  // context; `world_id` and `rank` go into the checked pattern.
  Lane(mw_world_t* world, uint32_t tag, int world_id, int rank, std::size_t message_bytes, std::size_t window,
       LaneStats& stats);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Posts the receives and the sends of the window.
  void start();
  // The tag a completion's user_data belongs to.
  static uint32_t tagOf(uint64_t user_data) { return static_cast<uint32_t>(user_data >> 32); }
  uint32_t tag() const { return tag_; }
  // Handles (and frees) one completion of this lane: checks a received
  // message and reposts, or records the break.
  void complete(const mw_completion_t& c);
  // Broken as far as this process knows (a failed request, or an event
  // recorded in the stats by whoever reads the events).
  bool broken() const;
  // After the world was destroyed: frees the requests still outstanding.
  void releaseAfterDestroy();

 private:
  struct Slot {
    std::vector<uint32_t> buf;
    mw_request_t* req = nullptr;
    int64_t seq = -1;
  };
  void postSend(std::size_t i);
  void postRecv(std::size_t i);
  void failedPost(mw_status_t s, const char* what);

  mw_world_t* world_;
  uint32_t tag_;
  int world_id_, rank_;
  LaneStats& stats_;
  bool broken_ = false;
  std::vector<Slot> sends_, recvs_;
  int64_t next_send_ = 0, next_recv_ = 0;
};

}  // namespace mwbench
