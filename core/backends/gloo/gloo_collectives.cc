#include "core/backends/gloo/gloo_collectives.h"

#include <cstring>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include "core/reduce.h"

namespace mw {
namespace {

// Members that disagree on an operation's shape would make Gloo read a
// payload larger than the posted buffer, which aborts the process. Putting
// the shape into the tag keeps such operations from ever matching: they
// hang (and break the world at op_timeout_ms) instead.
uint32_t shapeTag(const OpDesc& op) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  mix(static_cast<uint64_t>(op.kind));
  mix(op.count);
  mix(static_cast<uint64_t>(op.dtype));
  mix(static_cast<uint64_t>(op.redop));
  mix(static_cast<uint64_t>(static_cast<int64_t>(op.peer)));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// Gloo sizes transfers by sizeof(T); any type of the element's width does.
template <typename F>
void withElementType(size_t width, F&& f) {
  switch (width) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

class GlooCollective : public PendingOp {
 public:
  GlooCollective(GlooLink& link, const OpDesc& op) : link_(link), op_(op) {}

  OpResult run(Deadline d) override {
    if (op_.kind != OpKind::Barrier && op_.count == 0) return {};
    try {
      withElementType(dtypeSize(op_.dtype), [&](auto t) { dispatch<decltype(t)>(remaining(d)); });
    } catch (const TransportError&) {
      throw;
    } catch (const std::exception& e) {
      link_.rethrow(e, -1);
    }
    return {};
  }

 private:
  template <typename T>
  void dispatch(std::chrono::milliseconds timeout) {
    const auto& ctx = link_.shared();
    const int rank = link_.rank();
    const int size = link_.size();
    const size_t n = op_.count;
    const size_t width = sizeof(T);
    T* send = static_cast<T*>(const_cast<void*>(op_.sendbuf));
    T* recv = static_cast<T*>(op_.recvbuf);
    const uint32_t tag = shapeTag(op_);

    switch (op_.kind) {
      case OpKind::Broadcast: {
        gloo::BroadcastOptions o(ctx);
        o.setOutput(recv, n);
        o.setRoot(op_.peer);
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::broadcast(o);
        break;
      }
      case OpKind::Allreduce:
        allreduce<T>(send, recv, n, tag, timeout);
        break;
      case OpKind::Reduce: {
        std::vector<T> scratch;
        T* out = recv;
        if (rank != op_.peer) {
          // Gloo reduces into the output on every member; only root's is kept.
          scratch.resize(n);
          out = scratch.data();
        }
        gloo::ReduceOptions o(ctx);
        if (send != out) o.setInput(send, n);
        o.setOutput(out, n);
        o.setRoot(op_.peer);
        o.setReduceFunction(reduceFunction(op_.dtype, op_.redop));
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::reduce(o);
        if (rank == op_.peer && op_.redop == RedOp::Avg) divideInPlace(recv, n, op_.dtype, size);
        break;
      }
      case OpKind::Allgather: {
        gloo::AllgatherOptions o(ctx);
        if (send != recv) o.setInput(send, n);  // else this rank's block is in place
        o.setOutput(recv, n * static_cast<size_t>(size));
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::allgather(o);
        break;
      }
      case OpKind::Gather: {
        std::vector<T> own;
        T* in = send;
        if (send == recv) {
          // In place: this rank's contribution is its own block, on every
          // rank; root's is copied out because Gloo copies it back in.
          in = recv + static_cast<size_t>(rank) * n;
          if (rank == op_.peer) {
            own.assign(in, in + n);
            in = own.data();
          }
        }
        gloo::GatherOptions o(ctx);
        o.setInput(in, n);
        if (rank == op_.peer) o.setOutput(recv, n * static_cast<size_t>(size));
        o.setRoot(op_.peer);
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::gather(o);
        break;
      }
      case OpKind::Scatter: {
        std::vector<T> discard;
        T* out = recv;
        gloo::ScatterOptions o(ctx);
        if (rank == op_.peer) {
          std::vector<T*> blocks;
          for (int r = 0; r < size; ++r) blocks.push_back(send + static_cast<size_t>(r) * n);
          o.setInputs(blocks, n);
          if (send == recv) {
            discard.resize(n);  // root's block already sits where it belongs
            out = discard.data();
          }
        }
        o.setOutput(out, n);
        o.setRoot(op_.peer);
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::scatter(o);
        break;
      }
      case OpKind::ReduceScatter: {
        const size_t total = n * static_cast<size_t>(size);
        std::vector<T> all(send, send + total);
        allreduce<T>(all.data(), all.data(), total, tag, timeout);
        std::memcpy(recv, all.data() + static_cast<size_t>(rank) * n, n * width);
        break;
      }
      case OpKind::Alltoall: {
        const size_t total = n * static_cast<size_t>(size);
        std::vector<T> copy;
        T* in = send;
        if (send == recv) {
          copy.assign(send, send + total);
          in = copy.data();
        }
        gloo::AlltoallOptions o(ctx);
        o.setInput(in, total);
        o.setOutput(recv, total);
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::alltoall(o);
        break;
      }
      case OpKind::Barrier: {
        gloo::BarrierOptions o(ctx);
        o.setTag(tag);
        o.setTimeout(timeout);
        gloo::barrier(o);
        break;
      }
      case OpKind::Send:
      case OpKind::Recv:
        throw TransportError("internal: p2p routed to collectives", -1);
    }
  }

  template <typename T>
  void allreduce(T* send, T* recv, size_t n, uint32_t tag, std::chrono::milliseconds timeout) {
    gloo::AllreduceOptions o(link_.shared());
    if (send != recv) o.setInput(send, n);
    o.setOutput(recv, n);
    o.setReduceFunction(reduceFunction(op_.dtype, op_.redop));
    o.setTag(tag);
    o.setTimeout(timeout);
    gloo::allreduce(o);
    if (op_.redop == RedOp::Avg) divideInPlace(recv, n, op_.dtype, link_.size());
  }

  GlooLink& link_;
  const OpDesc op_;
};

}  // namespace

std::unique_ptr<PendingOp> makeGlooCollective(GlooLink& link, const OpDesc& op) {
  return std::make_unique<GlooCollective>(link, op);
}

}  // namespace mw
