// The plugin's C table: argument checks, locking, and nothing thrown out.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "core/backends/nccl/plugin/nccl_comm.h"

struct mwn_comm {
  std::shared_ptr<mwnccl::Comm> comm;
};

struct mwn_op {
  std::shared_ptr<mwnccl::Comm> comm;
  std::shared_ptr<mwnccl::OpState> op;
};

namespace mwnccl {
namespace {

int say(char* err, size_t len, int status, const std::string& why) {
  if (err && len) std::snprintf(err, len, "%s", why.c_str());
  return status;
}

int say(char* err, size_t len, const Failure& f) { return say(err, len, f.status, f.why); }

// Runs `body`, turning what it throws into a status: nothing may unwind
// into the core.
template <typename F>
int guarded(char* err, size_t len, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return say(err, len, MWN_ERR_NO_MEMORY, "out of host memory in the NCCL plugin");
  } catch (const std::exception& e) {
    return say(err, len, MWN_ERR_BACKEND, std::string("NCCL plugin: ") + e.what());
  } catch (...) {
    return say(err, len, MWN_ERR_BACKEND, "NCCL plugin: unknown exception");
  }
}

int probe(int* device_count, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (device_count) *device_count = e == cudaSuccess ? n : 0;
    switch (e) {
      case cudaSuccess:
        if (n > 0) return MWN_OK;
        return say(err, len, MWN_ERR_UNSUPPORTED, "no CUDA device is visible to this process");
      case cudaErrorNoDevice:
        return say(err, len, MWN_ERR_UNSUPPORTED,
                   "no CUDA device: " + cudaWhy("cudaGetDeviceCount", e));
      case cudaErrorInsufficientDriver:
      case cudaErrorStubLibrary:
        return say(err, len, MWN_ERR_UNSUPPORTED,
                   "no usable CUDA driver: " + cudaWhy("cudaGetDeviceCount", e));
      default:
        return say(err, len, MWN_ERR_UNSUPPORTED, "CUDA is unusable here: " + cudaWhy("cudaGetDeviceCount", e));
    }
  });
}

int checkDevice(int device, char* err, size_t len) {
  int n = 0;
  int st = probe(&n, err, len);
  if (st != MWN_OK) return st;
  if (device < 0 || device >= n) {
    return say(err, len, MWN_ERR_ARGUMENT,
               "device " + std::to_string(device) + " is outside the " + std::to_string(n) +
                   " CUDA devices of this process [0, " + std::to_string(n) + ")");
  }
  return MWN_OK;
}

int badDevice(const DeviceScope& scope, char* err, size_t len) {
  return say(err, len, MWN_ERR_BACKEND, cudaWhy("cudaSetDevice", scope.error()));
}

int uniqueId(int device, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    int st = checkDevice(device, err, len);
    if (st != MWN_OK) return st;
    DeviceScope scope(device);
    if (scope.error() != cudaSuccess) return badDevice(scope, err, len);
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    if (r != ncclSuccess) return say(err, len, MWN_ERR_BACKEND, ncclWhy("ncclGetUniqueId", r, nullptr));
    static_assert(sizeof uid.internal == MW_NCCL_UNIQUE_ID_BYTES, "ncclUniqueId size");
    std::memcpy(id, uid.internal, MW_NCCL_UNIQUE_ID_BYTES);
    return MWN_OK;
  });
}

void release(Comm& c) {
  if (c.scratch) cudaFreeAsync(c.scratch, c.stream);
  if (c.stream) cudaStreamDestroy(c.stream);  // returns at once; queued work still finishes
  c.scratch = nullptr;
  c.stream = nullptr;
}

// A communicator's own stream and barrier word, with `device` current;
// its NCCL communicator is the caller's to make.
int newComm(int device, int rank, int size, std::shared_ptr<Comm>& out, char* err, size_t len) {
  auto c = std::make_shared<Comm>();
  c->device = device;
  c->rank = rank;
  c->size = size;
  cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) return say(err, len, MWN_ERR_BACKEND, cudaWhy("cudaStreamCreateWithFlags", e));
  // Stream-ordered, so neither allocating nor freeing it waits for the
  // work of other worlds on this device.
  e = cudaMallocAsync(&c->scratch, sizeof(int32_t), c->stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(c->scratch, 0, sizeof(int32_t), c->stream);
  if (e != cudaSuccess) {
    release(*c);
    return say(err, len, MWN_ERR_BACKEND, cudaWhy("allocating the barrier's device word", e));
  }
  out = std::move(c);
  return MWN_OK;
}

// The NCCL call that made `c`'s communicator answered `r`.
int started(std::shared_ptr<Comm> c, ncclResult_t r, const char* call, mwn_comm** out, char* err, size_t len) {
  if (r != ncclSuccess && r != ncclInProgress) {
    if (c->nccl) ncclCommAbort(c->nccl);
    c->nccl = nullptr;
    release(*c);
    return say(err, len, MWN_ERR_BACKEND, ncclWhy(call, r, nullptr));
  }
  *out = new mwn_comm{std::move(c)};
  return MWN_OK;
}

int commStart(const unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], int rank, int size, int device, mwn_comm** out,
              char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!id || !out || size < 1 || rank < 0 || rank >= size) {
      return say(err, len, MWN_ERR_ARGUMENT, "comm_start: bad arguments");
    }
    int st = checkDevice(device, err, len);
    if (st != MWN_OK) return st;
    DeviceScope scope(device);
    if (scope.error() != cudaSuccess) return badDevice(scope, err, len);
    std::shared_ptr<Comm> c;
    if ((st = newComm(device, rank, size, c, err, len)) != MWN_OK) return st;
    ncclUniqueId uid;
    std::memcpy(uid.internal, id, MW_NCCL_UNIQUE_ID_BYTES);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&c->nccl, size, uid, rank, &config);
    return started(std::move(c), r, "ncclCommInitRankConfig", out, err, len);
  });
}

// ---------------------------------------------------------------- resize
// Looked up in the loaded NCCL, not linked: a libnccl older than the
// headers the plugin was built with lacks them, and the plugin must still
// load there (the core then forms new communicators instead).

#ifndef NCCL_SHRINK_DEFAULT
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#endif

using ShrinkFn = ncclResult_t (*)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
using GrowFn = ncclResult_t (*)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*);
using GrowIdFn = ncclResult_t (*)(ncclComm_t, ncclUniqueId*);

struct ResizeCalls {
  ShrinkFn shrink = nullptr;
  GrowFn grow = nullptr;
  GrowIdFn grow_id = nullptr;
};

const ResizeCalls& resizeCalls() {
  static const ResizeCalls calls = [] {
    ResizeCalls c;
    // The libnccl this plugin was loaded with, found through one of its
    // own functions.
    void* lib = nullptr;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) && info.dli_fname) {
      lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    void* where = lib ? lib : RTLD_DEFAULT;
    c.shrink = reinterpret_cast<ShrinkFn>(dlsym(where, "ncclCommShrink"));
    c.grow = reinterpret_cast<GrowFn>(dlsym(where, "ncclCommGrow"));
    c.grow_id = reinterpret_cast<GrowIdFn>(dlsym(where, "ncclCommGetUniqueId"));
    return c;
  }();
  return calls;
}

int resizeSupport() {
  const ResizeCalls& c = resizeCalls();
  return (c.shrink ? MWN_RESIZE_SHRINK : 0) | (c.grow && c.grow_id ? MWN_RESIZE_GROW : 0);
}

int commShrink(mwn_comm* h, const int* exclude, int n, int abort, mwn_comm** out, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h || !out || n < 0 || (n > 0 && !exclude)) return say(err, len, MWN_ERR_ARGUMENT, "comm_shrink: bad arguments");
    const ResizeCalls& calls = resizeCalls();
    if (!calls.shrink) return say(err, len, MWN_ERR_UNSUPPORTED, "the loaded NCCL has no ncclCommShrink");
    Comm& parent = *h->comm;
    std::vector<int> ranks(exclude, exclude + n);
    int rank = parent.rank;
    for (int r : ranks) {
      if (r < 0 || r >= parent.size || r == parent.rank) return say(err, len, MWN_ERR_ARGUMENT, "comm_shrink: bad rank");
      if (r < parent.rank) --rank;
    }
    DeviceScope scope(parent.device);
    if (scope.error() != cudaSuccess) return badDevice(scope, err, len);
    std::shared_ptr<Comm> c;
    int st = newComm(parent.device, rank, parent.size - n, c, err, len);
    if (st != MWN_OK) return st;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(parent.m);
      if (parent.aborted || !parent.nccl) {
        release(*c);
        return say(err, len, MWN_ERR_TRANSPORT, "comm_shrink: the communicator was aborted");
      }
      r = calls.shrink(parent.nccl, ranks.data(), n, &c->nccl, &config, abort ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT);
    }
    return started(std::move(c), r, "ncclCommShrink", out, err, len);
  });
}

int growId(mwn_comm* h, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h || !id) return say(err, len, MWN_ERR_ARGUMENT, "grow_id: bad arguments");
    const ResizeCalls& calls = resizeCalls();
    if (!calls.grow_id) return say(err, len, MWN_ERR_UNSUPPORTED, "the loaded NCCL has no ncclCommGetUniqueId");
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    std::lock_guard<std::mutex> lock(c.m);
    ncclUniqueId uid;
    ncclResult_t r = calls.grow_id(c.nccl, &uid);
    if (r != ncclSuccess) return say(err, len, MWN_ERR_BACKEND, ncclWhy("ncclCommGetUniqueId", r, c.nccl));
    std::memcpy(id, uid.internal, MW_NCCL_UNIQUE_ID_BYTES);
    return MWN_OK;
  });
}

int commGrow(mwn_comm* h, int size, const unsigned char* id, int rank, int device, mwn_comm** out, char* err,
             size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!out || size < 1 || (!h && (!id || rank < 0 || rank >= size))) {
      return say(err, len, MWN_ERR_ARGUMENT, "comm_grow: bad arguments");
    }
    const ResizeCalls& calls = resizeCalls();
    if (!calls.grow) return say(err, len, MWN_ERR_UNSUPPORTED, "the loaded NCCL has no ncclCommGrow");
    if (h) {
      device = h->comm->device;
      rank = h->comm->rank;
    } else {
      int st = checkDevice(device, err, len);
      if (st != MWN_OK) return st;
    }
    DeviceScope scope(device);
    if (scope.error() != cudaSuccess) return badDevice(scope, err, len);
    std::shared_ptr<Comm> c;
    int st = newComm(device, rank, size, c, err, len);
    if (st != MWN_OK) return st;
    ncclUniqueId uid;
    if (id) std::memcpy(uid.internal, id, MW_NCCL_UNIQUE_ID_BYTES);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r;
    if (h) {
      std::lock_guard<std::mutex> lock(h->comm->m);
      r = calls.grow(h->comm->nccl, size, id ? &uid : nullptr, -1, &c->nccl, &config);
    } else {
      r = calls.grow(nullptr, size, &uid, rank, &c->nccl, &config);
    }
    return started(std::move(c), r, "ncclCommGrow", out, err, len);
  });
}

int commReady(mwn_comm* h, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h) return say(err, len, MWN_ERR_ARGUMENT, "comm_ready: NULL communicator");
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    std::lock_guard<std::mutex> lock(c.m);
    bool pending = false;
    Failure f = progress(c, pending);
    if (f) return say(err, len, f);
    return pending ? MWN_PENDING : MWN_OK;
  });
}

// The buffers `d` touches on this rank must be device memory of `device`:
// NCCL would otherwise fault on the device or read host memory as if it
// were the GPU's.
Failure checkBuffers(const Comm& c, const mwn_op_desc& d) {
  if (d.count == 0 || d.kind == MWN_BARRIER) return {};
  const bool root = d.peer == c.rank;
  bool send = true, recv = true;
  switch (d.kind) {
    case MWN_SEND: recv = false; break;
    case MWN_RECV:
    case MWN_BROADCAST: send = false; break;
    case MWN_REDUCE:
    case MWN_GATHER: recv = root; break;
    case MWN_SCATTER: send = root; break;
    default: break;
  }
  auto check = [&](const void* p, const char* name) -> Failure {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
      cudaGetLastError();  // not sticky; keep it from showing up later
      return {MWN_ERR_ARGUMENT, std::string(name) + " is not memory CUDA knows: " + cudaWhy("cudaPointerGetAttributes", e)};
    }
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", p);
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) {
      return {MWN_ERR_ARGUMENT, std::string(name) + " " + addr +
                                    " is host memory; an NCCL world moves device memory of CUDA device " +
                                    std::to_string(c.device)};
    }
    if (a.device != c.device) {
      return {MWN_ERR_ARGUMENT, std::string(name) + " " + addr + " is on CUDA device " + std::to_string(a.device) +
                                    ", but this world uses device " + std::to_string(c.device)};
    }
    return {};
  };
  if (send) {
    if (Failure f = check(d.sendbuf, "sendbuf")) return f;
  }
  if (recv && d.recvbuf != d.sendbuf) {
    if (Failure f = check(d.recvbuf, "recvbuf")) return f;
  }
  return {};
}

int opStart(mwn_comm* h, const mwn_op_desc* d, mwn_op** out, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h || !d || !out) return say(err, len, MWN_ERR_ARGUMENT, "op_start: NULL argument");
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    if (scope.error() != cudaSuccess) return badDevice(scope, err, len);
    if (Failure f = checkBuffers(c, *d)) return say(err, len, f);
    auto op = std::make_shared<OpState>();
    op->desc = *d;
    std::lock_guard<std::mutex> lock(c.m);
    if (c.aborted) return say(err, len, MWN_ERR_TRANSPORT, "the world was aborted");
    if (c.failure) return say(err, len, c.failure);
    const bool self = (d->kind == MWN_SEND || d->kind == MWN_RECV) && d->peer == c.rank;
    if (self) {
      issueSelf(c, op);
    } else {
      issue(c, op);
    }
    *out = new mwn_op{h->comm, std::move(op)};
    return MWN_OK;
  });
}

int opQuery(mwn_op* h, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h) return say(err, len, MWN_ERR_ARGUMENT, "op_query: NULL operation");
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    std::lock_guard<std::mutex> lock(c.m);
    bool pending = false;
    Failure f = query(c, *h->op, pending);
    if (f) return say(err, len, f);
    return pending ? MWN_PENDING : MWN_OK;
  });
}

void opFree(mwn_op* h) { delete h; }

void commAbort(mwn_comm* h) {
  if (!h) return;
  try {
    std::lock_guard<std::mutex> lock(h->comm->m);
    abortComm(*h->comm);
  } catch (...) {
  }
}

int commFinalize(mwn_comm* h, int timeout_ms, char* err, size_t len) {
  return guarded(err, len, [&]() -> int {
    if (!h) return say(err, len, MWN_ERR_ARGUMENT, "comm_finalize: NULL communicator");
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    auto pause = std::chrono::microseconds(50);
    bool finalizing = false;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(c.m);
        bool pending = false;
        // Operations NCCL had not taken yet go in first.
        Failure f = progress(c, pending);
        if (f) return say(err, len, f);
        if (!pending && !finalizing) {
          ncclResult_t r = ncclCommFinalize(c.nccl);
          if (r != ncclSuccess && r != ncclInProgress) {
            return say(err, len, MWN_ERR_BACKEND, ncclWhy("ncclCommFinalize", r, c.nccl));
          }
          finalizing = true;
          continue;  // progress() now reports the finalization
        }
        if (!pending && finalizing) {
          c.finalized = true;
          return MWN_OK;
        }
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return say(err, len, MWN_PENDING,
                   std::string(finalizing ? "ncclCommFinalize" : "the operations before ncclCommFinalize") +
                       " did not finish in " + std::to_string(timeout_ms) + " ms");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  });
}

void commFree(mwn_comm* h) {
  if (!h) return;
  try {
    Comm& c = *h->comm;
    DeviceScope scope(c.device);
    std::lock_guard<std::mutex> lock(c.m);
    if (c.finalized && !c.aborted && c.nccl) {
      ncclCommDestroy(c.nccl);
      c.nccl = nullptr;
    }
    abortComm(c);
    release(c);
  } catch (...) {
  }
  delete h;
}

int linkedNcclVersion() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

}  // namespace
}  // namespace mwnccl

extern "C" __attribute__((visibility("default"))) const mwn_plugin* mw_nccl_plugin_v1(void) {
  static const mwn_plugin table = {
      MW_NCCL_PLUGIN_ABI,     mwnccl::linkedNcclVersion(), mwnccl::probe,     mwnccl::uniqueId,
      mwnccl::commStart,      mwnccl::commReady,           mwnccl::opStart,   mwnccl::opQuery,
      mwnccl::opFree,         mwnccl::commAbort,           mwnccl::commFree,  mwnccl::commFinalize,
      mwnccl::resizeSupport,  mwnccl::commShrink,          mwnccl::growId,    mwnccl::commGrow,
  };
  return &table;
}
