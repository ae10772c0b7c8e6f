#include "core/backends/ucx/rails/ucx_path_probe.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mw {
namespace {

bool resolve(const std::string& address, uint16_t port, sockaddr_storage& out, socklen_t& len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return false;
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  len = found->ai_addrlen;
  freeaddrinfo(found);
  return true;
}

}  // namespace

UcxPathListeners::UcxPathListeners(UcxEngine& engine, const std::vector<std::string>& addresses)
    : engine_(engine) {
  for (const auto& address : addresses) {
    Listener l;
    sockaddr_storage sa{};
    socklen_t len = 0;
    if (!resolve(address, 0, sa, len)) {
      throw Error(Status::Backend, "path address '" + address + "' does not resolve");
    }
    l.fd = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l.fd < 0 || ::bind(l.fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(l.fd, 64) != 0 ||
        ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      const std::string why = std::strerror(errno);
      if (l.fd >= 0) ::close(l.fd);
      closeAll();
      throw Error(Status::Backend, "cannot listen for path probes on " + address + ": " + why);
    }
    l.port = ntohs(sa.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&sa)->sin_port
                                           : reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port);
    const int fd = l.fd;
    try {
      l.watch = engine_.watchFd(fd, EPOLLIN, [fd](uint32_t) {
        // The connection is the answer: nothing is read or written.
        for (int c; (c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) ::close(c);
      });
    } catch (...) {
      ::close(fd);
      closeAll();
      throw;
    }
    listeners_.push_back(l);
  }
}

UcxPathListeners::~UcxPathListeners() { closeAll(); }

void UcxPathListeners::closeAll() {
  for (Listener& l : listeners_) {
    engine_.unwatchFd(l.watch);
    ::close(l.fd);
  }
  listeners_.clear();
}

UcxReachProbe::UcxReachProbe(UcxEngine& engine, const std::string& address, uint16_t port,
                             std::function<void(bool)> done)
    : engine_(engine), done_(std::move(done)) {
  sockaddr_storage sa{};
  socklen_t len = 0;
  if (!resolve(address, port, sa, len)) return;  // stays unanswered
  fd_ = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 && errno != EINPROGRESS) {
    ::close(fd_);
    fd_ = -1;
    return;  // unreachable at once (no route): the next attempt asks again
  }
  watch_ = engine_.watchFd(fd_, EPOLLOUT, [this](uint32_t) {
    int err = 0;
    socklen_t n = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &n);
    finish(err == 0);
  });
}

UcxReachProbe::~UcxReachProbe() {
  if (fd_ < 0) return;
  engine_.unwatchFd(watch_);
  ::close(fd_);
}

void UcxReachProbe::finish(bool reached) {
  engine_.unwatchFd(watch_);
  ::close(fd_);
  fd_ = -1;
  auto done = std::move(done_);
  done(reached);  // may destroy this
}

}  // namespace mw
