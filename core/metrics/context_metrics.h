// The library's metric set for one context (README, "Metrics"): the
// families and their fixed names, the cells each world resolves when it
// forms (world_metrics.h), the context's own events, and the snapshot with
// the gauges read at that moment. Any thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "core/metrics/registry.h"
#include "core/metrics/snapshot.h"
#include "core/metrics/world_metrics.h"
#include "core/path_change.h"
#include "core/world_spec.h"

namespace mw::metrics {

const char* backendLabel(Backend b) noexcept;  // "ucx", "gloo", "nccl"

class ContextMetrics {
 public:
  // With `world_labels` (metrics_world_labels=on) the per-world families
  // carry a `world` label, one series set per world name.
  explicit ContextMetrics(bool world_labels);

  // What a world of `backend` named `world` updates; the same object for
  // every world that shares its series.
  std::shared_ptr<const WorldMetrics> forWorld(Backend backend, const std::string& world);

  // A world formed, `took` after its create began.
  void formed(std::chrono::nanoseconds took);
  // A data path of `world` went down or came back.
  void pathChanged(const std::string& world, const PathChange& change, bool up);
  // The watchdog's round trip to Redis; a Redis master change followed.
  void storeRoundTrip(std::chrono::nanoseconds took) noexcept;
  void storeFailover() noexcept;
  Counter& eventsDropped() { return *events_dropped_; }

  // What changes too rarely to count, read when a snapshot is taken.
  struct Readings {
    // Worlds held, by backend (index Backend - 1) and state (0 ready, 1 broken).
    int worlds[3][2] = {};
    bool store_up = true;
  };
  Snapshot snapshot(const Readings& now) const;

 private:
  const bool world_labels_;
  const std::shared_ptr<Registry> registry_ = std::make_shared<Registry>();
  FamilyIds ids_{};
  Registry::FamilyId path_changes_ = 0, stall_ = 0;
  Counter* formations_ = nullptr;
  Histogram* formation_seconds_ = nullptr;
  Histogram* store_round_trip_ = nullptr;
  Counter* store_failovers_ = nullptr;
  Counter* events_dropped_ = nullptr;

  mutable std::mutex m_;
  std::map<std::pair<Backend, std::string>, std::shared_ptr<const WorldMetrics>> worlds_;
  bool backend_used_[3] = {};  // under m_
};

}  // namespace mw::metrics
