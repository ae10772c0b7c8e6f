// Whether a path reaches a peer, asked without UCX. UCX 1.13's TCP
// transport connects a new endpoint with a blocking connect(): on a cut
// link that holds the engine, and every world of the context, for seconds.
// So a path that is down, or not yet known to work, is first tried with a
// plain non-blocking TCP connection to a port the peer's context listens on
// for exactly this, one per path (UcxPathListeners); only once that
// connection is made does the path get a UCX endpoint.
//
// On the engine's owner, like everything UCX here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/backends/ucx/ucx_engine.h"

namespace mw {

// A listening socket on each of this context's path addresses: accepts
// and closes at once.
class UcxPathListeners {
 public:
  // Throws Error(Backend) naming the address that cannot be listened on.
  UcxPathListeners(UcxEngine& engine, const std::vector<std::string>& addresses);
  ~UcxPathListeners();
  UcxPathListeners(const UcxPathListeners&) = delete;
  UcxPathListeners& operator=(const UcxPathListeners&) = delete;

  uint16_t port(size_t path) const { return listeners_[path].port; }

 private:
  struct Listener {
    int fd = -1;
    uint16_t port = 0;
    UcxEngine::FdWatchId watch = 0;
  };
  void closeAll();

  UcxEngine& engine_;
  std::vector<Listener> listeners_;
};

// One attempt to reach `address`:`port`. `done(true)` once the connection
// is made, `done(false)` once it is refused or fails; never when destroyed
// first (an attempt that stays unanswered is given up by destroying it).
class UcxReachProbe {
 public:
  UcxReachProbe(UcxEngine& engine, const std::string& address, uint16_t port, std::function<void(bool)> done);
  ~UcxReachProbe();
  UcxReachProbe(const UcxReachProbe&) = delete;
  UcxReachProbe& operator=(const UcxReachProbe&) = delete;

  bool pending() const { return fd_ >= 0; }

 private:
  void finish(bool reached);

  UcxEngine& engine_;
  int fd_ = -1;
  UcxEngine::FdWatchId watch_ = 0;
  std::function<void(bool)> done_;
};

}  // namespace mw
