#include "core/backends/nccl/plugin/nccl_comm.h"

namespace mwnccl {

std::string cudaWhy(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

std::string ncclWhy(const char* call, ncclResult_t r, ncclComm_t comm) {
  std::string why = std::string(call) + ": " + ncclGetErrorString(r);
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  if (last && *last) why += " (" + std::string(last) + ")";
  return why;
}

OpState::~OpState() {
  // Releasing an event whose work is still queued is allowed: CUDA frees
  // it once the work is done.
  if (event) cudaEventDestroy(event);
}

namespace {

void fail(OpState& op, Failure f) {
  op.stage = OpState::Stage::Failed;
  op.failure = std::move(f);
}

// NCCL errors that leave the communicator unusable break the world; a
// refused argument only fails the operation.
int statusOf(ncclResult_t r) {
  switch (r) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return MWN_ERR_ARGUMENT;
    case ncclRemoteError:
    case ncclSystemError: return MWN_ERR_TRANSPORT;
    default: return MWN_ERR_BACKEND;
  }
}

void failComm(Comm& c, Failure f) {
  if (!c.failure) c.failure = std::move(f);
}

// The operation's work is on the stream: what must follow it, then its event.
void record(Comm& c, OpState& op) {
  if (op.after) {
    cudaError_t e = op.after(c.stream);
    op.after = nullptr;
    if (e != cudaSuccess) {
      Failure f{MWN_ERR_BACKEND, cudaWhy("queueing work after the NCCL call", e)};
      failComm(c, f);
      fail(op, f);
      return;
    }
  }
  cudaError_t e = cudaEventCreateWithFlags(&op.event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(op.event, c.stream);
  if (e != cudaSuccess) {
    Failure f{MWN_ERR_BACKEND, cudaWhy("cudaEventRecord", e)};
    failComm(c, f);
    fail(op, f);
    return;
  }
  op.stage = OpState::Stage::Recorded;
}

// Calls NCCL for `op`; true when NCCL is free for the next call.
bool start(Comm& c, const std::shared_ptr<OpState>& op) {
  std::string why;
  ncclResult_t r = launch(c, *op, why);
  if (r == ncclSuccess) {
    record(c, *op);
    return true;
  }
  if (r == ncclInProgress) {
    op->stage = OpState::Stage::Enqueuing;
    c.enqueuing = op;
    return false;
  }
  Failure f{statusOf(r), why};
  if (f.status != MWN_ERR_ARGUMENT) failComm(c, f);
  fail(*op, f);
  return true;
}

}  // namespace

Failure progress(Comm& c, bool& pending) {
  pending = false;
  if (c.aborted) return {MWN_ERR_TRANSPORT, "the world was aborted"};
  if (c.failure) return c.failure;
  ncclResult_t async = ncclSuccess;
  ncclResult_t r = ncclCommGetAsyncError(c.nccl, &async);
  if (r != ncclSuccess) {
    failComm(c, {MWN_ERR_BACKEND, ncclWhy("ncclCommGetAsyncError", r, c.nccl)});
    return c.failure;
  }
  if (async == ncclInProgress) {
    pending = true;
    return {};
  }
  if (async != ncclSuccess) {
    failComm(c, {async == ncclRemoteError || async == ncclSystemError ? MWN_ERR_TRANSPORT : MWN_ERR_BACKEND,
                 ncclWhy("NCCL reported an asynchronous error", async, c.nccl)});
    return c.failure;
  }
  if (c.enqueuing) {
    record(c, *c.enqueuing);
    c.enqueuing.reset();
  }
  while (!c.backlog.empty() && !c.failure) {
    auto op = std::move(c.backlog.front());
    c.backlog.pop_front();
    if (!start(c, op)) {
      pending = true;
      break;
    }
  }
  return c.failure;
}

void issue(Comm& c, const std::shared_ptr<OpState>& op) {
  if (c.enqueuing || !c.backlog.empty()) {
    c.backlog.push_back(op);
    return;
  }
  start(c, op);
}

void issueSelf(Comm& c, const std::shared_ptr<OpState>& op) {
  const bool send = op->desc.kind == MWN_SEND;
  auto& partners = send ? c.self_recvs : c.self_sends;
  if (partners.empty()) {
    (send ? c.self_sends : c.self_recvs).push_back(op);
    return;
  }
  std::shared_ptr<OpState> other = std::move(partners.front());
  partners.pop_front();
  OpState& s = send ? *op : *other;
  OpState& r = send ? *other : *op;
  const size_t sent = bytesOf(s.desc), room = bytesOf(r.desc);
  if (sent != room) {
    fail(s, {MWN_ERR_ARGUMENT, "send of " + std::to_string(sent) + " bytes met a recv of " + std::to_string(room) +
                                   " bytes on this same rank"});
    fail(r, {MWN_ERR_ARGUMENT, "recv of " + std::to_string(room) + " bytes met a send of " + std::to_string(sent) +
                                   " bytes from this same rank"});
    return;
  }
  r.copy_from = s.desc.sendbuf;
  s.completes_with = send ? other : op;
  issue(c, send ? other : op);
}

Failure query(Comm& c, OpState& op, bool& pending) {
  pending = false;
  if (op.stage == OpState::Stage::Failed) return op.failure;
  if (op.stage == OpState::Stage::Done) return {};
  Failure f = progress(c, pending);
  if (f) return f;
  OpState& target = op.completes_with ? *op.completes_with : op;
  if (target.stage == OpState::Stage::Failed) return target.failure;
  if (target.stage != OpState::Stage::Recorded && target.stage != OpState::Stage::Done) {
    pending = true;
    return {};
  }
  if (target.stage == OpState::Stage::Recorded) {
    cudaError_t e = cudaEventQuery(target.event);
    if (e == cudaErrorNotReady) {
      pending = true;
      return {};
    }
    if (e != cudaSuccess) {
      failComm(c, {MWN_ERR_BACKEND, cudaWhy("cudaEventQuery", e)});
      return c.failure;
    }
    target.stage = OpState::Stage::Done;
  }
  op.stage = OpState::Stage::Done;
  return {};
}

void abortComm(Comm& c) {
  if (c.aborted) return;
  c.aborted = true;
  if (!c.nccl) return;
  DeviceScope device(c.device);
  // Stops the kernels of this communicator only; the events behind them
  // then complete, and nothing waits on them any more.
  ncclCommAbort(c.nccl);
  c.nccl = nullptr;
  c.enqueuing.reset();
  c.backlog.clear();
  c.self_sends.clear();
  c.self_recvs.clear();
}

}  // namespace mwnccl
