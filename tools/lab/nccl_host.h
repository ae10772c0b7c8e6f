// Several NCCL ranks on one GPU, for tests and benchmarks on one-GPU
// machines. NCCL refuses two ranks of one communicator on one device of one
// host ("Duplicate GPU detected": it compares host hash and bus id), and
// NCCL_HOSTID replaces the host hash (getHostHash in NCCL's misc/utils.cc).
// So each rank process claims a host of its own, and NCCL joins them over
// its socket transport on loopback. A test setup, not a production one.
#pragma once

#include <cstdlib>
#include <string>

namespace mwlab {

// Call in a rank's process before any NCCL call; `host` must differ
// between the ranks of one communicator.
inline void claimOwnNcclHost(const std::string& host) {
  setenv("NCCL_HOSTID", host.c_str(), 1);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  // Sockets even where the host has InfiniBand, which NCCL would try first
  // (unless the caller chose a network).
  setenv("NCCL_NET", "Socket", 0);
}

}  // namespace mwlab
