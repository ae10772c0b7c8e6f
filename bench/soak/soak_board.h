// What the soak's processes tell each other, in one shared mapping made
// before fork: the driver writes requests (churn a world, cancel a receive,
// stop), each member process writes what it saw (worlds formed, messages
// checked, breaks with their first sign and blame, notes), and the Redis
// pinger writes how quickly Redis answered. Lock-free atomics, or records
// published by a count that is stored after the record is written.
#pragma once

#include <atomic>
#include <cstdint>

namespace mwbench {
namespace soak {

constexpr int kMaxMembers = 16;
constexpr int kMaxWorlds = 32;
constexpr int kMaxBreaks = 512;  // break records per member process
constexpr int kMaxNotes = 32;    // unexpected things a member process said
constexpr int kNoteBytes = 240;
constexpr int kMaxWorldMembers = 3;  // a stream world's two, an allreduce world's three

// Where one of a member's worlds stands.
enum CellState : int {
  kAbsent = 0,   // not a world of this member
  kForming = 1,  // mw_world_create under way (or waiting to retry)
  kRunning = 2,  // traffic flows
  kEnding = 3,   // a graceful end (churn, or the end of the run) under way
  kBroken = 4,   // broken; waiting for its event, then destroyed and formed again
  kClosed = 5,   // ended for good (the run is over)
};

// A member process's view of one world, over all its incarnations.
struct Cell {
  std::atomic<int> state{kAbsent};
  std::atomic<int> incarnations{0};    // formed by this process so far
  std::atomic<int64_t> formed_ns{0};   // when the current incarnation formed
  std::atomic<int64_t> sent{0};        // messages (iterations) completed
  std::atomic<int64_t> delivered{0};   // checked messages (iterations with a correct result)
  std::atomic<int64_t> lost{0};        // a later message arrived, an earlier never did; or missing at a graceful end
  std::atomic<int64_t> duplicated{0};
  std::atomic<int64_t> reordered{0};   // arrived after a later one
  std::atomic<int64_t> corrupt{0};
  std::atomic<int64_t> broke{0};       // incarnations that ended in a break
  std::atomic<int64_t> ended{0};       // incarnations that ended gracefully
  std::atomic<int64_t> create_failures{0};
  std::atomic<int64_t> cancels_taken_back{0};  // a cancelled receive completed MW_ERR_CANCELLED
  std::atomic<int64_t> cancels_too_late{0};    // it had completed already, or completed OK
  // Driver -> member: bumped to ask; the member copies it to *_done once done.
  std::atomic<int> churn_request{0}, churn_done{0};
  std::atomic<int> cancel_request{0}, cancel_done{0};
  // A shrink fault: the survivors shrink the broken world rather than form
  // it again, then grow it back once its replacement waits.
  std::atomic<int> shrink_request{0}, shrink_done{0};
  std::atomic<int> grow_request{0}, grow_done{0};
  // Driver -> a replacement: hold off forming the world (1) until the
  // survivors shrank it; then join their grow as its newcomer (joins = 1),
  // its ranks' members being `order` (the last: this member).
  std::atomic<int> hold{0}, joins{0};
  // The member id of each rank of the current incarnation (written by the
  // member; set by the driver for a newcomer), kMaxWorldMembers at most.
  std::atomic<int> order[kMaxWorldMembers] = {};
  std::atomic<int> order_size{0};
};

// A break as one member saw it.
struct BreakRecord {
  int world;            // topology index
  int incarnation;      // this process's count
  int64_t formed_ns;    // when that incarnation formed
  int64_t seen_ns;      // first sign: a request failing or the event
  int blamed;           // member id the event named, -1 unknown
  int has_event;        // 0: no MW_EVENT_WORLD_BROKEN came within the wait
  int during_end;       // 1: broke during a graceful end, before it was done
  char detail[200];
};

struct MemberSlot {
  std::atomic<int> generation{0};  // which process of this slot (the driver bumps it)
  std::atomic<int> ready{0};       // the context is made
  std::atomic<int> exiting{0};     // left its loop at the end of the run
  Cell cells[kMaxWorlds];
  std::atomic<int> n_breaks{0};
  BreakRecord breaks[kMaxBreaks];
  std::atomic<int> n_notes{0};
  char notes[kMaxNotes][kNoteBytes];
  std::atomic<int64_t> path_down{0}, path_up{0}, store_down{0}, store_up{0};
};

// The Redis pinger's findings, outside the moments the driver pauses or
// fails Redis on purpose.
struct PingBoard {
  std::atomic<int> quiet{0};  // set by the driver: a Redis fault is under way, not measured
  std::atomic<int> stop{0};
  std::atomic<int64_t> pings{0};
  std::atomic<int64_t> failures{0};
  std::atomic<int64_t> slow{0};       // answered later than the limit
  std::atomic<int64_t> worst_us{0};
  std::atomic<int64_t> worst_at_ns{0};
};

struct Board {
  std::atomic<int> stop{0};  // the run is over: end every world gracefully and exit
  MemberSlot members[kMaxMembers];
  PingBoard ping;
};

}  // namespace soak
}  // namespace mwbench
