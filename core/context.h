// A process's membership in any number of worlds: the Redis connections,
// the watchdog, the transport device, the completion and event queues, the
// metrics, and the worlds themselves.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/completion_queue.h"
#include "core/config.h"
#include "core/event_queue.h"
#include "core/metrics/context_metrics.h"
#include "core/metrics/endpoint.h"
#include "core/store/keys.h"
#include "core/readiness.h"
#include "core/store/redis_connector.h"
#include "core/store/redis_pool.h"
#include "core/store/rendezvous.h"
#include "core/liveness/watchdog.h"
#include "core/world.h"
#include "core/world_spec.h"

namespace gloo {
namespace transport {
class Device;
}
}  // namespace gloo

namespace mw {

class UcxContext;
struct NcclThreads;

bool backendAvailable(Backend b) noexcept;

class Context : public WorldOwner {
 public:
  // Throws Error: InvalidArgument for a bad config or a bind_address that
  // does not resolve, Store when Redis is unreachable.
  explicit Context(const Config& cfg);
  ~Context() override;

  // spec.timeout_ms < 0 waits forever; the settings spec leaves at their
  // defaults come from this context's config.
  World* createWorld(const WorldSpec& spec);
  void destroyWorld(World* w) override;

  const std::shared_ptr<CompletionQueue>& completions() const override { return cq_; }
  // mw_poll: up to `max` finished requests, waiting up to `timeout`
  // (negative: forever) for the first; drives UCX progress itself for up
  // to spin_us first.
  std::vector<std::shared_ptr<Request>> poll(size_t max, std::chrono::milliseconds timeout);
  EventQueue& events() { return events_; }
  // mw_context_fd / mw_context_wake.
  int fd() { return readiness_->fd(); }
  void wake();
  // mw_metrics_snapshot: the counters now, with the gauges read now; empty
  // with metrics off.
  metrics::Snapshot metricsSnapshot();

  void pathChanged(const std::shared_ptr<World>& w, int peer_rank, bool up, const PathChange& path,
                   const std::string& detail) override;
  void worldBroken(const std::shared_ptr<World>& w, int peer_rank, const std::string& detail,
                   bool announce) override;

 private:
  // The rendezvous, the backend's connections and the commit; again for a
  // newer incarnation that replaced the one joined, until the deadline.
  std::shared_ptr<World> formWorld(const WorldSpec& spec, const WorldSettings& settings, Deadline deadline);
  // The snapshot with Redis' reachability as given: the watchdog's own
  // report passes it, as watchdog_ is not to be read from its thread.
  metrics::Snapshot metricsSnapshot(bool store_up);
  std::unique_ptr<WorldBackend> connectBackend(const Incarnation& inc, const std::shared_ptr<UcxContext>& ucx_context,
                                               const WorldSpec& spec, const WorldSettings& settings,
                                               Deadline deadline);

  const Config cfg_;
  const Keys keys_;
  const std::string member_;
  const std::unique_ptr<metrics::ContextMetrics> metrics_;  // null: metrics off
  RedisConnector connector_;
  RedisPool pool_;
  Rendezvous rendezvous_;
  const std::shared_ptr<Readiness> readiness_ = std::make_shared<Readiness>();
  EventQueue events_{*readiness_, metrics_ ? &metrics_->eventsDropped() : nullptr};
  std::shared_ptr<CompletionQueue> cq_ = std::make_shared<CompletionQueue>(readiness_);
  std::unique_ptr<Watchdog> watchdog_;

  // The UCX engine of this context, started with its first UCX world.
  std::shared_ptr<UcxContext> ucx();
  std::shared_ptr<ProgressDriver> ucxDriver();
  // The poller and aborter of this context's NCCL worlds, started with the
  // first of them.
  std::shared_ptr<NcclThreads> ncclThreads();

  const std::shared_ptr<gloo::transport::Device> gloo_device_;  // shared by every Gloo world
  std::mutex ucx_m_;
  std::shared_ptr<UcxContext> ucx_;
  std::shared_ptr<NcclThreads> nccl_threads_;  // under ucx_m_
  std::mutex m_;
  std::map<World*, std::shared_ptr<World>> worlds_;
  // metrics_listen's server; last, so that it goes first.
  std::unique_ptr<metrics::Endpoint> endpoint_;
};

}  // namespace mw
