// A stand-in for libmultiworld-nccl that runs on host memory, for testing
// the core's side of the plugin ABI (NCCL worlds on the engine: the
// poller, the aborter, liveness, departure, teardown) where there is no
// GPU. It is not NCCL and moves no data between ranks:
// - a receive from another rank never finishes (until an abort);
// - a send to another rank, and every collective, finish at once; at size
//   1 a collective copies its input to its output;
// - a send and a receive to self match in order and copy.
// - it shrinks and grows a communicator, as ncclCommShrink and
//   ncclCommGrow would number it, unless $MW_NCCL_DOUBLE_NO_RESIZE is set
//   (an NCCL without them).
// Every teardown step is appended to $MW_NCCL_DOUBLE_LOG ("<pid> <rank>
// <step>" per line: finalized, finalize-timeout, abort, free), and each
// resize as "shrink", "shrink-abort" or "grow".
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "core/backends/nccl/nccl_plugin_abi.h"

struct DoubleOp {
  mwn_op_desc desc{};
  bool done = false;
  bool waits_on_peer = false;  // a receive from another rank
};

struct mwn_comm {
  int rank = 0, size = 0;
  std::mutex m;
  bool aborted = false;
  std::deque<std::shared_ptr<DoubleOp>> self_sends, self_recvs;
  std::deque<std::shared_ptr<DoubleOp>> waiting;  // receives from other ranks
};

struct mwn_op {
  mwn_comm* comm;
  std::shared_ptr<DoubleOp> op;
};

namespace {

void note(const mwn_comm& c, const char* step) {
  const char* path = std::getenv("MW_NCCL_DOUBLE_LOG");
  if (!path || !*path) return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[96];
  const int n = std::snprintf(line, sizeof line, "%d %d %s\n", static_cast<int>(getpid()), c.rank, step);
  if (write(fd, line, static_cast<size_t>(n)) != n) {
  }
  close(fd);
}

int fail(char* err, size_t len, int status, const char* why) {
  if (err && len) std::snprintf(err, len, "%s", why);
  return status;
}

int probe(int* devices, char*, size_t) {
  *devices = 1;
  return MWN_OK;
}

int uniqueId(int, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char*, size_t) {
  std::random_device rd;
  for (int i = 0; i < MW_NCCL_UNIQUE_ID_BYTES; ++i) id[i] = static_cast<unsigned char>(rd());
  return MWN_OK;
}

int commStart(const unsigned char*, int rank, int size, int, mwn_comm** out, char* err, size_t len) {
  if (!out || size < 1 || rank < 0 || rank >= size) return fail(err, len, MWN_ERR_ARGUMENT, "bad arguments");
  auto* c = new mwn_comm;
  c->rank = rank;
  c->size = size;
  *out = c;
  return MWN_OK;
}

int commReady(mwn_comm*, char*, size_t) { return MWN_OK; }

int opStart(mwn_comm* c, const mwn_op_desc* d, mwn_op** out, char* err, size_t len) {
  std::lock_guard<std::mutex> lock(c->m);
  if (c->aborted) return fail(err, len, MWN_ERR_TRANSPORT, "the double's communicator was aborted");
  auto op = std::make_shared<DoubleOp>();
  op->desc = *d;
  const size_t bytes = d->count * mwn_element_size(d->dtype);
  if (d->kind == MWN_RECV && d->peer != c->rank) {
    op->waits_on_peer = true;
    c->waiting.push_back(op);
  } else if ((d->kind == MWN_SEND || d->kind == MWN_RECV) && d->peer == c->rank) {
    const bool send = d->kind == MWN_SEND;
    auto& partners = send ? c->self_recvs : c->self_sends;
    if (partners.empty()) {
      (send ? c->self_sends : c->self_recvs).push_back(op);
    } else {
      std::shared_ptr<DoubleOp> other = partners.front();
      partners.pop_front();
      const mwn_op_desc& s = send ? op->desc : other->desc;
      const mwn_op_desc& r = send ? other->desc : op->desc;
      if (s.count * mwn_element_size(s.dtype) == r.count * mwn_element_size(r.dtype)) {
        std::memcpy(r.recvbuf, s.sendbuf, s.count * mwn_element_size(s.dtype));
      }
      op->done = other->done = true;
    }
  } else {
    if (c->size == 1 && d->recvbuf && d->sendbuf && d->recvbuf != d->sendbuf && bytes) {
      std::memcpy(d->recvbuf, d->sendbuf, bytes);
    }
    op->done = true;
  }
  *out = new mwn_op{c, std::move(op)};
  return MWN_OK;
}

int opQuery(mwn_op* h, char* err, size_t len) {
  std::lock_guard<std::mutex> lock(h->comm->m);
  if (h->op->done) return MWN_OK;
  if (h->comm->aborted) return fail(err, len, MWN_ERR_TRANSPORT, "the double's communicator was aborted");
  return MWN_PENDING;
}

void opFree(mwn_op* h) { delete h; }

void commAbort(mwn_comm* c) {
  std::lock_guard<std::mutex> lock(c->m);
  if (c->aborted) return;
  c->aborted = true;
  note(*c, "abort");
}

int commFinalize(mwn_comm* c, int timeout_ms, char* err, size_t len) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(c->m);
      bool flushed = true;
      for (const auto& op : c->waiting) flushed = flushed && op->done;
      if (flushed) {
        note(*c, "finalized");
        return MWN_OK;
      }
    }
    if (std::chrono::steady_clock::now() >= end) {
      note(*c, "finalize-timeout");
      return fail(err, len, MWN_PENDING, "the double's receives from other ranks never finish");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// $MW_NCCL_DOUBLE_FREE_MS makes freeing a communicator that was aborted
// take that long, as destroying an aborted parent can hang in NCCL.
void commFree(mwn_comm* c) {
  const char* ms = std::getenv("MW_NCCL_DOUBLE_FREE_MS");
  if (ms && *ms && c->aborted) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  note(*c, "free");
  delete c;
}

int resizeSupport() {
  const char* off = std::getenv("MW_NCCL_DOUBLE_NO_RESIZE");
  return off && *off ? 0 : MWN_RESIZE_SHRINK | MWN_RESIZE_GROW;
}

int commShrink(mwn_comm* c, const int* exclude, int n, int abort, mwn_comm** out, char* err, size_t len) {
  if (!(resizeSupport() & MWN_RESIZE_SHRINK)) return fail(err, len, MWN_ERR_UNSUPPORTED, "no ncclCommShrink");
  if (!c || !out || n < 0 || (n > 0 && !exclude)) return fail(err, len, MWN_ERR_ARGUMENT, "bad arguments");
  int rank = c->rank;
  for (int i = 0; i < n; ++i) {
    if (exclude[i] < 0 || exclude[i] >= c->size || exclude[i] == c->rank) {
      return fail(err, len, MWN_ERR_ARGUMENT, "bad rank to exclude");
    }
    if (exclude[i] < c->rank) --rank;
  }
  {
    std::lock_guard<std::mutex> lock(c->m);
    if (c->aborted) return fail(err, len, MWN_ERR_TRANSPORT, "the double's communicator was aborted");
  }
  auto* next = new mwn_comm;
  next->rank = rank;
  next->size = c->size - n;
  note(*c, abort ? "shrink-abort" : "shrink");
  *out = next;
  return MWN_OK;
}

int growId(mwn_comm*, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char* err, size_t len) {
  if (!(resizeSupport() & MWN_RESIZE_GROW)) return fail(err, len, MWN_ERR_UNSUPPORTED, "no ncclCommGrow");
  return uniqueId(0, id, err, len);
}

int commGrow(mwn_comm* c, int size, const unsigned char* id, int rank, int, mwn_comm** out, char* err, size_t len) {
  if (!(resizeSupport() & MWN_RESIZE_GROW)) return fail(err, len, MWN_ERR_UNSUPPORTED, "no ncclCommGrow");
  if (!out || (!c && (!id || rank < 0 || rank >= size)) || (c && size <= c->size)) {
    return fail(err, len, MWN_ERR_ARGUMENT, "bad arguments");
  }
  auto* next = new mwn_comm;
  next->rank = c ? c->rank : rank;
  next->size = size;
  note(*next, "grow");
  *out = next;
  return MWN_OK;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const mwn_plugin* mw_nccl_plugin_v1(void) {
  static const mwn_plugin table = {MW_NCCL_PLUGIN_ABI, 22809,         probe,      uniqueId,  commStart, commReady,
                                   opStart,            opQuery,       opFree,     commAbort, commFree,  commFinalize,
                                   resizeSupport,      commShrink,    growId,     commGrow};
  return &table;
}
