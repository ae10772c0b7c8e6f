// A process's membership in any number of worlds: the Redis connections,
// the watchdog, the transport device, the completion and event queues, the
// metrics, and the worlds themselves.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/backend_registry.h"
#include "core/completion_queue.h"
#include "core/config.h"
#include "core/event_queue.h"
#include "core/metrics/context_metrics.h"
#include "core/metrics/endpoint.h"
#include "core/store/keys.h"
#include "core/readiness.h"
#include "core/resize/resize_plan.h"
#include "core/store/redis_connector.h"
#include "core/store/redis_pool.h"
#include "core/store/rendezvous.h"
#include "core/liveness/watchdog.h"
#include "core/world.h"
#include "core/world_spec.h"

namespace mw {

class ResizeRendezvous;
struct ResizeClaim;

bool backendAvailable(Backend b) noexcept;

class Context : public WorldOwner, private BackendServices {
 public:
  // Throws Error: InvalidArgument for a bad config or a bind_address that
  // does not resolve, Store when Redis is unreachable.
  explicit Context(const Config& cfg);
  ~Context() override;

  // spec.timeout_ms < 0 waits forever; the settings spec leaves at their
  // defaults come from this context's config.
  World* createWorld(const WorldSpec& spec);
  void destroyWorld(World* w) override;

  // mw_world_shrink: `exclude` (n ranks; NULL with 0: the members the
  // world's break named) leave, every survivor calls it, and the world
  // goes on as its next epoch, survivors renumbered from 0 in their order.
  // `abort`: MW_SHRINK_ABORT. Returns the successor; `w` is retired.
  // Throws Error: InvalidArgument naming a bad value (and nothing
  // changes), WorldBroken (this member is excluded, or a member died
  // meanwhile), Timeout, Store; what a create throws.
  World* shrinkWorld(World* w, const int* exclude, int n, int flags, int timeout_ms) override;
  // mw_world_grow: every member calls it with `new_size`; newcomers join
  // by creating the world with that size and a rank from the old size up.
  World* growWorld(World* w, int new_size, int timeout_ms) override;

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
  // BackendServices.
  RedisPool& pool() override { return pool_; }
  std::shared_ptr<UcxContext> ucx() override;
  std::shared_ptr<NcclThreads> ncclThreads() override;
  const std::shared_ptr<gloo::transport::Device>& glooDevice() override { return gloo_device_; }

  // A shrink or grow under way, by the world it resizes.
  struct Resizing {
    uint64_t epoch = 0;  // the attempt's
    ResizePlan plan;
  };
  // What a create and a resize check first: Error(InvalidArgument) for a
  // bad timeout, Error(Store) while Redis is unreachable.
  Deadline deadlineFor(const std::string& name, int timeout_ms) const;
  std::shared_ptr<World> owned(World* w);
  World* resize(const std::shared_ptr<World>& old, bool cancel_pending, const char* verb, int timeout_ms,
                const std::function<ResizeClaim(ResizeRendezvous&, Deadline)>& claim);
  // A member of `w` was lost (its transport says so) while `w` is being
  // shrunk or grown, also when `w` had broken before: the resize under
  // way fails for every member, at once.
  void memberLostWhileResizing(const World& w, int peer_rank, const std::string& detail);
  std::unique_ptr<WorldBackend> connectResized(const std::shared_ptr<World>& old, const ResizePlan& plan,
                                               const Incarnation& inc, Deadline deadline);

  // The rendezvous, the backend's connections and the commit; again for a
  // newer incarnation that replaced the one joined, until the deadline.
  std::shared_ptr<World> formWorld(const WorldSpec& spec, const BackendKind& kind, const WorldSettings& settings,
                                   Deadline deadline);
  // A world, once its backend is connected and every member committed:
  // started, watched and held.
  World* adopt(std::shared_ptr<World> world);
  // The snapshot with Redis' reachability as given: the watchdog's own
  // report passes it, as watchdog_ is not to be read from its thread.
  metrics::Snapshot metricsSnapshot(bool store_up);

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

  // The UCX engine of this context (ucx()) starts with its first UCX or
  // NCCL world; the poller and aborter of its NCCL worlds (ncclThreads())
  // with the first of them.
  std::shared_ptr<ProgressDriver> ucxDriver();

  const std::shared_ptr<gloo::transport::Device> gloo_device_;  // shared by every Gloo world
  std::mutex ucx_m_;
  std::shared_ptr<UcxContext> ucx_;
  std::shared_ptr<NcclThreads> nccl_threads_;  // under ucx_m_
  std::mutex m_;
  std::map<World*, std::shared_ptr<World>> worlds_;
  std::map<const World*, Resizing> resizing_;  // under m_
  // metrics_listen's server; last, so that it goes first.
  std::unique_ptr<metrics::Endpoint> endpoint_;
};

}  // namespace mw
