// Whether two members may take the same-host path, decided by the member
// that would read: the two must share a boot, a pid namespace and a
// network namespace (members in different network namespaces count as
// different hosts, so a cut link there is never hidden), and the kernel
// must let this process read the other and take its descriptors (Yama's
// ptrace_scope, a container without CAP_SYS_PTRACE, or seccomp can refuse
// process_vm_readv or pidfd_getfd).
#pragma once

#include <cstdint>
#include <string>

namespace mw::samehost {

// What a process publishes so that others can probe it.
struct Identity {
  std::string net_namespace;  // readlink /proc/self/ns/net, "" if unknown
  uint64_t probe_address = 0;  // a word of this process holding probe_value
  uint64_t probe_value = 0;    // random, never 0
};

const Identity& self();

// "" when process `pid` lets this one read it and its word at `address`
// holds `value` (it is the process that published them); else why not,
// naming the errno.
std::string probeReadable(int pid, uint64_t address, uint64_t value);

// "" when the kernel lets this process take descriptors out of the
// process of `pidfd` (pidfd_getfd, how a reader takes a ring: ring.h);
// else why not, naming the errno. The same rule as process_vm_readv,
// but seccomp may refuse one and not the other.
std::string probeTakesFds(int pid, int pidfd);

}  // namespace mw::samehost
