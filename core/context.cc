#include "core/context.h"

#include <algorithm>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "core/backends/gloo/gloo_communicator.h"
#include "core/backends/ucx/ucx_context.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/backends/nccl/nccl_world.h"
#include "core/backends/nccl/nccl_plugin_loader.h"
#include "core/error.h"
#include "core/heap_trim.h"
#include "core/lanes.h"
#include "core/log.h"
#include "core/metrics/exposition.h"
#include "core/metrics/wire.h"

namespace mw {
namespace {

std::string newMemberId() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Gloo writes to peer sockets with plain write(2), on our threads and on
// the caller's; a peer that dies mid-write would raise SIGPIPE and, with
// the default disposition, kill this process. Like gRPC we ignore SIGPIPE
// then; a handler the program installed itself is left alone.
void ignoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL &&
      !(current.sa_flags & SA_SIGINFO)) {
    signal(SIGPIPE, SIG_IGN);
  }
}

// Before any rendezvous, so that a host without NCCL fails at once and
// says why instead of making the other members wait.
void requireNcclDevice(const std::string& world, int device) {
  const NcclSupport& nccl = ncclSupport();
  if (!nccl.usable()) {
    throw Error(Status::Unsupported, "world '" + world + "': the NCCL backend is unavailable here: " + nccl.why_not);
  }
  if (device < 0 || device >= nccl.devices) {
    throw Error(Status::InvalidArgument, "world '" + world + "': device " + std::to_string(device) +
                                             " is outside the " + std::to_string(nccl.devices) +
                                             " CUDA devices of this process [0, " + std::to_string(nccl.devices) +
                                             ")");
  }
}

Config validated(const Config& cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

bool backendAvailable(Backend b) noexcept {
  if (b == Backend::Gloo) return true;
  if (b == Backend::Ucx) return ucxUsable();
  // NCCL worlds keep their members connected over UCX.
  if (b == Backend::Nccl) return ncclSupport().usable() && ucxUsable();
  return false;
}

Context::Context(const Config& cfg)
    : cfg_(validated(cfg)),
      keys_(cfg_.ns),
      member_(newMemberId()),
      metrics_(cfg_.metrics ? std::make_unique<metrics::ContextMetrics>(cfg_.metrics_world_labels) : nullptr),
      connector_(parseRedisUrl(cfg_.redis_url), cfg_.store_timeout),
      pool_(connector_),
      rendezvous_(pool_, keys_, member_),
      gloo_device_(makeGlooDevice(cfg_.bind_address)) {
  setLogLevel(cfg_.log_level);
  ignoreSigpipeUnlessHandled();
  watchdog_ = std::make_unique<Watchdog>(cfg_, connector_, keys_, member_, events_, metrics_.get());
  if (!metrics_) return;
  if (!cfg_.metrics_listen.empty()) {
    endpoint_ = std::make_unique<metrics::Endpoint>(
        cfg_.metrics_listen, [this] { return metrics::exposition(metricsSnapshot()); }, "mw-metrics");
    MW_LOG(LogLevel::Info, "metrics at http://%s/metrics (port %d)", cfg_.metrics_listen.c_str(), endpoint_->port());
  }
  // Last: nothing may throw once the watchdog's thread can call back.
  watchdog_->setMetricsReport([this](bool store_up) { return metrics::encode(metricsSnapshot(store_up)); });
}

Context::~Context() {
  endpoint_.reset();
  std::map<World*, std::shared_ptr<World>> worlds;
  {
    std::lock_guard<std::mutex> lock(m_);
    worlds.swap(worlds_);
  }
  for (auto& [ptr, w] : worlds) {
    watchdog_->unwatch(ptr);
    if (w->destroy()) watchdog_->recordLeft(*w);
  }
  watchdog_.reset();
  // Requests the program did not free may still hold it; its endpoints and
  // thread go now regardless.
  if (ucx_) ucx_->shutdown();
}

std::shared_ptr<UcxContext> Context::ucx() {
  std::lock_guard<std::mutex> lock(ucx_m_);
  if (!ucx_) {
    ucx_ = std::make_shared<UcxContext>(cfg_);
    watchdog_->setPathsReport([weak = std::weak_ptr<UcxContext>(ucx_)] {
      auto ucx = weak.lock();
      return ucx ? ucx->pathsReport() : std::string();
    });
  }
  return ucx_;
}

std::shared_ptr<NcclThreads> Context::ncclThreads() {
  std::lock_guard<std::mutex> lock(ucx_m_);
  if (!nccl_threads_) nccl_threads_ = std::make_shared<NcclThreads>(*ncclSupport().plugin, cfg_.spin);
  return nccl_threads_;
}

std::shared_ptr<ProgressDriver> Context::ucxDriver() {
  std::lock_guard<std::mutex> lock(ucx_m_);
  return ucx_ ? ucx_->engine() : nullptr;
}

std::vector<std::shared_ptr<Request>> Context::poll(size_t max, std::chrono::milliseconds timeout) {
  if (max > 0 && timeout.count() != 0) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = timeout.count() < 0 ? std::chrono::steady_clock::time_point::max() : start + timeout;
    if (auto driver = ucxDriver()) driver->spinUntil([this] { return !cq_->empty(); }, deadline);
    if (timeout.count() > 0) {  // the spin counts against it
      const auto spun = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      timeout = std::max(timeout - spun, std::chrono::milliseconds(0));
    }
  }
  return cq_->pop(max, timeout);
}

World* Context::createWorld(const WorldSpec& spec) {
  const Clock::time_point began = Clock::now();
  const std::string& name = spec.name;
  const int rank = spec.rank, size = spec.size, timeout_ms = spec.timeout_ms;
  const Backend backend = spec.backend;
  if (!isValidName(name, 128)) {
    throw Error(Status::InvalidArgument,
                "world name '" + name.substr(0, 160) + "' must be 1..128 chars of [A-Za-z0-9._:-]");
  }
  if (size < 1) throw Error(Status::InvalidArgument, "world size " + std::to_string(size) + " must be >= 1");
  if (size > cfg_.max_world_size) {
    throw Error(Status::InvalidArgument, "world size " + std::to_string(size) + " exceeds max_world_size " +
                                             std::to_string(cfg_.max_world_size));
  }
  if (rank < 0 || rank >= size) {
    throw Error(Status::InvalidArgument,
                "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
  }
  if (timeout_ms < -1) {
    throw Error(Status::InvalidArgument,
                "timeout_ms " + std::to_string(timeout_ms) + " must be >= 0, or -1 for no limit");
  }
  if (backend != Backend::Gloo && backend != Backend::Nccl && backend != Backend::Ucx) {
    throw Error(Status::InvalidArgument, "backend " + std::to_string(static_cast<int>(backend)) +
                                             " is not MW_BACKEND_GLOO (1), MW_BACKEND_NCCL (2) or MW_BACKEND_UCX (3)");
  }
  if (backend != Backend::Gloo && !ucxUsable()) {
    const std::string what = backend == Backend::Ucx ? "the UCX backend cannot start here"
                                                     : "NCCL worlds keep their members connected over UCX, and UCX "
                                                       "cannot start here";
    throw Error(Status::Unsupported, "world '" + name + "': " + what + " (ucp_init failed)");
  }
  // `device` is the CUDA ordinal of an NCCL world; Gloo worlds ignore it.
  if (backend == Backend::Nccl) requireNcclDevice(name, spec.device);
  WorldSettings settings = resolveSettings(spec, cfg_);
  if (metrics_) settings.metrics = metrics_->forWorld(backend, name);
  {
    std::lock_guard<std::mutex> lock(m_);
    for (const auto& [ptr, w] : worlds_) {
      if (w->name() == name && w->rank() == rank && w->state() == WorldState::Ready) {
        throw Error(Status::AlreadyExists, "world '" + name + "' rank " + std::to_string(rank) +
                                               " already exists in this context (epoch " +
                                               std::to_string(w->epoch()) + ")");
      }
    }
  }
  if (!watchdog_->storeUp()) {
    throw Error(Status::Store, "cannot create world '" + name + "': redis " + pool_.url().redacted() +
                                   " is unreachable");
  }
  Deadline deadline = timeout_ms < 0 ? Clock::now() + kForever
                                     : Clock::now() + std::chrono::milliseconds(timeout_ms);
  const uint64_t generation = connector_.generation();
  std::shared_ptr<World> world;
  try {
    world = formWorld(spec, settings, deadline);
  } catch (const Error& e) {
    // The master changed (or Redis went away) while the world formed: a
    // member that waited in vain, or gave up, did so because of the store.
    const Status s = e.status();
    if (connector_.generation() != generation && (s == Status::Timeout || s == Status::WorldBroken ||
                                                  s == Status::Backend)) {
      throw Error(Status::Store, "world '" + name + "': Redis lost its master, or its connection, while the world "
                                 "formed: " + e.what());
    }
    throw;
  }
  world->start();
  watchdog_->watch(world);
  if (metrics_) metrics_->formed(Clock::now() - began);
  std::lock_guard<std::mutex> lock(m_);
  worlds_[world.get()] = world;
  MW_LOG(LogLevel::Info, "world %s epoch %llu formed: rank %d of %d", name.c_str(),
         static_cast<unsigned long long>(world->epoch()), rank, size);
  return world.get();
}

std::shared_ptr<World> Context::formWorld(const WorldSpec& spec, const WorldSettings& settings, Deadline deadline) {
  const std::string& name = spec.name;
  const int rank = spec.rank, size = spec.size;
  std::shared_ptr<UcxContext> ucx_context = spec.backend == Backend::Gloo ? nullptr : ucx();
  for (;;) {
    Formation f = rendezvous_.join(name, rank, size, deadline);
    Incarnation inc(keys_, name, f.epoch, size);
    try {
      std::unique_ptr<WorldBackend> runner = connectBackend(inc, ucx_context, spec, settings, deadline);
      rendezvous_.commit(inc, rank, deadline);
      WorldIdentity id{name, f.epoch, rank, size, std::move(f.members), spec.backend};
      return std::make_shared<World>(std::move(id), std::move(runner), *this, settings.op_timeout, settings.metrics);
    } catch (const MovedOn& e) {
      // A member that lost its place in this incarnation (as in a
      // failover) started the next one, where it waits for us: we follow,
      // within the same deadline.
      watchdog_->giveUp(name, f.epoch, rank, size, e.what());
      if (remaining(deadline).count() == 0) throw;
      MW_LOG(LogLevel::Warn, "%s; joining the newer one", e.what());
    } catch (const std::exception& e) {
      // Whoever waits for this member, or already holds the world, hears it
      // gave up, as soon as Redis can take it.
      watchdog_->giveUp(name, f.epoch, rank, size, e.what());
      throw;
    }
  }
}

std::unique_ptr<WorldBackend> Context::connectBackend(const Incarnation& inc,
                                                      const std::shared_ptr<UcxContext>& ucx_context,
                                                      const WorldSpec& spec, const WorldSettings& settings,
                                                      Deadline deadline) {
  const int rank = spec.rank;
  if (spec.backend == Backend::Ucx) {
    return UcxWorld::connect(ucx_context, pool_, inc, rank, inc.size(), settings, deadline);
  }
  if (spec.backend == Backend::Nccl) {
    // The UCX world carries no data: it is the members' liveness link.
    WorldSettings control_settings = settings;
    control_settings.same_host_path = false;
    control_settings.metrics = nullptr;  // its few control messages are no data
    std::unique_ptr<UcxWorld> control =
        UcxWorld::connect(ucx_context, pool_, inc, rank, inc.size(), control_settings, deadline);
    return NcclWorld::connect(ncclThreads(), std::move(control), pool_, inc, rank, spec.device, deadline);
  }
  return std::make_unique<LaneBackend>(GlooCommunicator::connect(gloo_device_, pool_, inc, rank, inc.size(), deadline));
}

void Context::destroyWorld(World* w) {
  std::shared_ptr<World> world;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = worlds_.find(w);
    if (it == worlds_.end()) return;
    world = std::move(it->second);
    worlds_.erase(it);
  }
  watchdog_->unwatch(w);
  // The others see their connection to us close once what we sent them
  // has arrived; Redis records that we left, so the name can form again.
  if (world->destroy()) watchdog_->recordLeft(*world);
  // What the world's transport held is free now; without this, the
  // process's heap would keep it resident.
  world.reset();
  trimHeap();
}

void Context::wake() {
  cq_->wake();
  events_.wake();
}

void Context::worldBroken(const std::shared_ptr<World>& w, int peer_rank, const std::string& detail,
                          bool announce) {
  events_.push(Event{Event::Type::WorldBroken, w, w->name(), peer_rank, Status::WorldBroken, detail, {}});
  if (announce) watchdog_->announce(*w, peer_rank, detail);
}

void Context::pathChanged(const std::shared_ptr<World>& w, int peer_rank, bool up, const PathChange& path,
                          const std::string& detail) {
  if (metrics_) metrics_->pathChanged(w->name(), path, up);
  events_.push(
      Event{up ? Event::Type::PathUp : Event::Type::PathDown, w, w->name(), peer_rank, Status::Ok, detail, path});
}

metrics::Snapshot Context::metricsSnapshot() { return metricsSnapshot(watchdog_->storeUp()); }

metrics::Snapshot Context::metricsSnapshot(bool store_up) {
  if (!metrics_) return {};
  metrics::ContextMetrics::Readings now;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (const auto& [ptr, w] : worlds_) {
      const int b = static_cast<int>(w->backend()) - 1;
      const WorldState state = w->state();
      if (b >= 0 && b < 3 && state != WorldState::Destroyed) ++now.worlds[b][state == WorldState::Broken ? 1 : 0];
    }
  }
  now.store_up = store_up;
  return metrics_->snapshot(now);
}

}  // namespace mw
