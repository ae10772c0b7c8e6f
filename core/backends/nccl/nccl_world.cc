#include "core/backends/nccl/nccl_world.h"

#include <functional>
#include <thread>
#include <vector>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/backend_registry.h"
#include "core/resize/resize_plan.h"
#include "core/communicator.h"
#include "core/error.h"
#include "core/log.h"
#include "core/request.h"
#include "core/store/kv_store.h"
#include "core/world.h"

namespace mw {

static_assert(MWN_SEND == static_cast<int>(OpKind::Send) && MWN_BARRIER == static_cast<int>(OpKind::Barrier) &&
                  MWN_REDUCE_SCATTER == static_cast<int>(OpKind::ReduceScatter),
              "plugin operation kinds follow OpKind");
static_assert(MWN_INT8 == static_cast<int>(DType::Int8) && MWN_BFLOAT16 == static_cast<int>(DType::BFloat16) &&
                  MWN_FLOAT64 == static_cast<int>(DType::Float64),
              "plugin element types follow DType");
static_assert(MWN_SUM == static_cast<int>(RedOp::Sum) && MWN_MIN == static_cast<int>(RedOp::Min) &&
                  MWN_AVG == static_cast<int>(RedOp::Avg),
              "plugin reductions follow RedOp");

namespace {

constexpr size_t kErrLen = 512;
// How long stop() waits for ncclCommAbort before leaving it to finish,
// and free the communicator, on the aborter's thread.
constexpr std::chrono::milliseconds kAbortGrace{5000};
// How long a world destroyed while healthy waits for what it sent to be
// flushed (ncclCommFinalize) before it aborts the communicator.
constexpr std::chrono::milliseconds kFinalizeGrace{2000};
// How long operations under way may go without one finishing after a
// member left, before the world aborts them.
constexpr std::chrono::milliseconds kDepartureGrace{1000};
const char kIdKey[] = "nccl-id";

std::vector<char> exchangeId(const mwn_plugin& plugin, RedisPool& pool, const Incarnation& inc, int rank,
                             int device, Deadline deadline) {
  KvStore store(pool, inc, "n:", deadline);
  if (rank == 0) {
    std::vector<char> id(MW_NCCL_UNIQUE_ID_BYTES);
    char err[kErrLen] = "";
    if (plugin.unique_id(device, reinterpret_cast<unsigned char*>(id.data()), err, sizeof err) != MWN_OK) {
      throw Error(Status::Backend, std::string("cannot make the NCCL id: ") + err);
    }
    store.set(kIdKey, id);
    return id;
  }
  std::vector<char> id = store.get(kIdKey);
  if (id.size() != MW_NCCL_UNIQUE_ID_BYTES) {
    throw Error(Status::Store, "the NCCL id in Redis has " + std::to_string(id.size()) + " bytes, not " +
                                   std::to_string(MW_NCCL_UNIQUE_ID_BYTES));
  }
  return id;
}

Status statusOf(int plugin_status) {
  switch (plugin_status) {
    case MWN_ERR_ARGUMENT: return Status::InvalidArgument;
    case MWN_ERR_UNSUPPORTED: return Status::Unsupported;
    case MWN_ERR_NO_MEMORY: return Status::NoMemory;
    default: return Status::Backend;
  }
}

// Polls a communicator the plugin started until it formed; frees it and
// throws when it cannot, or not before `deadline`. Only this thread knows
// it yet: nothing can abort it but the deadline.
void awaitComm(const mwn_plugin& plugin, mwn_comm* comm, Deadline deadline) {
  char err[kErrLen] = "";
  const auto started = Clock::now();
  for (;;) {
    const int st = plugin.comm_ready(comm, err, sizeof err);
    if (st == MWN_OK) return;
    if (st != MWN_PENDING || Clock::now() >= deadline) {
      plugin.comm_free(comm);
      if (st == MWN_PENDING) throw Error(Status::Timeout, "the NCCL communicator did not form in time");
      throw Error(statusOf(st), std::string("the NCCL communicator did not form: ") + err);
    }
    std::this_thread::sleep_for(
        std::min<Clock::duration>(ncclPauseAfter(Clock::now() - started), deadline - Clock::now()));
  }
}

// How the members of a resized world get their communicator: each says
// whether it can keep its own ("can<rank>"), and rank 0 decides for all
// ("how": 'k' to shrink or grow the old one, with the id a grow's
// newcomers join with; 'n' for a new one, with its id).
struct CommPlan {
  bool keep = false;
  std::vector<char> id;  // MW_NCCL_UNIQUE_ID_BYTES, or empty (a shrink that keeps)
};

CommPlan agreeOnComm(const mwn_plugin& plugin, RedisPool& pool, const Incarnation& inc, int rank, bool can,
                     int device, const std::function<std::vector<char>()>& grow_id, Deadline deadline) {
  KvStore store(pool, inc, "n:", deadline);
  store.set("can" + std::to_string(rank), {can ? '1' : '0'});
  std::vector<char> how;
  if (rank == 0) {
    bool all = can;
    for (int r = 1; r < inc.size() && all; ++r) all = store.get("can" + std::to_string(r)) == std::vector<char>{'1'};
    how.push_back(all ? 'k' : 'n');
    std::vector<char> id;
    if (!all) {
      id.resize(MW_NCCL_UNIQUE_ID_BYTES);
      char err[kErrLen] = "";
      if (plugin.unique_id(device, reinterpret_cast<unsigned char*>(id.data()), err, sizeof err) != MWN_OK) {
        throw Error(Status::Backend, std::string("cannot make the NCCL id: ") + err);
      }
    } else if (grow_id) {
      id = grow_id();
    }
    how.insert(how.end(), id.begin(), id.end());
    store.set("how", how);
  } else {
    how = store.get("how");
  }
  const bool ok = !how.empty() && (how[0] == 'k' || how[0] == 'n') &&
                  (how.size() == 1 + MW_NCCL_UNIQUE_ID_BYTES || (how.size() == 1 && how[0] == 'k'));
  if (!ok) {
    throw Error(Status::Store, "the NCCL plan in Redis under " + store.prefix() + "how has " +
                                   std::to_string(how.size()) + " bytes, not one this library writes");
  }
  return CommPlan{how[0] == 'k', std::vector<char>(how.begin() + 1, how.end())};
}

}  // namespace

WorldSettings ncclControlSettings(const WorldSettings& world) {
  WorldSettings control = world;
  control.same_host_path = false;
  control.metrics = nullptr;  // its few control messages are no data
  return control;
}

std::unique_ptr<NcclWorld> NcclWorld::connect(std::shared_ptr<NcclThreads> threads, std::unique_ptr<UcxWorld> control,
                                              RedisPool& pool, const Incarnation& inc, int rank, int device,
                                              Deadline deadline) {
  const mwn_plugin& plugin = threads->plugin;
  const int size = inc.size();
  char err[kErrLen] = "";
  mwn_comm* comm = nullptr;
  int st;
  const Lineage& lineage = inc.lineage();
  if (lineage.how == Lineage::How::Grown && rank >= lineage.old_size) {
    // A newcomer of a grow: it joins the members' communicator where they
    // grow it (NcclWorld::grow), else the new one they all form.
    const CommPlan how =
        agreeOnComm(plugin, pool, inc, rank, plugin.resize_support() & MWN_RESIZE_GROW, device, nullptr, deadline);
    const auto* id = reinterpret_cast<const unsigned char*>(how.id.data());
    st = how.keep ? plugin.comm_grow(nullptr, size, id, rank, device, &comm, err, sizeof err)
                  : plugin.comm_start(id, rank, size, device, &comm, err, sizeof err);
  } else {
    std::vector<char> id = exchangeId(plugin, pool, inc, rank, device, deadline);
    st = plugin.comm_start(reinterpret_cast<const unsigned char*>(id.data()), rank, size, device, &comm, err,
                           sizeof err);
  }
  if (st != MWN_OK) throw Error(statusOf(st), std::string("cannot start the NCCL communicator: ") + err);
  awaitComm(plugin, comm, deadline);
  return std::unique_ptr<NcclWorld>(new NcclWorld(std::move(threads), std::move(control), comm));
}

std::unique_ptr<WorldBackend> NcclWorld::shrink(const ResizePlan& plan, BackendServices& services,
                                                const Incarnation& next, const WorldSpec& spec,
                                                const WorldSettings& settings, Deadline deadline) {
  return resized(plan, services, next, spec, settings, deadline);
}

std::unique_ptr<WorldBackend> NcclWorld::grow(const ResizePlan& plan, BackendServices& services,
                                              const Incarnation& next, const WorldSpec& spec,
                                              const WorldSettings& settings, Deadline deadline) {
  return resized(plan, services, next, spec, settings, deadline);
}

std::unique_ptr<WorldBackend> NcclWorld::resized(const ResizePlan& plan, BackendServices& services,
                                                 const Incarnation& next, const WorldSpec& spec,
                                                 const WorldSettings& settings, Deadline deadline) {
  const WorldSettings control_settings = ncclControlSettings(settings);
  std::unique_ptr<UcxWorld> control = control_->resized(plan, services.pool(), next, control_settings, deadline);
  if (!control) {
    control = UcxWorld::connect(services.ucx(), services.pool(), next, plan.new_rank, plan.new_size,
                                control_settings, deadline);
  }
  const mwn_plugin& plugin = threads_->plugin;
  const bool shrinking = plan.kind == ResizeKind::Shrink;
  bool alive, cancelled;
  {
    std::lock_guard<std::mutex> lock(m_);
    alive = !teardown_ && !stopped_;
    cancelled = aborted_;
  }
  const bool can = alive && (plugin.resize_support() & (shrinking ? MWN_RESIZE_SHRINK : MWN_RESIZE_GROW));
  auto grow_id = [&] {
    std::vector<char> id(MW_NCCL_UNIQUE_ID_BYTES);
    char err[kErrLen] = "";
    if (plugin.grow_id(comm_, reinterpret_cast<unsigned char*>(id.data()), err, sizeof err) != MWN_OK) {
      throw Error(Status::Backend, std::string("cannot make the id of the grow (ncclCommGetUniqueId): ") + err);
    }
    return id;
  };
  const CommPlan how = agreeOnComm(plugin, services.pool(), next, plan.new_rank, can, spec.device,
                                   shrinking ? std::function<std::vector<char>()>() : grow_id, deadline);
  const auto* id = reinterpret_cast<const unsigned char*>(how.id.data());
  char err[kErrLen] = "";
  mwn_comm* comm = nullptr;
  int st;
  if (!how.keep) {
    st = plugin.comm_start(id, plan.new_rank, plan.new_size, spec.device, &comm, err, sizeof err);
  } else if (shrinking) {
    st = plugin.comm_shrink(comm_, plan.excluded.data(), static_cast<int>(plan.excluded.size()), cancelled ? 1 : 0,
                            &comm, err, sizeof err);
  } else {
    st = plugin.comm_grow(comm_, plan.new_size, plan.new_rank == 0 ? id : nullptr, plan.new_rank, spec.device, &comm,
                          err, sizeof err);
  }
  if (st != MWN_OK) {
    throw Error(statusOf(st), std::string("cannot ") + (how.keep ? resizeVerb(plan.kind) : "start") +
                                  " the NCCL communicator: " + err);
  }
  awaitComm(plugin, comm, deadline);
  return std::unique_ptr<NcclWorld>(new NcclWorld(threads_, std::move(control), comm));
}

void NcclWorld::watchMembers(std::function<void(int peer, const std::string& why)> lost) {
  control_->watchMembers(std::move(lost));
}

void NcclWorld::unwatchMembers() noexcept { control_->unwatchMembers(); }

void NcclWorld::retire(WorldBackend*) noexcept {
  {
    std::unique_lock<std::mutex> lock(m_);
    if (stopped_) return;
    stopped_ = true;
    submitted_.wait(lock, [&] { return submitting_ == 0; });
    // A healthy parent is finalized; one that broke was aborted then.
    if (!aborted_) finalize_ = true;
    aborted_ = true;
  }
  threads_->poller.forget(this);
  control_->retire(nullptr);
  // Its successor formed, so nothing runs on it any more (NCCL_SHRINK_ABORT
  // ended what did): the aborter frees it whenever NCCL lets go, never
  // holding the caller, as destroying an aborted parent can hang in NCCL.
  releaseComm(false);
}

NcclWorld::NcclWorld(std::shared_ptr<NcclThreads> threads, std::unique_ptr<UcxWorld> control, mwn_comm* comm)
    : threads_(std::move(threads)), control_(std::move(control)), comm_(comm) {}

NcclWorld::~NcclWorld() {
  // Never started (the commit failed): only the communicator to free; the
  // control world cleans up after itself.
  if (!stopped_) releaseComm();
}

void NcclWorld::start(World& world) {
  world_ = &world;
  control_->start(world);
}

void NcclWorld::submit(const OpDesc& op, const std::shared_ptr<Request>& r) {
  bool open;
  {
    std::lock_guard<std::mutex> lock(m_);
    open = !aborted_ && !stopped_;
    if (open) ++submitting_;
  }
  if (!open) {
    OpResult f = world_->failure();
    r->complete(f.status, f.detail);
    return;
  }
  // stop() lets the communicator go only once no submit is inside it.
  struct Leave {
    NcclWorld& w;
    ~Leave() {
      std::lock_guard<std::mutex> lock(w.m_);
      --w.submitting_;
      w.submitted_.notify_all();
    }
  } leave{*this};
  mwn_op_desc d{static_cast<int>(op.kind), op.sendbuf, op.recvbuf,          op.count,
                static_cast<int>(op.dtype), static_cast<int>(op.redop), op.peer};
  char err[kErrLen] = "";
  mwn_op* handle = nullptr;
  const int st = threads_->plugin.op_start(comm_, &d, &handle, err, sizeof err);
  if (st == MWN_OK) {
    threads_->poller.watch(this, r, handle, world_->opTimeout());
    return;
  }
  if (st == MWN_ERR_TRANSPORT) throw TransportError(err, -1);
  throw Error(statusOf(st), std::string(opName(op.kind)) + ": " + err);
}

// An operation on the stream cannot be taken back: only breaking the
// world stops it.
bool NcclWorld::cancel(Request&) noexcept { return false; }

OpResult NcclWorld::failure() const { return world_->failure(); }

void NcclWorld::operationFailed(const std::string& why, BreakCause cause, Clock::time_point evidence) noexcept {
  world_->breakWorld(-1, why, true, cause, evidence);
}

void NcclWorld::abort() noexcept {
  // Again for every later failure: the control world may have let a
  // departure through that must now end everything.
  control_->abort();
  const bool departure = control_->engine().call([this] { return !control_->aborted(); });
  if (departure) {
    // A member left after everything it sent: what is under way may still
    // finish without it (its last collective, a receive of its last send),
    // as on the other backends. NCCL cannot say what an operation still
    // needs, so progress decides.
    std::lock_guard<std::mutex> lock(m_);
    if (aborted_ || draining_) return;
    draining_ = true;
    threads_->poller.drain(this, kDepartureGrace,
                           "no operation finished for " + std::to_string(kDepartureGrace.count()) +
                               " ms after a member left");
    return;
  }
  const bool destroyed = world_->failure().status == Status::Cancelled;
  {
    std::lock_guard<std::mutex> lock(m_);
    if (aborted_) return;
    aborted_ = true;
    // A world destroyed while healthy ends its communicator in stop(), by
    // ncclCommFinalize: aborting it at once could cut off what this rank
    // last sent, which its peers are still receiving.
    finalize_ = destroyed && !draining_;
    // Queued under the lock, so that stop() finds it and frees the
    // communicator only after it ran. Without memory for it, stop()
    // aborts and frees in one go.
    if (!finalize_) {
      try {
        teardown_ = threads_->aborter.abort(comm_);
      } catch (const std::exception&) {
      }
    }
  }
  threads_->poller.abort(this);
}

void NcclWorld::stop() noexcept {
  {
    std::unique_lock<std::mutex> lock(m_);
    if (stopped_) return;
    stopped_ = true;
    submitted_.wait(lock, [&] { return submitting_ == 0; });
  }
  // Nothing polls the communicator's operations after this.
  threads_->poller.forget(this);
  // The goodbyes go before the communicator does, so the others hear of it
  // at once.
  control_->stop();
  releaseComm();
}

void NcclWorld::releaseComm(bool wait) noexcept {
  std::shared_ptr<NcclAborter::Teardown> t;
  bool finalize;
  {
    std::lock_guard<std::mutex> lock(m_);
    t = std::move(teardown_);
    finalize = finalize_;
  }
  if (!t) {
    try {
      t = finalize ? threads_->aborter.finalize(comm_, kFinalizeGrace) : threads_->aborter.abort(comm_);
    } catch (const std::exception&) {
      threads_->plugin.comm_free(comm_);  // aborts first
      return;
    }
  }
  if (!wait) return threads_->aborter.handOver(t);
  const auto grace = finalize ? kFinalizeGrace + kAbortGrace : kAbortGrace;
  if (!threads_->aborter.release(t, grace)) {
    MW_LOG(LogLevel::Warn, "the NCCL communicator's teardown still runs %lld ms after the world ended; leaving it "
           "to finish", static_cast<long long>(grace.count()));
  }
}

}  // namespace mw
