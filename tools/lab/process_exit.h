// Waiting for a process of this host to exit, on its pidfd: a bounded wait
// with no waitpid polling loop. Reaping stays the caller's.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace mwlab {

enum class ExitWait {
  Exited,       // it has exited (a child of ours may still need reaping)
  TimedOut,     // still running after `timeout`
  Unwatchable,  // no pidfd for it: no such process, or no pidfd_open here
};

ExitWait waitForExit(pid_t pid, std::chrono::milliseconds timeout);

}  // namespace mwlab
