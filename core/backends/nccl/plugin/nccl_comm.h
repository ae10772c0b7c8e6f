// One world's NCCL communicator, its CUDA stream and the operations issued
// on it. Everything here runs under Comm::m, which also serialises NCCL
// calls on the communicator as NCCL requires.
//
// A non-blocking communicator may answer an operation with ncclInProgress:
// NCCL is still enqueuing it, and no other call may touch the communicator
// until ncclCommGetAsyncError says ncclSuccess. Operations issued meanwhile
// wait in `backlog`, and whoever next queries an operation moves the
// communicator on (progress()), so issuing never waits for a peer.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/backends/nccl/nccl_plugin_abi.h"

namespace mwnccl {

// A failure with the plugin status to report it under.
struct Failure {
  int status = MWN_OK;
  std::string why;
  explicit operator bool() const { return status != MWN_OK; }
};

// Makes a device current on this thread for the scope's lifetime and then
// restores the previous one: the calling thread may be the program's, whose
// current device is its own business.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    error_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

struct OpState {
  enum class Stage { Waiting, Enqueuing, Recorded, Done, Failed };

  ~OpState();

  mwn_op_desc desc{};
  Stage stage = Stage::Waiting;
  Failure failure;                 // when Failed
  cudaEvent_t event = nullptr;     // recorded behind the operation's work
  // Stream work that must follow the NCCL call (copying an in-place
  // result into place, freeing a temporary); run when the call is enqueued.
  std::function<cudaError_t(cudaStream_t)> after;
  const void* copy_from = nullptr;          // a recv from self: the matching send's buffer
  std::shared_ptr<OpState> completes_with;  // a send to self: done when its recv's copy is
};

struct Comm {
  int device = 0, rank = 0, size = 0;
  std::mutex m;
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;  // device memory the barrier reduces
  bool aborted = false;
  bool finalized = false;   // ncclCommFinalize flushed everything: destroy, not abort
  Failure failure;          // the first error of the communicator
  std::shared_ptr<OpState> enqueuing;  // answered ncclInProgress
  std::deque<std::shared_ptr<OpState>> backlog;
  std::deque<std::shared_ptr<OpState>> self_sends, self_recvs;  // not matched yet
};

// Under c.m. The communicator's state: MWN_OK (formed, nothing in
// progress), MWN_PENDING (NCCL still initialising or enqueuing) or its
// failure. Issues backlog operations once NCCL is ready for them.
Failure progress(Comm& c, bool& pending);

// Under c.m: issues `op` now or behind what already waits.
void issue(Comm& c, const std::shared_ptr<OpState>& op);

// Under c.m: a send to or a recv from this rank, matched in FIFO order.
void issueSelf(Comm& c, const std::shared_ptr<OpState>& op);

// Under c.m: MWN_OK, MWN_PENDING or the operation's or communicator's failure.
Failure query(Comm& c, OpState& op, bool& pending);

// Under c.m: ncclCommAbort once.
void abortComm(Comm& c);

// The NCCL call (plus the stream work around it) for one operation, with
// the communicator's device current; in launch.cc. Returns NCCL's answer; CUDA failures come back as
// ncclUnhandledCudaError with `why` set.
ncclResult_t launch(Comm& c, OpState& op, std::string& why);

size_t bytesOf(const mwn_op_desc& d);  // count elements of d.dtype

std::string cudaWhy(const char* call, cudaError_t e);
std::string ncclWhy(const char* call, ncclResult_t r, ncclComm_t comm);

}  // namespace mwnccl
