// The engine's watches: peer processes through their pidfds, and sockets
// that others (path probes) read and write, both in the engine's epoll set.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_peer_info.h"
#include "core/error.h"

namespace mw {

bool UcxEngine::watchProcess(int pid, unsigned long long start_ticks, std::function<void()> exited,
                             WatchId& id) {
  auto it = watches_.find(pid);
  if (it == watches_.end()) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return false;
    // The pid may belong to a newer process by now: only the one that
    // started at `start_ticks` is the peer.
    unsigned long long ticks = 0;
    if (!processStartTicks(pid, ticks) || ticks != start_ticks) {
      ::close(fd);
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kPidTag | static_cast<uint32_t>(pid);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      return false;
    }
    it = watches_.emplace(pid, Watch{fd, {}}).first;
  }
  id = next_watch_++;
  it->second.listeners.emplace(id, std::move(exited));
  watch_pid_[id] = pid;
  return true;
}

void UcxEngine::unwatchProcess(WatchId id) {
  auto p = watch_pid_.find(id);
  if (p == watch_pid_.end()) return;
  auto w = watches_.find(p->second);
  watch_pid_.erase(p);
  if (w == watches_.end()) return;
  w->second.listeners.erase(id);
  if (w->second.listeners.empty()) {
    ::close(w->second.pidfd);  // closing removes it from the epoll set
    watches_.erase(w);
  }
}

UcxEngine::FdWatchId UcxEngine::watchFd(int fd, uint32_t events, std::function<void(uint32_t)> ready) {
  const FdWatchId id = next_fd_watch_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = kFdTag | id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw Error(Status::Internal, std::string("UCX engine: watching an fd: ") + std::strerror(errno));
  }
  fd_watches_.emplace(id, FdWatch{fd, std::move(ready)});
  return id;
}

void UcxEngine::unwatchFd(FdWatchId id) {
  auto w = fd_watches_.find(id);
  if (w == fd_watches_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, w->second.fd, nullptr);
  fd_watches_.erase(w);
}

int UcxEngine::pidfdOf(int pid) const {
  auto w = watches_.find(pid);
  return w == watches_.end() ? -1 : w->second.pidfd;
}

bool UcxEngine::processGone(int pid) {
  auto w = watches_.find(pid);
  if (w == watches_.end()) return false;
  pollfd p{w->second.pidfd, POLLIN, 0};
  // The kernel closes a dying process's sockets before its pidfd turns
  // readable, so a peer's transport error can come first: PF_EXITING
  // (/proc/<pid>/stat field 9) is set before either.
  constexpr unsigned long kPfExiting = 0x4;
  unsigned long flags = 0;
  if (::poll(&p, 1, 0) <= 0 && processFlags(pid, flags) && !(flags & kPfExiting)) return false;
  processExited(pid);
  return true;
}

void UcxEngine::processExited(int pid) {
  auto w = watches_.find(pid);
  if (w == watches_.end()) return;
  // Everything it sent is here already: let it land before anyone hears
  // of the death.
  progress();
  w = watches_.find(pid);
  if (w == watches_.end()) return;
  std::map<WatchId, std::function<void()>> listeners = std::move(w->second.listeners);
  ::close(w->second.pidfd);
  watches_.erase(w);
  for (auto& [id, exited] : listeners) {
    watch_pid_.erase(id);
    exited();
  }
  runDeferred();
}

}  // namespace mw
