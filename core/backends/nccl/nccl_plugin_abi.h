/* The boundary between libmultiworld and its NCCL plugin
 * (libmultiworld-nccl.so.<major>), which the core loads with dlopen on the
 * first use of MW_BACKEND_NCCL, so that the core itself links neither CUDA
 * nor NCCL and runs on machines that have neither.
 *
 * Plain C on purpose: both sides are built with hidden visibility, so a C++
 * exception or type would not be recognised across it; and a plugin from
 * another build is refused by its ABI number rather than misread.
 *
 * Threads: every function may be called from any thread. A communicator
 * serialises its own NCCL calls, as NCCL requires of one communicator. */
#ifndef MW_NCCL_PLUGIN_ABI_H
#define MW_NCCL_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define MW_NCCL_PLUGIN_ABI 3
#define MW_NCCL_PLUGIN_ENTRY "mw_nccl_plugin_v1"
#define MW_NCCL_UNIQUE_ID_BYTES 128

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  MWN_OK = 0,
  MWN_PENDING = 1,          /* not finished yet: ask again later */
  MWN_ERR_ARGUMENT = -1,    /* the caller's fault: a host buffer, a bad device, sizes that differ */
  MWN_ERR_UNSUPPORTED = -2, /* no driver, no device */
  MWN_ERR_TRANSPORT = -3,   /* the communicator failed (peer gone, network, aborted): the world breaks */
  MWN_ERR_BACKEND = -4,     /* a CUDA or NCCL failure of this process */
  MWN_ERR_NO_MEMORY = -5
} mwn_status;

/* Operation kinds, element types and reductions, numbered as the core's
 * OpKind, DType and RedOp (the core checks that at compile time). */
enum {
  MWN_SEND, MWN_RECV, MWN_BROADCAST, MWN_ALLREDUCE, MWN_REDUCE, MWN_ALLGATHER,
  MWN_GATHER, MWN_SCATTER, MWN_REDUCE_SCATTER, MWN_ALLTOALL, MWN_BARRIER
};
enum {
  MWN_INT8, MWN_UINT8, MWN_INT32, MWN_UINT32, MWN_INT64, MWN_UINT64,
  MWN_FLOAT16, MWN_BFLOAT16, MWN_FLOAT32, MWN_FLOAT64
};
enum { MWN_SUM, MWN_PROD, MWN_MIN, MWN_MAX, MWN_AVG };

/* Bytes of one element of `dtype`. */
static inline size_t mwn_element_size(int dtype) {
  switch (dtype) {
    case MWN_INT8:
    case MWN_UINT8: return 1;
    case MWN_FLOAT16:
    case MWN_BFLOAT16: return 2;
    case MWN_INT32:
    case MWN_UINT32:
    case MWN_FLOAT32: return 4;
    default: return 8;
  }
}

/* One operation with the C API's meaning of each field (already validated
 * by the core: kinds, types, peers and NULL buffers). peer: dst, src or root. */
typedef struct {
  int kind;
  const void* sendbuf;
  void* recvbuf;
  size_t count;
  int dtype;
  int redop;
  int peer;
} mwn_op_desc;

typedef struct mwn_comm mwn_comm; /* one world: NCCL communicator, CUDA stream */
typedef struct mwn_op mwn_op;     /* one issued operation */

/* A failing call writes why into err (NUL-terminated, cut to err_len). */
typedef struct {
  uint32_t abi;          /* MW_NCCL_PLUGIN_ABI */
  int nccl_version;      /* NCCL_VERSION_CODE of the libnccl loaded at run time */

  /* MWN_OK when a CUDA driver and at least one device are usable here. */
  int (*probe)(int* device_count, char* err, size_t err_len);

  /* ncclGetUniqueId, with `device` current. */
  int (*unique_id)(int device, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char* err, size_t err_len);

  /* Starts a non-blocking communicator on `device` with its own stream.
   * *out is set whenever the call returns MWN_OK; comm_ready tells when it
   * formed. */
  int (*comm_start)(const unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], int rank, int size, int device,
                    mwn_comm** out, char* err, size_t err_len);
  /* MWN_PENDING while NCCL initialises, MWN_OK once usable, or the error. */
  int (*comm_ready)(mwn_comm* comm, char* err, size_t err_len);

  /* Issues `op` on the communicator's stream, in call order; never waits
   * for a peer. *out is set whenever the call returns MWN_OK. Buffers that
   * are not device memory of the communicator's device: MWN_ERR_ARGUMENT. */
  int (*op_start)(mwn_comm* comm, const mwn_op_desc* op, mwn_op** out, char* err, size_t err_len);
  /* MWN_OK once the operation's CUDA event completed, MWN_PENDING before,
   * or the error. Also moves the communicator on (issues what waited for an
   * earlier ncclInProgress) and reports its asynchronous errors. */
  int (*op_query)(mwn_op* op, char* err, size_t err_len);
  /* The operation still runs; only the handle goes. */
  void (*op_free)(mwn_op* op);

  /* ncclCommAbort: every pending and later operation fails with
   * MWN_ERR_TRANSPORT. Idempotent. */
  void (*comm_abort)(mwn_comm* comm);
  /* Aborts if still needed and releases the stream and memory. */
  void (*comm_free)(mwn_comm* comm);
  /* ncclCommFinalize, waiting up to timeout_ms for every operation issued
   * and its network transfers to be flushed: MWN_OK once they are (the
   * peers then have what this rank sent), MWN_PENDING past the timeout, or
   * the error. Blocks. comm_free afterwards destroys rather than aborts
   * when it succeeded. */
  int (*comm_finalize)(mwn_comm* comm, int timeout_ms, char* err, size_t err_len);

  /* Shrink and grow, where the loaded NCCL has them (looked up when the
   * plugin loads: ncclCommShrink since 2.27, ncclCommGrow and
   * ncclCommGetUniqueId since 2.29). MWN_RESIZE_* bits of what it has. */
  int (*resize_support)(void);
  /* ncclCommShrink of `comm` without the `n` ranks in `exclude` (of its
   * numbering), with NCCL_SHRINK_ABORT when `abort` (operations under way
   * end first): a new non-blocking communicator on the same device with a
   * stream of its own, its rank renumbered as NCCL does, polled with
   * comm_ready. `comm` stays to be freed. */
  int (*comm_shrink)(mwn_comm* comm, const int* exclude, int n, int abort, mwn_comm** out, char* err,
                     size_t err_len);
  /* ncclCommGetUniqueId on an existing member's communicator: the id a
   * grow's newcomers join with. */
  int (*grow_id)(mwn_comm* comm, unsigned char id[MW_NCCL_UNIQUE_ID_BYTES], char* err, size_t err_len);
  /* ncclCommGrow to `size` ranks. An existing member passes its `comm`
   * (and `id` when it made it, else NULL; `rank` and `device` are then its
   * own); a newcomer passes comm NULL, the `id`, its `rank` (from the old
   * size up) and its `device`. Polled with comm_ready, as comm_start. */
  int (*comm_grow)(mwn_comm* comm, int size, const unsigned char* id, int rank, int device, mwn_comm** out,
                   char* err, size_t err_len);
} mwn_plugin;

#define MWN_RESIZE_SHRINK 1
#define MWN_RESIZE_GROW 2

typedef const mwn_plugin* (*mwn_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
