// How an incarnation of a world came about, as its record in Redis says:
// formed by its members' creates, shrunk from an earlier epoch (whom it
// excluded) or grown from one. `multiworld status` shows it; a newcomer of
// a grow learns from it that it joins a running world.
#pragma once

#include <cstdint>
#include <string>

namespace mw {

struct Lineage {
  enum class How { Formed, Shrunk, Grown };
  How how = How::Formed;
  uint64_t from = 0;     // the epoch it was shrunk or grown from
  int old_size = 0;      // that epoch's size
  std::string excluded;  // a shrink's excluded ranks of that epoch, "1,3"
};

inline const char* lineageName(Lineage::How how) {
  return how == Lineage::How::Shrunk ? "shrunk" : how == Lineage::How::Grown ? "grown" : "formed";
}

}  // namespace mw
