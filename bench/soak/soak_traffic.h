// The checked traffic of one world in a soak member: one incarnation at a
// time, driven by the member's loop (non-blocking: tick posts what is due,
// complete handles one completion). Counts go to the world's Cell on the
// board; anything unexpected is said through Notes.
#pragma once

#include <multiworld/multiworld.h>

#include <cstdint>
#include <memory>

#include "bench/soak/soak_board.h"
#include "bench/soak/soak_topology.h"

namespace mwbench {
namespace soak {

// A member process's notes on the board (thread-safe).
class Notes {
 public:
  virtual ~Notes() = default;
  virtual void note(const char* fmt, ...) __attribute__((format(printf, 2, 3))) = 0;
};

// user_data of a request: the world's index in the high 32 bits, the
// traffic's own token below.
inline uint64_t userData(int world, uint32_t token) { return static_cast<uint64_t>(world) << 32 | token; }
inline int worldOfUserData(uint64_t ud) { return static_cast<int>(ud >> 32); }

class WorldTraffic {
 public:
  virtual ~WorldTraffic() = default;
  // A new incarnation: forget the last one's state and post what starts it.
  virtual void start(mw_world_t* w, int64_t now_ns) = 0;
  // Posts what is due by now (nothing once broken or done).
  virtual void tick(int64_t now_ns) = 0;
  // One completion of this traffic's requests; frees the request.
  virtual void complete(const mw_completion_t& c, int64_t now_ns) = 0;
  // A graceful end: the last message (the vote to stop) goes out.
  virtual void beginEnd() = 0;
  // A peer began an end (its last message, or its vote, came in).
  virtual bool peerEnding() const = 0;
  // The end is complete on this side: any break from now on is a peer
  // leaving.
  virtual bool done() const = 0;
  // When a request first failed with MW_ERR_WORLD_BROKEN, 0 = never.
  virtual int64_t brokenNs() const = 0;
  // Cancels the newest pending receive; false when there is none.
  virtual bool cancelNewestReceive() { return false; }
  // The incarnation broke: counts what it shows as lost for good.
  virtual void afterBreak() {}
  // After mw_world_destroy: frees the requests still outstanding.
  virtual void releaseAfterDestroy() = 0;
  // The least time until tick has something to post, in ns (large when
  // nothing is due).
  virtual int64_t nextDueNs() const = 0;
};

// soak_stream.cc and soak_allreduce.cc.
std::unique_ptr<WorldTraffic> makeStream(const WorldSpec& spec, int world_index, int member, Cell& cell,
                                         Notes& notes);
std::unique_ptr<WorldTraffic> makeAllreduce(const WorldSpec& spec, int world_index, int member, Cell& cell,
                                            Notes& notes);

inline std::unique_ptr<WorldTraffic> makeTraffic(const WorldSpec& spec, int world_index, int member, Cell& cell,
                                                 Notes& notes) {
  return spec.allreduce ? makeAllreduce(spec, world_index, member, cell, notes)
                        : makeStream(spec, world_index, member, cell, notes);
}

}  // namespace soak
}  // namespace mwbench
