#include "tools/lab/process_exit.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace mwlab {

ExitWait waitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return ExitWait::Unwatchable;
  pollfd p{fd, POLLIN, 0};
  const int n = poll(&p, 1, static_cast<int>(std::max<long long>(0, timeout.count())));
  close(fd);
  return n == 1 ? ExitWait::Exited : ExitWait::TimedOut;
}

}  // namespace mwlab
