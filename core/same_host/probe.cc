#include "core/same_host/probe.h"

#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace mw::samehost {
namespace {

std::atomic<uint64_t> probe_word{0};

uint64_t randomNonZero() {
  uint64_t v = 0;
  while (v == 0) {
    if (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
      v = reinterpret_cast<uint64_t>(&v) ^ static_cast<uint64_t>(getpid()) << 20 ^ 0x9e3779b97f4a7c15ull;
    }
  }
  return v;
}

}  // namespace

const Identity& self() {
  static const Identity id = [] {
    Identity i;
    char ns[128] = {0};
    const ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
    if (n > 0) i.net_namespace.assign(ns, static_cast<size_t>(n));
    probe_word.store(randomNonZero());
    i.probe_address = reinterpret_cast<uint64_t>(&probe_word);
    i.probe_value = probe_word.load();
    return i;
  }();
  return id;
}

std::string probeReadable(int pid, uint64_t address, uint64_t value) {
  uint64_t word = 0;
  iovec to{&word, sizeof word};
  iovec from{reinterpret_cast<void*>(address), sizeof word};
  const ssize_t n = process_vm_readv(pid, &to, 1, &from, 1, 0);
  if (n < 0) {
    const int e = errno;
    std::string why = std::string("process_vm_readv of pid ") + std::to_string(pid) + " failed: " + strerror(e);
    if (e == EPERM) why += " (Yama ptrace_scope, a missing CAP_SYS_PTRACE, or seccomp)";
    return why;
  }
  if (n != static_cast<ssize_t>(sizeof word) || word != value) {
    return "pid " + std::to_string(pid) + " is not the process that published it (another pid namespace?)";
  }
  return "";
}

std::string probeTakesFds(int pid, int pidfd) {
  // The kernel checks the caller's access before it looks the descriptor
  // up: a number no process holds says EBADF when access is granted.
  constexpr int kNoSuchFd = 0x7ffffff0;
  const long fd = syscall(SYS_pidfd_getfd, pidfd, kNoSuchFd, 0);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    return "";
  }
  const int e = errno;
  if (e == EBADF) return "";
  std::string why = std::string("pidfd_getfd of pid ") + std::to_string(pid) + " failed: " + strerror(e);
  if (e == EPERM) why += " (Yama ptrace_scope, a missing CAP_SYS_PTRACE, or seccomp)";
  return why;
}

}  // namespace mw::samehost
