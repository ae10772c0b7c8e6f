// Sources of messages beside the UCX workers (the same-host rings): polled
// in every progress call, armed before the owner sleeps, their eventfds in
// both sleep sets (mw-ucx's and an owning waiter's). See ucx_engine.h.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/backends/ucx/ucx_engine.h"
#include "core/error.h"

namespace mw {

UcxEngine::SourceId UcxEngine::addSource(Source source) {
  std::lock_guard<std::mutex> l(mask_m_);
  for (size_t i = 0; i < source.fds.size(); ++i) {
    const int fd = source.fds[i];
    epoll_event ev{};
    ev.data.u64 = kSourceTag | static_cast<uint32_t>(fd);
    ev.events = EPOLLIN;
    const bool sleep_set = epoll_ctl(sleep_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
    ev.events = masked_ ? 0u : static_cast<uint32_t>(EPOLLIN);
    if (!sleep_set || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      const int e = errno;
      for (size_t j = 0; j <= i; ++j) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, source.fds[j], nullptr);
        epoll_ctl(sleep_fd_, EPOLL_CTL_DEL, source.fds[j], nullptr);
      }
      for (size_t j = 0; j < i; ++j) source_fds_.pop_back();
      throw Error(Status::Internal, std::string("UCX engine: watching a same-host ring's eventfd: ") + std::strerror(e));
    }
    source_fds_.push_back(fd);
  }
  const SourceId id = next_source_++;
  if (source.peer_pid > 0 && source_pids_[source.peer_pid]++ == 0) {
    crowded_.store(source_pids_.size() + 1 > cpus_, std::memory_order_relaxed);
  }
  sources_.emplace(id, std::move(source));
  kick();  // mw-ucx may sleep without having asked this source for a wake
  return id;
}

void UcxEngine::removeSource(SourceId id) {
  auto it = sources_.find(id);
  if (it == sources_.end()) return;
  if (auto pid = source_pids_.find(it->second.peer_pid); pid != source_pids_.end() && --pid->second == 0) {
    source_pids_.erase(pid);
    crowded_.store(source_pids_.size() + 1 > cpus_, std::memory_order_relaxed);
  }
  {
    std::lock_guard<std::mutex> l(mask_m_);
    for (int fd : it->second.fds) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      epoll_ctl(sleep_fd_, EPOLL_CTL_DEL, fd, nullptr);
      source_fds_.erase(std::find(source_fds_.begin(), source_fds_.end(), fd));
    }
  }
  if (polling_sources_) {
    // A poll that removes its own source (its world broke) still runs.
    removed_sources_.push_back(id);
    it->second.fds.clear();
    return;
  }
  sources_.erase(it);
}

bool UcxEngine::pollSources() {
  if (sources_.empty()) return false;
  bool any = false;
  polling_sources_ = true;
  for (auto it = sources_.begin(); it != sources_.end(); ++it) {
    if (std::find(removed_sources_.begin(), removed_sources_.end(), it->first) != removed_sources_.end()) continue;
    any = it->second.poll() || any;
  }
  polling_sources_ = false;
  for (SourceId id : removed_sources_) sources_.erase(id);
  removed_sources_.clear();
  return any;
}

bool UcxEngine::armSources() {
  for (auto& [id, source] : sources_) {
    if (!source.arm()) return false;
  }
  return true;
}

void UcxEngine::disarmSources() {
  for (auto& [id, source] : sources_) source.disarm();
}

void UcxEngine::drainSourceFd(uint64_t tag) {
  uint64_t v;
  ssize_t n = ::read(static_cast<int>(tag & 0xffffffffull), &v, sizeof v);
  (void)n;  // EAGAIN: another wake read it first
}

}  // namespace mw
