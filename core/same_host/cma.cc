#include "core/same_host/cma.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace mw::samehost {
namespace {

uint64_t randomSeed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof seed)) {
    seed = reinterpret_cast<uint64_t>(&seed) ^ static_cast<uint64_t>(getpid()) << 32;
  }
  return seed;
}

// Copies [remote, remote + bytes) of `pid` to `local`; 0 or the errno.
// EFAULT also stands for a copy that stopped short.
int readFrom(int pid, void* local, uint64_t remote, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    iovec to{static_cast<char*>(local) + done, bytes - done};
    iovec from{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = process_vm_readv(pid, &to, 1, &from, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EFAULT;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

uint64_t CmaTicket::issue() {
  static std::atomic<uint64_t> next{randomSeed()};
  uint64_t v;
  do {
    v = next.fetch_add(1, std::memory_order_relaxed);
  } while (v == 0);
  word_.store(v, std::memory_order_seq_cst);
  return v;
}

void CmaTicket::withdraw() {
  word_.store(0, std::memory_order_seq_cst);
  // The caller's later writes to the buffer stay behind this store.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

CmaResult cmaRead(int pid, int pidfd, const CmaDescriptor& d, void* dest) {
  auto exited = [pidfd] {
    pollfd p{pidfd, POLLIN, 0};
    return pidfd >= 0 && ::poll(&p, 1, 0) != 0;
  };
  // A sender that dies while its memory is read can also show as a short
  // read: its exit names the cause.
  auto failed = [&](int e) {
    CmaResult r;
    r.error = e;
    r.outcome = e == ESRCH || exited()            ? CmaOutcome::Gone
                : (e == EPERM || e == EACCES) ? CmaOutcome::Refused
                                              : CmaOutcome::Fault;
    return r;
  };
  // The data, then the ticket, in one call: the kernel copies the remote
  // ranges in their order, so the ticket is read after every byte of the
  // data. A call that stops short is done again range by range, data
  // first, which finishes it or names why it cannot be.
  uint64_t ticket = 0;
  iovec to[2] = {{dest, d.bytes}, {&ticket, sizeof ticket}};
  iovec from[2] = {{reinterpret_cast<void*>(d.address), d.bytes},
                   {reinterpret_cast<void*>(d.ticket_address), sizeof ticket}};
  ssize_t n;
  do {
    n = process_vm_readv(pid, to, 2, from, 2, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return failed(errno);
  if (static_cast<size_t>(n) != d.bytes + sizeof ticket) {
    if (int e = readFrom(pid, dest, d.address, d.bytes)) return failed(e);
    if (int e = readFrom(pid, &ticket, d.ticket_address, sizeof ticket)) return failed(e);
  }
  if (exited()) return {CmaOutcome::Gone, 0};
  if (ticket != d.ticket) return {CmaOutcome::Withdrawn, 0};
  return {};
}

const char* describe(CmaOutcome outcome) {
  switch (outcome) {
    case CmaOutcome::Read:
      return "read";
    case CmaOutcome::Gone:
      return "the sender's process is gone";
    case CmaOutcome::Refused:
      return "the kernel refused process_vm_readv";
    case CmaOutcome::Withdrawn:
      return "the sender withdrew the message before it was read";
    case CmaOutcome::Fault:
      return "the sender's buffer could not be read";
  }
  return "?";
}

}  // namespace mw::samehost
