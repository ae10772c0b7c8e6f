// Which chunks of one striped message have arrived (stripe_plan.h).
//
// A chunk is written straight into the posted receive at its offset, so
// the message is whole when its chunks cover it, with no reassembly copy.
// Chunks come over different paths in any order, and again after a path
// went down (its unacknowledged chunks are sent again elsewhere, with the
// same edges): a chunk already in is a duplicate, which the caller drops.
// A chunk that overlaps others without matching one, or falls outside the
// message, can only come from a broken or hostile sender: refused, and
// nothing changes.
//
// Pure: no transport. Owned by one thread; nothing here locks.
#pragma once

#include <cstddef>
#include <map>

namespace mw {

class ChunkAssembly {
 public:
  enum class Take { New, Duplicate, Refused };

  explicit ChunkAssembly(size_t total) : total_(total) {}

  // Records the chunk [offset, offset + bytes) when it is new.
  Take take(size_t offset, size_t bytes);
  bool complete() const { return have_ == total_ && !chunks_.empty(); }
  size_t total() const { return total_; }
  size_t received() const { return have_; }
  size_t chunks() const { return chunks_.size(); }

 private:
  const size_t total_;
  size_t have_ = 0;
  std::map<size_t, size_t> chunks_;  // offset -> bytes
};

}  // namespace mw
