// A progress engine that a waiting thread may drive itself, for a bounded
// spin, before it sleeps (spin_us): the hybrid wait of MPI and UCX.
#pragma once

#include <functional>

namespace mw {

class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // Drives progress on the calling thread until `done()` holds or the spin
  // ran out; true when done() held. Never blocks.
  virtual bool spinUntil(const std::function<bool()>& done) = 0;
};

}  // namespace mw
