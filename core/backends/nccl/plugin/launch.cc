// The NCCL call for each operation, with the C API's meaning of in place
// mapped onto NCCL's where the two differ.
#include "core/backends/nccl/plugin/nccl_comm.h"

namespace mwnccl {

size_t bytesOf(const mwn_op_desc& d) { return d.count * mwn_element_size(d.dtype); }

namespace {

ncclDataType_t ncclType(int dtype) {
  switch (dtype) {
    case MWN_INT8: return ncclInt8;
    case MWN_UINT8: return ncclUint8;
    case MWN_INT32: return ncclInt32;
    case MWN_UINT32: return ncclUint32;
    case MWN_INT64: return ncclInt64;
    case MWN_UINT64: return ncclUint64;
    case MWN_FLOAT16: return ncclFloat16;
    case MWN_BFLOAT16: return ncclBfloat16;
    case MWN_FLOAT32: return ncclFloat32;
    default: return ncclFloat64;
  }
}

ncclRedOp_t ncclOp(int redop) {
  switch (redop) {
    case MWN_SUM: return ncclSum;
    case MWN_PROD: return ncclProd;
    case MWN_MIN: return ncclMin;
    case MWN_MAX: return ncclMax;
    default: return ncclAvg;
  }
}

char* at(const void* p, size_t bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }

}  // namespace

ncclResult_t launch(Comm& c, OpState& op, std::string& why) {
  const mwn_op_desc& d = op.desc;
  const size_t n = d.count;
  const size_t block = bytesOf(d);
  const ncclDataType_t type = ncclType(d.dtype);
  const size_t rank = static_cast<size_t>(c.rank);
  auto cuda = [&](const char* call, cudaError_t err) {
    if (err != cudaSuccess) why = cudaWhy(call, err);
    return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
  };
  auto nccl = [&](const char* call, ncclResult_t r) {
    if (r != ncclSuccess && r != ncclInProgress) why = ncclWhy(call, r, c.nccl);
    return r;
  };
  // Nothing to move: no NCCL call, as every member skips it alike.
  if (n == 0 && d.kind != MWN_BARRIER) return ncclSuccess;

  switch (d.kind) {
    case MWN_SEND:
      return nccl("ncclSend", ncclSend(d.sendbuf, n, type, d.peer, c.nccl, c.stream));
    case MWN_RECV:
      if (d.peer == c.rank) {  // matched with a send to self
        return cuda("cudaMemcpyAsync",
                    cudaMemcpyAsync(d.recvbuf, op.copy_from, block, cudaMemcpyDeviceToDevice, c.stream));
      }
      return nccl("ncclRecv", ncclRecv(d.recvbuf, n, type, d.peer, c.nccl, c.stream));
    case MWN_BROADCAST:
      return nccl("ncclBroadcast", ncclBroadcast(d.recvbuf, d.recvbuf, n, type, d.peer, c.nccl, c.stream));
    case MWN_ALLREDUCE:
      return nccl("ncclAllReduce",
                  ncclAllReduce(d.sendbuf, d.recvbuf, n, type, ncclOp(d.redop), c.nccl, c.stream));
    case MWN_REDUCE:
      return nccl("ncclReduce",
                  ncclReduce(d.sendbuf, d.recvbuf, n, type, ncclOp(d.redop), d.peer, c.nccl, c.stream));
    case MWN_ALLGATHER: {
      // In place: this rank's contribution is its block of recvbuf, which
      // is what NCCL calls in place.
      const void* in = d.sendbuf == d.recvbuf ? at(d.recvbuf, rank * block) : d.sendbuf;
      return nccl("ncclAllGather", ncclAllGather(in, d.recvbuf, n, type, c.nccl, c.stream));
    }
    case MWN_GATHER: {
      const void* in = d.sendbuf == d.recvbuf ? at(d.recvbuf, rank * block) : d.sendbuf;
      return nccl("ncclGather", ncclGather(in, d.recvbuf, n, type, d.peer, c.nccl, c.stream));
    }
    case MWN_SCATTER: {
      // In place: root's block stays where it is in sendbuf.
      void* out = d.recvbuf;
      if (d.sendbuf == d.recvbuf && d.peer == c.rank) out = at(d.sendbuf, rank * block);
      return nccl("ncclScatter", ncclScatter(d.sendbuf, out, n, type, d.peer, c.nccl, c.stream));
    }
    case MWN_REDUCE_SCATTER: {
      if (d.sendbuf != d.recvbuf || rank == 0) {
        return nccl("ncclReduceScatter",
                    ncclReduceScatter(d.sendbuf, d.recvbuf, n, type, ncclOp(d.redop), c.nccl, c.stream));
      }
      // In place, the C API puts the result at the start of the buffer;
      // NCCL's in place leaves it at this rank's block: move it after.
      char* mine = at(d.recvbuf, rank * block);
      void* start = d.recvbuf;
      op.after = [mine, start, block](cudaStream_t s) {
        return cudaMemcpyAsync(start, mine, block, cudaMemcpyDeviceToDevice, s);
      };
      return nccl("ncclReduceScatter",
                  ncclReduceScatter(d.sendbuf, mine, n, type, ncclOp(d.redop), c.nccl, c.stream));
    }
    case MWN_ALLTOALL: {
      const void* in = d.sendbuf;
      if (d.sendbuf == d.recvbuf) {
        // NCCL's all-to-all does not run in place: send from a copy that is
        // freed on the stream once the exchange is done.
        void* copy = nullptr;
        const size_t total = block * static_cast<size_t>(c.size);
        if (cuda("cudaMallocAsync", cudaMallocAsync(&copy, total, c.stream)) != ncclSuccess) {
          return ncclUnhandledCudaError;
        }
        if (cuda("cudaMemcpyAsync", cudaMemcpyAsync(copy, d.sendbuf, total, cudaMemcpyDeviceToDevice, c.stream)) !=
            ncclSuccess) {
          cudaFreeAsync(copy, c.stream);
          return ncclUnhandledCudaError;
        }
        op.after = [copy](cudaStream_t s) { return cudaFreeAsync(copy, s); };
        in = copy;
      }
      ncclResult_t r = nccl("ncclAlltoAll", ncclAlltoAll(in, d.recvbuf, n, type, c.nccl, c.stream));
      if (r != ncclSuccess && r != ncclInProgress && op.after) {
        op.after(c.stream);
        op.after = nullptr;
      }
      return r;
    }
    case MWN_BARRIER:
      return nccl("ncclAllReduce",
                  ncclAllReduce(c.scratch, c.scratch, 1, ncclInt32, ncclSum, c.nccl, c.stream));
    default:
      why = "operation kind " + std::to_string(d.kind) + " is unknown to this plugin";
      return ncclInvalidArgument;
  }
}

}  // namespace mwnccl
