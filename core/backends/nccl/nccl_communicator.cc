#include "core/backends/nccl/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include <pthread.h>

#include "core/error.h"
#include "core/log.h"
#include "core/signals.h"
#include "core/store/kv_store.h"

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
// How long close() waits for ncclCommAbort before leaving it to finish,
// and free the communicator, on its own.
constexpr std::chrono::milliseconds kAbortGrace{5000};
const char kIdKey[] = "nccl-id";

// CUDA gives no way to sleep until an event completes that does not also
// put a host round trip between consecutive operations on the stream
// (cudaLaunchHostFunc) or ignore aborts (cudaEventSynchronize). So a waiter
// queries the event, sleeping between queries for a twentieth of the time
// it already waited: completion is seen at most ~5% late, and a long
// operation costs a few thousand cheap queries a second at most.
constexpr std::chrono::microseconds kFirstPause{5};
constexpr std::chrono::microseconds kLongestPause{500};

std::chrono::microseconds pauseAfter(Clock::duration waited) {
  auto p = std::chrono::duration_cast<std::chrono::microseconds>(waited) / 20;
  return std::clamp(p, kFirstPause, kLongestPause);
}

class NcclOp : public PendingOp {
 public:
  NcclOp(NcclCommunicator& comm, const mwn_plugin& plugin, mwn_op* op) : comm_(comm), plugin_(plugin), op_(op) {}
  ~NcclOp() override { plugin_.op_free(op_); }
  OpResult run(Deadline deadline) override { return comm_.wait(op_, deadline); }

 private:
  NcclCommunicator& comm_;
  const mwn_plugin& plugin_;
  mwn_op* op_;
};

std::vector<char> exchangeId(const mwn_plugin& plugin, RedisPool& pool, const std::string& prefix, int rank,
                             int size, int device, Deadline deadline) {
  KvStore store(pool, prefix, size, deadline);
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

std::unique_ptr<NcclCommunicator> NcclCommunicator::connect(const mwn_plugin& plugin,
                                                            std::unique_ptr<Communicator> liveness, RedisPool& pool,
                                                            const std::string& id_prefix, int rank, int size,
                                                            int device, Deadline deadline) {
  std::vector<char> id = exchangeId(plugin, pool, id_prefix, rank, size, device, deadline);
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
    std::this_thread::sleep_for(std::min<Clock::duration>(pauseAfter(Clock::now() - started), deadline - Clock::now()));
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(plugin, std::move(liveness), comm));
}

// Shared by the communicator and its abort thread; whichever is last frees
// the plugin's communicator.
struct NcclCommunicator::Teardown {
  std::mutex m;
  std::condition_variable cv;
  bool aborted = false;        // ncclCommAbort returned
  bool thread_frees = false;   // close() gave up waiting: the thread frees
};

NcclCommunicator::NcclCommunicator(const mwn_plugin& plugin, std::unique_ptr<Communicator> liveness,
                                   mwn_comm* comm)
    : plugin_(plugin), liveness_(std::move(liveness)), comm_(comm), teardown_(std::make_shared<Teardown>()) {}

NcclCommunicator::~NcclCommunicator() { close(); }

std::unique_ptr<PendingOp> NcclCommunicator::post(const OpDesc& op) {
  mwn_op_desc d{static_cast<int>(op.kind), op.sendbuf, op.recvbuf,          op.count,
                static_cast<int>(op.dtype), static_cast<int>(op.redop), op.peer};
  char err[kErrLen] = "";
  mwn_op* handle = nullptr;
  int st = plugin_.op_start(comm_, &d, &handle, err, sizeof err);
  if (st == MWN_OK) return std::make_unique<NcclOp>(*this, plugin_, handle);
  if (st == MWN_ERR_TRANSPORT) throw TransportError(err, -1);
  throw Error(statusOf(st), std::string(opName(op.kind)) + ": " + err);
}

OpResult NcclCommunicator::wait(mwn_op* op, Deadline deadline) {
  const auto started = Clock::now();
  char err[kErrLen];
  for (;;) {
    err[0] = 0;
    int st = plugin_.op_query(op, err, sizeof err);
    if (st == MWN_OK) return {};
    if (st == MWN_ERR_ARGUMENT) return {Status::InvalidArgument, err};
    if (st != MWN_PENDING) throw TransportError(err, -1);
    std::unique_lock<std::mutex> lock(m_);
    if (aborted_) throw TransportError("the world was aborted", -1);
    auto now = Clock::now();
    if (now >= deadline) throw TransportError("the NCCL operation was still running", -1);
    aborted_cv_.wait_until(lock, std::min<Deadline>(now + pauseAfter(now - started), deadline),
                           [&] { return aborted_; });
  }
}

void NcclCommunicator::idleWait() { liveness_->idleWait(); }

void NcclCommunicator::wake() noexcept { liveness_->wake(); }

void NcclCommunicator::abort() noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (aborted_ || closed_) return;
    aborted_ = true;
  }
  aborted_cv_.notify_all();
  liveness_->abort();
  try {
    SigpipeBlockedForNewThreads no_sigpipe;
    aborter_ = std::thread([plugin = &plugin_, comm = comm_, t = teardown_] {
      pthread_setname_np(pthread_self(), "mw:ncclabort");
      plugin->comm_abort(comm);
      std::lock_guard<std::mutex> lock(t->m);
      t->aborted = true;
      t->cv.notify_all();
      if (t->thread_frees) plugin->comm_free(comm);
    });
  } catch (const std::exception&) {
    plugin_.comm_abort(comm_);  // no thread to be had: abort here
    std::lock_guard<std::mutex> lock(teardown_->m);
    teardown_->aborted = true;
  }
}

void NcclCommunicator::close() noexcept {
  abort();
  {
    std::lock_guard<std::mutex> lock(m_);
    if (closed_) return;
    closed_ = true;
  }
  bool aborted;
  {
    std::unique_lock<std::mutex> lock(teardown_->m);
    aborted = teardown_->cv.wait_for(lock, kAbortGrace, [&] { return teardown_->aborted; });
    if (!aborted) teardown_->thread_frees = true;
  }
  if (aborter_.joinable()) {
    if (aborted) {
      aborter_.join();
    } else {
      MW_LOG(LogLevel::Warn, "ncclCommAbort still runs %lld ms after close; leaving it to finish",
             static_cast<long long>(kAbortGrace.count()));
      aborter_.detach();
    }
  }
  if (aborted) plugin_.comm_free(comm_);
  liveness_->close();
}

}  // namespace mw
