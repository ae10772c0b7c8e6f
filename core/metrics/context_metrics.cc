#include "core/metrics/context_metrics.h"

namespace mw::metrics {
namespace {

// Operations and Redis round trips: 1 us to 10 s.
const Layout kFine = Layout::ofSeconds({1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                        5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
// Formations, detections and stalls: 1 ms to 60 s.
const Layout kCoarse =
    Layout::ofSeconds({1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});

uint64_t nanos(std::chrono::nanoseconds d) { return d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0; }

std::vector<std::string> withWorld(std::vector<std::string> labels, bool world) {
  if (world) labels.push_back("world");
  return labels;
}

}  // namespace

const char* backendLabel(Backend b) noexcept {
  switch (b) {
    case Backend::Ucx: return "ucx";
    case Backend::Gloo: return "gloo";
    case Backend::Nccl: return "nccl";
  }
  return "unknown";
}

ContextMetrics::ContextMetrics(bool world_labels) : world_labels_(world_labels) {
  Registry& r = *registry_;
  const bool w = world_labels;
  // Rare events show at zero (FamilySpec::show_zero); a series of them is
  // made ahead of its first count.
  auto counter = [&](const char* name, const char* help, std::vector<std::string> labels, bool rare = false) {
    FamilySpec spec{name, help, Kind::Counter, std::move(labels), nullptr};
    spec.show_zero = rare;
    return r.add(std::move(spec));
  };
  auto histogram = [&](const char* name, const char* help, std::vector<std::string> labels, const Layout& l,
                       bool rare = false) {
    FamilySpec spec{name, help, Kind::Histogram, std::move(labels), &l};
    spec.show_zero = rare;
    return r.add(std::move(spec));
  };
  const auto formations = counter("mw_world_formations_total", "Worlds this process formed.", {}, true);
  const auto formation_seconds = histogram(
      "mw_world_formation_seconds", "How long forming a world took, from its create call to ready.", {}, kCoarse);
  ids_.breaks = counter("mw_world_breaks_total", "Worlds of this process that broke, by what broke them.",
                        withWorld({"backend", "cause"}, w), true);
  ids_.detection = histogram("mw_break_detection_seconds",
                             "From a break's first evidence to its event on this process, by cause.", {"cause"},
                             kCoarse);
  ids_.op_seconds = histogram("mw_op_seconds", "Operations' time from issue to completion, any status.",
                              withWorld({"backend", "op"}, w), kFine);
  FamilySpec ops{"mw_ops_total", "Operations completed, any status.", Kind::Counter,
                 withWorld({"backend", "op"}, w), nullptr};
  ops.counts_of = ids_.op_seconds;
  r.add(std::move(ops));
  ids_.op_errors = counter("mw_op_errors_total", "Operations that completed with an error, by status.",
                           withWorld({"backend", "op", "status"}, w));
  ids_.sent = counter("mw_bytes_sent_total", "Payload bytes this process sent, by data path.",
                      withWorld({"backend", "path"}, w));
  ids_.received = counter("mw_bytes_received_total", "Payload bytes this process received, by data path.",
                          withWorld({"backend", "path"}, w));
  path_changes_ = counter("mw_path_changes_total", "Data paths that went down or came back, by path and state.",
                          withWorld({"path", "to"}, w));
  stall_ = histogram("mw_failover_stall_seconds",
                     "How long traffic stalled on a failed path before it moved to another.", {}, kCoarse, true);
  const auto store_round_trip = histogram(
      "mw_store_round_trip_seconds", "The watchdog's pipelined Redis round trip, one per heartbeat.", {}, kFine);
  const auto store_failovers = counter("mw_store_failovers_total",
                                       "Redis master changes this process followed (Sentinel failovers).", {}, true);
  const auto events_dropped =
      counter("mw_events_dropped_total", "Events dropped unread: the queue keeps the newest 4096.", {}, true);
  formations_ = &r.counter(formations, {});
  formation_seconds_ = &r.histogram(formation_seconds, {});
  store_round_trip_ = &r.histogram(store_round_trip, {});
  store_failovers_ = &r.counter(store_failovers, {});
  events_dropped_ = &r.counter(events_dropped, {});
  r.histogram(stall_, {});
}

std::shared_ptr<const WorldMetrics> ContextMetrics::forWorld(Backend backend, const std::string& world) {
  std::lock_guard<std::mutex> lock(m_);
  const int b = static_cast<int>(backend);
  if (b >= 1 && b <= 3) backend_used_[b - 1] = true;
  auto key = std::make_pair(backend, world_labels_ ? world : std::string());
  auto& made = worlds_[key];
  if (!made) {
    const size_t p2p = backend == Backend::Nccl   ? static_cast<size_t>(DataPath::Nccl)
                       : backend == Backend::Gloo ? static_cast<size_t>(DataPath::Tcp)
                                                  : kPathSlots;
    made = std::make_shared<WorldMetrics>(registry_, ids_, backendLabel(backend), key.second, p2p);
  }
  return made;
}

void ContextMetrics::formed(std::chrono::nanoseconds took) {
  formations_->add();
  formation_seconds_->observe(nanos(took));
}

void ContextMetrics::pathChanged(const std::string& world, const PathChange& change, bool up) {
  if (change.index < 0 || static_cast<size_t>(change.index) >= kRailSlots) return;
  std::vector<std::string> labels = {pathName(5 + static_cast<size_t>(change.index)), up ? "up" : "down"};
  if (world_labels_) labels.push_back(world);
  registry_->counter(path_changes_, labels).add();
  if (!up && change.failover_stall.count() > 0) registry_->histogram(stall_, {}).observe(nanos(change.failover_stall));
}

void ContextMetrics::storeRoundTrip(std::chrono::nanoseconds took) noexcept { store_round_trip_->observe(nanos(took)); }

void ContextMetrics::storeFailover() noexcept { store_failovers_->add(); }

Snapshot ContextMetrics::snapshot(const Readings& now) const {
  Snapshot s;
  Family worlds{"mw_worlds", "Worlds this process holds, by backend and state.", Kind::Gauge, {"backend", "state"},
                {}, {}};
  {
    std::lock_guard<std::mutex> lock(m_);
    for (int b = 0; b < 3; ++b) {
      if (!backend_used_[b]) continue;
      const char* backend = backendLabel(static_cast<Backend>(b + 1));
      worlds.samples.push_back({{backend, "ready"}, static_cast<double>(now.worlds[b][0]), 0, {}});
      worlds.samples.push_back({{backend, "broken"}, static_cast<double>(now.worlds[b][1]), 0, {}});
    }
  }
  if (!worlds.samples.empty()) s.families.push_back(std::move(worlds));
  s.families.push_back({"mw_store_up", "1 while Redis is reachable, 0 during an outage.", Kind::Gauge, {}, {},
                        {{{}, now.store_up ? 1.0 : 0.0, 0, {}}}});
  for (Family& f : registry_->read()) s.families.push_back(std::move(f));
  return s;
}

}  // namespace mw::metrics
