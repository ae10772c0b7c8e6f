// The cells one world updates, resolved when it forms so that the hot path
// (an operation completing, a transfer ending) touches only atomics: its
// operations' counts and times, and the bytes of its data paths. Shared by
// every world of a backend unless metrics_world_labels is on, when each
// world name has its own. Any thread; lives as long as whoever holds it
// (a request may outlive its context).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/break_cause.h"
#include "core/error.h"
#include "core/metrics/registry.h"
#include "core/op.h"

namespace mw::metrics {

// mw_bytes_*_total's `path`: how the data moved.
enum class DataPath : size_t {
  Tag = 0,   // UCX tag matching on the world's endpoint (TCP, or RDMA across hosts)
  Ring = 1,  // a same-host ring of shared memory
  Cma = 2,   // same host, read by the receiver with process_vm_readv
  Nccl = 3,  // an NCCL world (its point-to-point payloads)
  Tcp = 4,   // a Gloo world (its point-to-point payloads)
};
constexpr size_t kRailSlots = 16;  // rails 0..15 ("rail0".."rail15"): the most data_addresses
constexpr size_t kPathSlots = 5 + kRailSlots;
std::string pathName(size_t slot);  // "tag", ..., "rail0", ...

constexpr size_t kOpKinds = 11;      // OpKind::Send .. OpKind::Barrier
constexpr size_t kStatusSlots = 12;  // -Status for the errors, 0 for any other

// The registry's families of the library's metric set (context_metrics.h).
struct FamilyIds {
  Registry::FamilyId breaks, detection, op_errors, op_seconds, sent, received;
};

class WorldMetrics {
 public:
  // `base` is {backend}; `world` is the world's name when series carry it,
  // else empty. `p2p_path`: the path a backend that reports no transfers of
  // its own counts its point-to-point payloads on; kPathSlots: none.
  WorldMetrics(std::shared_ptr<Registry> registry, const FamilyIds& ids, std::string backend, std::string world,
               size_t p2p_path);

  // An operation issued `took` ago completed with `status`; `p2p_bytes` is
  // a send's or receive's payload.
  void completed(OpKind kind, Status status, std::chrono::nanoseconds took, size_t p2p_bytes) const noexcept {
    const auto ns = took.count();
    op_seconds_[static_cast<size_t>(kind)]->observe(ns > 0 ? static_cast<uint64_t>(ns) : 0);
    if (status != Status::Ok) return failed(kind, status);
    if (p2p_path_ < kPathSlots && p2p_bytes > 0) {
      if (kind == OpKind::Send) sent_[p2p_path_]->add(p2p_bytes);
      if (kind == OpKind::Recv) received_[p2p_path_]->add(p2p_bytes);
    }
  }
  void sent(DataPath p, size_t bytes) const noexcept { sent_[static_cast<size_t>(p)]->add(bytes); }
  void received(DataPath p, size_t bytes) const noexcept { received_[static_cast<size_t>(p)]->add(bytes); }
  void sentOnRail(size_t rail, size_t bytes) const noexcept {
    if (rail < kRailSlots) sent_[5 + rail]->add(bytes);
  }
  void receivedOnRail(size_t rail, size_t bytes) const noexcept {
    if (rail < kRailSlots) received_[5 + rail]->add(bytes);
  }

  // The world broke (rare: takes the registry's lock).
  void broke(BreakCause cause, std::chrono::nanoseconds detection) const noexcept;

 private:
  void failed(OpKind kind, Status status) const noexcept;
  std::vector<std::string> labels(std::vector<std::string> middle) const;

  const std::shared_ptr<Registry> registry_;
  const FamilyIds ids_;
  const std::string backend_, world_;
  const size_t p2p_path_;
  std::array<Histogram*, kOpKinds> op_seconds_{};
  std::array<Counter*, kPathSlots> sent_{}, received_{};
  // Resolved at a series' first error, then read without the lock.
  mutable std::array<std::array<std::atomic<Counter*>, kStatusSlots>, kOpKinds> errors_{};
};

}  // namespace mw::metrics
