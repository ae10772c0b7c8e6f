// Threads the library starts must not die of SIGPIPE: Gloo writes to peer
// sockets with plain write(2), and a program may keep SIGPIPE's default
// action or (like the Go runtime) re-raise it when it lands on a thread it
// does not own. A thread started while this guard lives inherits a mask
// with SIGPIPE blocked, so its writes to a dead peer just fail with EPIPE.
#pragma once

#include <signal.h>

namespace mw {

class SigpipeBlockedForNewThreads {
 public:
  SigpipeBlockedForNewThreads() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &saved_);
  }
  ~SigpipeBlockedForNewThreads() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SigpipeBlockedForNewThreads(const SigpipeBlockedForNewThreads&) = delete;
  SigpipeBlockedForNewThreads& operator=(const SigpipeBlockedForNewThreads&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace mw
