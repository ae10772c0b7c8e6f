// mw_submit and the eleven *_async calls: each fills an OpDesc and hands
// it to its world.
#include <cstddef>

#include "capi/src/boundary.h"
#include "capi/src/sized_struct.h"

using namespace mw;
using namespace mw::capi;

namespace {

mw_status_t issue(mw_world_t* w, const OpDesc& op, mw_request_t** req) {
  return guarded([&] {
    requireNonNull(w, "world");
    requireNonNull(req, "req");
    *req = nullptr;
    *req = handle(world(w)->submit(op));
    return MW_OK;
  });
}

OpKind opKind(int v) {
  if (!isValidOpKind(v)) {
    throw Error(Status::InvalidArgument, "op kind " + std::to_string(v) + " is not an mw_op_kind_t (0..10)");
  }
  return static_cast<OpKind>(v);
}

// Every field up to and including user_data: the first version's size.
constexpr size_t kOpFirstSize = offsetof(mw_op_t, user_data) + sizeof(uint64_t);
static_assert(kOpFirstSize == sizeof(mw_op_t), "mw_op_t has grown: accept both sizes");

// The enums by reference: a C caller's out-of-range value is read as bytes
// (enumValue), never loaded as the enum type.
OpDesc desc(OpKind kind, const void* send, void* recv, size_t count, const mw_dtype_t& dt, const mw_redop_t& op,
            int peer) {
  OpDesc d;
  d.kind = kind;
  d.sendbuf = send;
  d.recvbuf = recv;
  d.count = count;
  d.dtype = static_cast<DType>(enumValue(dt));
  d.redop = static_cast<RedOp>(enumValue(op));
  d.peer = peer;
  return d;
}

}  // namespace

extern "C" {

MW_API mw_status_t mw_submit(mw_world_t* w, const mw_op_t* op, mw_request_t** req) noexcept {
  return guarded([&] {
    requireNonNull(w, "world");
    requireNonNull(op, "op");
    requireNonNull(req, "req");
    *req = nullptr;
    mw_op_t o;
    readSized(&o, sizeof o, op, op->size, kOpFirstSize, "mw_op_t");
    OpDesc d = desc(opKind(enumValue(o.kind)), o.sendbuf, o.recvbuf, o.count, o.dtype, o.op, o.peer);
    *req = handle(world(w)->submit(d, o.user_data));
    return MW_OK;
  });
}

MW_API mw_status_t mw_send_async(mw_world_t* w, const void* buf, size_t count, mw_dtype_t dt, int dst,
                                 mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Send, buf, nullptr, count, dt, MW_SUM, dst), req);
}

MW_API mw_status_t mw_recv_async(mw_world_t* w, void* buf, size_t count, mw_dtype_t dt, int src,
                                 mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Recv, nullptr, buf, count, dt, MW_SUM, src), req);
}

MW_API mw_status_t mw_broadcast_async(mw_world_t* w, void* buf, size_t count, mw_dtype_t dt, int root,
                                      mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Broadcast, buf, buf, count, dt, MW_SUM, root), req);
}

MW_API mw_status_t mw_allreduce_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t count,
                                      mw_dtype_t dt, mw_redop_t op, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Allreduce, sendbuf, recvbuf, count, dt, op, -1), req);
}

MW_API mw_status_t mw_reduce_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t count,
                                   mw_dtype_t dt, mw_redop_t op, int root, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Reduce, sendbuf, recvbuf, count, dt, op, root), req);
}

MW_API mw_status_t mw_allgather_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t sendcount,
                                      mw_dtype_t dt, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Allgather, sendbuf, recvbuf, sendcount, dt, MW_SUM, -1), req);
}

MW_API mw_status_t mw_gather_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t sendcount,
                                   mw_dtype_t dt, int root, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Gather, sendbuf, recvbuf, sendcount, dt, MW_SUM, root), req);
}

MW_API mw_status_t mw_scatter_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t recvcount,
                                    mw_dtype_t dt, int root, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Scatter, sendbuf, recvbuf, recvcount, dt, MW_SUM, root), req);
}

MW_API mw_status_t mw_reduce_scatter_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                           size_t recvcount, mw_dtype_t dt, mw_redop_t op,
                                           mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::ReduceScatter, sendbuf, recvbuf, recvcount, dt, op, -1), req);
}

MW_API mw_status_t mw_alltoall_async(mw_world_t* w, const void* sendbuf, void* recvbuf, size_t count,
                                     mw_dtype_t dt, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Alltoall, sendbuf, recvbuf, count, dt, MW_SUM, -1), req);
}

MW_API mw_status_t mw_barrier_async(mw_world_t* w, mw_request_t** req) noexcept {
  return issue(w, desc(OpKind::Barrier, nullptr, nullptr, 0, MW_UINT8, MW_SUM, -1), req);
}

}  // extern "C"
