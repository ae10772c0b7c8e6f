// The checks every checked traffic of the lab makes on what it receives,
// so that the failover tests, the failover benchmark and the soak judge
// alike: the pattern a message's words carry, the order of a stream's
// sequence numbers, and the parts of a checked allreduce's sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

namespace mwlab {

// Word i of message `seq` from the sender keyed `key` (its rank, or a
// world and a member): a mix of the three, so a word of any other message
// or place differs.
inline uint32_t patternWord(uint64_t key, uint64_t seq, size_t i) {
  uint64_t x = (key << 48) ^ (seq << 16) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// A stream's sequence numbers as they arrive (0, 1, 2, ...): each exactly
// once, in order.
class SequenceCheck {
 public:
  enum Verdict { InOrder, Early, Again };
  // Early: a later one came before an earlier one (held until the gap
  // fills); Again: one that came before.
  Verdict add(uint64_t seq) {
    if (seq < expected_ || ahead_.count(seq)) return Again;
    if (seq > expected_) {
      ahead_.insert(seq);
      return Early;
    }
    ++expected_;
    while (!ahead_.empty() && *ahead_.begin() == expected_) {
      ahead_.erase(ahead_.begin());
      ++expected_;
    }
    return InOrder;
  }
  uint64_t expected() const { return expected_; }
  // How many distinct ones came.
  uint64_t distinct() const { return expected_ + ahead_.size(); }
  // The ones missing below the latest that came: lost, if nothing more
  // can come.
  uint64_t holes() const { return ahead_.empty() ? 0 : *ahead_.rbegin() + 1 - distinct(); }
  void reset() {
    expected_ = 0;
    ahead_.clear();
  }

 private:
  uint64_t expected_ = 0;
  std::set<uint64_t> ahead_;  // came beyond a gap
};

// A checked uint64 SUM allreduce over at most 3 ranks: each rank's part
// sits in a 20-bit field of its own, so every result shows whether a
// member's part is missing, doubled or from another iteration.
constexpr int kSumFieldBits = 20;
constexpr int kSumMaxRanks = 64 / kSumFieldBits;

// Element i's part at `iteration`, before the shift into the rank's field.
inline uint64_t sumPart(uint64_t iteration, size_t i) { return ((iteration % 1024) << 3 | (i % 7)) + 1; }
inline uint64_t sumInput(uint64_t iteration, size_t i, int rank) { return sumPart(iteration, i) << (kSumFieldBits * rank); }

struct SumVerdict {
  bool lost = false, doubled = false, other_iteration = false, corrupt = false;
  bool ok() const { return !(lost || doubled || other_iteration || corrupt); }
};

// Judges elements [0, n) of an allreduce result of `size` ranks.
inline SumVerdict judgeSum(const uint64_t* out, size_t n, uint64_t iteration, int size) {
  constexpr uint64_t kMask = (1ULL << kSumFieldBits) - 1;
  SumVerdict v;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t want = sumPart(iteration, i);
    for (int r = 0; r < size; ++r) {
      const uint64_t f = (out[i] >> (kSumFieldBits * r)) & kMask;
      if (f == want) continue;
      if (f == 0) {
        v.lost = true;
      } else if (f % want == 0) {
        v.doubled = true;
      } else if (((f - 1) & 7) == i % 7) {
        v.other_iteration = true;
      } else {
        v.corrupt = true;
      }
    }
  }
  return v;
}

}  // namespace mwlab
