#include "core/backends/nccl/nccl_world.h"

#include <thread>
#include <vector>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_world.h"
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

}  // namespace

std::unique_ptr<NcclWorld> NcclWorld::connect(std::shared_ptr<NcclThreads> threads, std::unique_ptr<UcxWorld> control,
                                              RedisPool& pool, const Incarnation& inc, int rank, int device,
                                              Deadline deadline) {
  const mwn_plugin& plugin = threads->plugin;
  const int size = inc.size();
  std::vector<char> id = exchangeId(plugin, pool, inc, rank, device, deadline);
  char err[kErrLen] = "";
  mwn_comm* comm = nullptr;
  int st = plugin.comm_start(reinterpret_cast<const unsigned char*>(id.data()), rank, size, device, &comm, err,
                             sizeof err);
  if (st != MWN_OK) throw Error(statusOf(st), std::string("cannot start the NCCL communicator: ") + err);
  // Only this thread knows the communicator yet; nothing can abort it but
  // the deadline.
  const auto started = Clock::now();
  for (;;) {
    st = plugin.comm_ready(comm, err, sizeof err);
    if (st == MWN_OK) break;
    if (st != MWN_PENDING || Clock::now() >= deadline) {
      plugin.comm_free(comm);
      if (st == MWN_PENDING) throw Error(Status::Timeout, "the NCCL communicator did not form in time");
      throw Error(statusOf(st), std::string("the NCCL communicator did not form: ") + err);
    }
    std::this_thread::sleep_for(
        std::min<Clock::duration>(ncclPauseAfter(Clock::now() - started), deadline - Clock::now()));
  }
  return std::unique_ptr<NcclWorld>(new NcclWorld(std::move(threads), std::move(control), comm));
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

void NcclWorld::releaseComm() noexcept {
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
  const auto grace = finalize ? kFinalizeGrace + kAbortGrace : kAbortGrace;
  if (!threads_->aborter.release(t, grace)) {
    MW_LOG(LogLevel::Warn, "the NCCL communicator's teardown still runs %lld ms after the world ended; leaving it "
           "to finish", static_cast<long long>(grace.count()));
  }
}

}  // namespace mw
