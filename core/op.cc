#include "core/op.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"

namespace mw {

const char* opName(OpKind k) noexcept {
  switch (k) {
    case OpKind::Send: return "send";
    case OpKind::Recv: return "recv";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::Allreduce: return "allreduce";
    case OpKind::Reduce: return "reduce";
    case OpKind::Allgather: return "allgather";
    case OpKind::Gather: return "gather";
    case OpKind::Scatter: return "scatter";
    case OpKind::ReduceScatter: return "reduce_scatter";
    case OpKind::Alltoall: return "alltoall";
    case OpKind::Barrier: return "barrier";
  }
  return "unknown";
}

bool isValidOpKind(int v) noexcept {
  return v >= static_cast<int>(OpKind::Send) && v <= static_cast<int>(OpKind::Barrier);
}

}  // namespace mw

namespace mw {
namespace {

[[noreturn]] void bad(const OpDesc& op, const std::string& why) {
  throw Error(Status::InvalidArgument, std::string(opName(op.kind)) + ": " + why);
}

bool rooted(OpKind k) {
  return k == OpKind::Broadcast || k == OpKind::Reduce || k == OpKind::Gather || k == OpKind::Scatter;
}

bool reduces(OpKind k) {
  return k == OpKind::Allreduce || k == OpKind::Reduce || k == OpKind::ReduceScatter;
}

// Elements each buffer holds, as a multiple of `count`, on this rank; 0 when
// the operation does not touch it here.
void bufferBlocks(const OpDesc& op, int rank, int size, size_t& send_blocks, size_t& recv_blocks) {
  const bool root = op.peer == rank;
  const size_t all = static_cast<size_t>(size);
  switch (op.kind) {
    case OpKind::Send: send_blocks = 1; recv_blocks = 0; return;
    case OpKind::Recv: send_blocks = 0; recv_blocks = 1; return;
    case OpKind::Broadcast: send_blocks = 0; recv_blocks = 1; return;
    case OpKind::Allreduce: send_blocks = 1; recv_blocks = 1; return;
    case OpKind::Reduce: send_blocks = 1; recv_blocks = root ? 1 : 0; return;
    case OpKind::Allgather: send_blocks = 1; recv_blocks = all; return;
    case OpKind::Gather: send_blocks = 1; recv_blocks = root ? all : 0; return;
    case OpKind::Scatter: send_blocks = root ? all : 0; recv_blocks = 1; return;
    case OpKind::ReduceScatter: send_blocks = all; recv_blocks = 1; return;
    case OpKind::Alltoall: send_blocks = all; recv_blocks = all; return;
    case OpKind::Barrier: send_blocks = 0; recv_blocks = 0; return;
  }
}

}  // namespace

OpDesc canonicalOp(OpDesc op) {
  if (op.kind == OpKind::Barrier) {
    op.count = 0;
    op.dtype = DType::UInt8;
    op.sendbuf = nullptr;
    op.recvbuf = nullptr;
  }
  if (!reduces(op.kind)) op.redop = RedOp::Sum;
  if (op.kind != OpKind::Send && op.kind != OpKind::Recv && !rooted(op.kind)) op.peer = -1;
  return op;
}

void validateOp(const OpDesc& op, int rank, int size) {
  if (!isValidDType(static_cast<int>(op.dtype))) {
    bad(op, "dtype " + std::to_string(static_cast<int>(op.dtype)) + " is not a mw_dtype_t (0..9)");
  }
  if (reduces(op.kind) && !isValidRedOp(static_cast<int>(op.redop))) {
    bad(op, "op " + std::to_string(static_cast<int>(op.redop)) + " is not a mw_redop_t (0..4)");
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv || rooted(op.kind)) {
    const char* role = op.kind == OpKind::Send ? "dst" : op.kind == OpKind::Recv ? "src" : "root";
    if (op.peer < 0 || op.peer >= size) {
      bad(op, std::string(role) + " " + std::to_string(op.peer) + " is outside [0, " + std::to_string(size) + ")");
    }
  }
  size_t send_blocks = 0, recv_blocks = 0;
  bufferBlocks(op, rank, size, send_blocks, recv_blocks);
  const size_t width = dtypeSize(op.dtype);
  const size_t limit = std::numeric_limits<size_t>::max() / 2;  // headroom for internal copies
  size_t blocks = std::max<size_t>({send_blocks, recv_blocks, 1});
  if (op.count > limit / width / blocks) {
    bad(op, "count " + std::to_string(op.count) + " of " + dtypeName(op.dtype) + " overflows the byte size");
  }
  if (op.count == 0) return;
  if (send_blocks && !op.sendbuf) bad(op, "sendbuf is NULL with count " + std::to_string(op.count));
  if (recv_blocks && !op.recvbuf) bad(op, "recvbuf is NULL with count " + std::to_string(op.count));
}

}  // namespace mw
