#include "core/context.h"

#include <algorithm>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "core/backends/gloo/gloo_communicator.h"
#include "core/backends/nccl/nccl_world.h"
#include "core/backends/nccl/nccl_plugin_loader.h"
#include "core/backends/ucx/ucx_context.h"
#include "core/error.h"
#include "core/heap_trim.h"
#include "core/log.h"
#include "core/resize/resize_rendezvous.h"
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

Config validated(const Config& cfg) {
  cfg.validate();
  return cfg;
}

}  // namespace

bool backendAvailable(Backend b) noexcept {
  const BackendKind* kind = backendKind(b);
  return kind && kind->available();
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

Deadline Context::deadlineFor(const std::string& name, int timeout_ms) const {
  if (timeout_ms < -1) {
    throw Error(Status::InvalidArgument,
                "timeout_ms " + std::to_string(timeout_ms) + " must be >= 0, or -1 for no limit");
  }
  if (!watchdog_->storeUp()) {
    throw Error(Status::Store, "cannot create or resize world '" + name + "': redis " + pool_.url().redacted() +
                                   " is unreachable");
  }
  return timeout_ms < 0 ? Clock::now() + kForever : Clock::now() + std::chrono::milliseconds(timeout_ms);
}

World* Context::createWorld(const WorldSpec& spec) {
  const Clock::time_point began = Clock::now();
  const std::string& name = spec.name;
  const int rank = spec.rank, size = spec.size;
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
  if (spec.timeout_ms < -1) deadlineFor(name, spec.timeout_ms);  // says why
  const BackendKind* kind = backendKind(spec.backend);
  if (!kind) {
    throw Error(Status::InvalidArgument,
                "backend " + std::to_string(static_cast<int>(spec.backend)) + " is not " + backendChoices());
  }
  kind->require(spec);
  WorldSettings settings = resolveSettings(spec, cfg_);
  if (metrics_) settings.metrics = metrics_->forWorld(spec.backend, name);
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
  const Deadline deadline = deadlineFor(name, spec.timeout_ms);
  const uint64_t generation = connector_.generation();
  std::shared_ptr<World> world;
  try {
    world = formWorld(spec, *kind, settings, deadline);
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
  World* raw = adopt(std::move(world));
  if (metrics_) metrics_->formed(Clock::now() - began);
  return raw;
}

World* Context::adopt(std::shared_ptr<World> world) {
  world->start();
  watchdog_->watch(world);
  MW_LOG(LogLevel::Info, "world %s epoch %llu formed: rank %d of %d", world->name().c_str(),
         static_cast<unsigned long long>(world->epoch()), world->rank(), world->size());
  std::lock_guard<std::mutex> lock(m_);
  World* raw = world.get();
  worlds_[raw] = std::move(world);
  return raw;
}

std::shared_ptr<World> Context::formWorld(const WorldSpec& spec, const BackendKind& kind,
                                          const WorldSettings& settings, Deadline deadline) {
  const std::string& name = spec.name;
  const int rank = spec.rank, size = spec.size;
  kind.prepare(*this);
  for (;;) {
    Formation f = rendezvous_.join(name, rank, size, deadline);
    Incarnation inc(keys_, name, f.epoch, size, f.lineage);
    try {
      std::unique_ptr<WorldBackend> runner = kind.connect(*this, inc, rank, spec, settings, deadline);
      rendezvous_.commit(inc, rank, deadline);
      WorldIdentity id{name, f.epoch, rank, size, std::move(f.members), spec, settings};
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

// ------------------------------------------------------------------ resize

std::shared_ptr<World> Context::owned(World* w) {
  std::lock_guard<std::mutex> lock(m_);
  auto it = worlds_.find(w);
  if (it == worlds_.end()) throw Error(Status::InvalidArgument, "the world handle is not one of this context's");
  return it->second;
}

World* Context::shrinkWorld(World* w, const int* exclude, int n, int flags, int timeout_ms) {
  std::shared_ptr<World> old = owned(w);
  if (flags != 0 && flags != 1) {
    throw Error(Status::InvalidArgument,
                "flags " + std::to_string(flags) + " is not MW_SHRINK_DEFAULT (0) or MW_SHRINK_ABORT (1)");
  }
  // NULL with 0 (or any list of 0) is the break's list.
  std::optional<std::vector<int>> proposal;
  if (n != 0) proposal = checkedExcludeList(exclude, n, old->size(), old->rank());
  // What this member itself saw blamed; Redis adds what the others did.
  std::vector<int> seen;
  if (old->blamedRank() >= 0) seen.push_back(old->blamedRank());
  const std::string name = old->name();
  const uint64_t epoch = old->epoch();
  const int size = old->size(), rank = old->rank();
  // MW_SHRINK_DEFAULT of a broken world: the list decides (its break must
  // be one of the members it excludes). Read once the world can no longer
  // change on its own: beginResize() in resize() stops issues, not breaks,
  // so the claim checks what broke it by then.
  return resize(old, flags == 1, "shrink", timeout_ms, [&](ResizeRendezvous& rv, Deadline deadline) {
    std::optional<int> broken_by;
    if (flags == 0 && old->state() == WorldState::Broken) broken_by = old->blamedRank();
    return rv.claimShrink(name, epoch, size, rank, proposal, seen, broken_by, deadline);
  });
}

World* Context::growWorld(World* w, int new_size, int timeout_ms) {
  std::shared_ptr<World> old = owned(w);
  growPlan(old->size(), old->rank(), new_size, cfg_.max_world_size);  // checks new_size before anything
  const std::string name = old->name();
  const uint64_t epoch = old->epoch();
  const int size = old->size(), rank = old->rank();
  return resize(old, false, "grow", timeout_ms, [&](ResizeRendezvous& rv, Deadline deadline) {
    return rv.claimGrow(name, epoch, size, rank, new_size, cfg_.max_world_size, deadline);
  });
}

World* Context::resize(const std::shared_ptr<World>& old, bool cancel_pending, const char* verb, int timeout_ms,
                       const std::function<ResizeClaim(ResizeRendezvous&, Deadline)>& claim_fn) {
  const Clock::time_point began = Clock::now();
  const std::string& name = old->name();
  const Deadline deadline = deadlineFor(name, timeout_ms);
  old->beginResize(cancel_pending, verb);
  ResizeRendezvous rv(rendezvous_);
  ResizeClaim claim;
  try {
    claim = claim_fn(rv, deadline);
  } catch (const std::exception& e) {
    old->endResize(e.what());
    throw;
  }
  const ResizePlan& plan = claim.plan;
  const uint64_t epoch = claim.epoch;
  // The members this one waits for, by new rank ("" for a grow's
  // newcomers, not known yet), and their old ranks.
  std::vector<std::string> members(static_cast<size_t>(plan.new_size));
  std::vector<int> old_rank_of(static_cast<size_t>(plan.new_size), -1);
  for (int r = 0; r < plan.old_size; ++r) {
    if (!plan.kept(r)) continue;
    members[static_cast<size_t>(plan.new_rank_of[static_cast<size_t>(r)])] = old->members()[static_cast<size_t>(r)];
    old_rank_of[static_cast<size_t>(plan.new_rank_of[static_cast<size_t>(r)])] = r;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    resizing_[old.get()] = Resizing{epoch, plan};
  }
  watchdog_->watchForming(name, epoch, plan.new_rank, members, old->epoch(), old_rank_of);
  const World& resized = *old;
  old->runner().watchMembers(
      [this, &resized](int peer, const std::string& why) { memberLostWhileResizing(resized, peer, why); });
  auto finished = [&] {
    old->runner().unwatchMembers();
    watchdog_->unwatchForming(name, epoch);
    std::lock_guard<std::mutex> lock(m_);
    resizing_.erase(old.get());
  };
  std::shared_ptr<World> world;
  try {
    Formation f;
    {
      auto conn = pool_.lease();
      f = rendezvous_.awaitClaims(*conn, name, epoch, plan.new_rank, plan.new_size, deadline);
    }
    for (int r = 0; r < plan.new_size; ++r) {
      const std::string& expected = members[static_cast<size_t>(r)];
      if (!expected.empty() && f.members[static_cast<size_t>(r)] != expected) {
        throw Error(Status::Store, "world '" + name + "' epoch " + std::to_string(epoch) + ": rank " +
                                       std::to_string(r) + " is held by " + f.members[static_cast<size_t>(r)] +
                                       ", not by the member that had it before the " + verb);
      }
    }
    watchdog_->watchForming(name, epoch, plan.new_rank, f.members, old->epoch(), old_rank_of);
    Incarnation inc(keys_, name, epoch, plan.new_size, f.lineage);
    std::unique_ptr<WorldBackend> next = connectResized(old, plan, inc, deadline);
    rendezvous_.commit(inc, plan.new_rank, deadline);
    WorldIdentity id{name, epoch, plan.new_rank, plan.new_size, std::move(f.members), old->spec(), old->settings()};
    id.spec.rank = plan.new_rank;
    id.spec.size = plan.new_size;
    world = std::make_shared<World>(std::move(id), std::move(next), *this, old->opTimeout(), old->settings().metrics);
  } catch (const std::exception& e) {
    // The others hear this member gave up on the attempt (or already
    // know, from the member that died); the old world is as it was, or
    // broken where its operations were cancelled for the shrink.
    watchdog_->giveUp(name, epoch, plan.new_rank, plan.new_size, e.what());
    finished();
    old->endResize(e.what());
    throw;
  }
  // Every member committed: the successor is the world now.
  finished();
  watchdog_->unwatch(old.get());
  old->retire(epoch, verb, &world->runner());
  MW_LOG(LogLevel::Info, "world %s epoch %llu %s into epoch %llu", name.c_str(),
         static_cast<unsigned long long>(old->epoch()), plan.kind == ResizeKind::Shrink ? "shrunk" : "grown",
         static_cast<unsigned long long>(epoch));
  World* raw = adopt(std::move(world));
  if (metrics_) metrics_->formed(Clock::now() - began);
  return raw;
}

std::unique_ptr<WorldBackend> Context::connectResized(const std::shared_ptr<World>& old, const ResizePlan& plan,
                                                      const Incarnation& inc, Deadline deadline) {
  WorldSpec spec = old->spec();
  spec.rank = plan.new_rank;
  spec.size = plan.new_size;
  WorldBackend& backend = old->runner();
  std::unique_ptr<WorldBackend> next =
      plan.kind == ResizeKind::Shrink ? backend.shrink(plan, *this, inc, spec, old->settings(), deadline)
                                      : backend.grow(plan, *this, inc, spec, old->settings(), deadline);
  if (next) return next;
  // The old backend keeps nothing: its successor forms as a create would.
  const BackendKind* kind = backendKind(spec.backend);
  if (!kind) throw Error(Status::Internal, "world '" + spec.name + "' runs on a backend the table does not know");
  return kind->connect(*this, inc, plan.new_rank, spec, old->settings(), deadline);
}

void Context::memberLostWhileResizing(const World& w, int peer_rank, const std::string& detail) {
  Resizing r;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = resizing_.find(&w);
    if (it == resizing_.end()) return;
    r = it->second;
  }
  // An excluded member may go as it likes.
  if (!r.plan.kept(peer_rank) || peer_rank == r.plan.old_rank) return;
  watchdog_->formingMemberLost(w.name(), r.epoch, r.plan.new_rank, r.plan.new_size,
                               r.plan.new_rank_of[static_cast<size_t>(peer_rank)], w.epoch(), peer_rank, detail);
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
      // A retired handle's world lives on as its successor.
      if (b >= 0 && b < 3 && state != WorldState::Destroyed && state != WorldState::Retired) {
        ++now.worlds[b][state == WorldState::Broken ? 1 : 0];
      }
    }
  }
  now.store_up = store_up;
  return metrics_->snapshot(now);
}

}  // namespace mw
