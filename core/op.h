// What the program asked a world to do, in backend-neutral terms.
#pragma once

#include <cstddef>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace mw {

enum class OpKind {
  Send, Recv, Broadcast, Allreduce, Reduce, Allgather, Gather, Scatter, ReduceScatter, Alltoall, Barrier
};

const char* opName(OpKind k) noexcept;
// Values equal the C API's mw_op_kind_t, so the boundary converts by cast.
bool isValidOpKind(int v) noexcept;

struct OpDesc {
  OpKind kind = OpKind::Barrier;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;  // elements, per the C API's meaning for this kind
  DType dtype = DType::UInt8;
  RedOp redop = RedOp::Sum;
  int peer = -1;  // dst for send, src for recv, root for rooted collectives
};

// How an operation ended, as its request reports it.
struct OpResult {
  Status status = Status::Ok;
  std::string detail;
};

// Throws Error(InvalidArgument) naming the bad value: unknown dtype or
// reduction, a peer or root outside the world, a NULL buffer that the
// operation needs on this rank, or a byte size that overflows size_t.
void validateOp(const OpDesc& op, int rank, int size);
// `op` with the fields its kind does not use set to one value (a barrier's
// count, dtype and buffers; the reduction of an operation that does not
// reduce; the peer of one that has none), so that members that passed
// different values there still issue the same operation.
OpDesc canonicalOp(OpDesc op);

}  // namespace mw
