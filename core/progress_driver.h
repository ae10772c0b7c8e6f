// A progress engine that a waiting thread may drive itself, for a bounded
// spin, before it sleeps (spin_us): the hybrid wait of MPI and UCX.
#pragma once

#include <chrono>
#include <functional>

namespace mw {

class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // Drives progress on the calling thread until `done()` holds, the spin
  // ran out or `deadline` passed; true when done() held. It may sleep on
  // the engine's own fds for a bounded time, never past `deadline`.
  virtual bool spinUntil(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) = 0;
};

}  // namespace mw
