/*
 * multiworld: elastic, fault-isolated process groups ("worlds") with a
 * stable C ABI.
 *
 * This is the only public header. Conventions:
 *   - Functions that can fail return mw_status_t; details are in
 *     mw_last_error(), a thread-local message of the calling thread.
 *   - Handles are opaque. Output parameters come last. *_free / *_destroy
 *     accept NULL.
 *   - No function throws, aborts or calls exit(), whatever its input.
 *
 * Versioning (README.md, "Install and ABI policy"): the library is
 * libmultiworld.so.<MW_VERSION_MAJOR>, and every function carries a symbol
 * version: MULTIWORLD_0 for the first release's set, MULTIWORLD_1.0 for the
 * ABI 1.0 additions (mw_world_create_with, mw_next_event_info,
 * mw_poll_info), MULTIWORLD_1.1 for the metrics (mw_metrics_*), one node
 * more per release that adds. A minor release only
 * adds: functions (in a new node), enumerators at the end of an enum
 * (callers ignore event types and statuses they do not know), config keys,
 * and fields at the end of the structs that carry their size (mw_op_t,
 * mw_world_params_t, mw_event_info_t; mw_completion_info_t through
 * mw_poll_info's elem_size), whose 0 keeps the earlier behaviour. A patch
 * release only fixes. The fixed-size structs (mw_event_t, mw_completion_t)
 * never change; their calls stay, next to the sized forms. A function
 * marked deprecated here names its replacement and stays exported until the
 * next major version; a changed behaviour gets a new symbol version while
 * the old one stays for the programs linked against it. Only a major
 * version removes or changes anything, and it changes the SONAME.
 *
 * Thread safety: every function may be called from any thread, at the same
 * time as any other function, with these exceptions:
 *   - mw_world_destroy(w) must not run concurrently with any other call that
 *     passes the same world handle `w`; after it returns `w` is invalid.
 *   - mw_context_free(ctx) must not run concurrently with any other call on
 *     that context or on its worlds and requests; it destroys the context's
 *     remaining worlds, so their handles become invalid too.
 *   - mw_request_free(r) must not run concurrently with another call on `r`.
 *   - mw_config_set on one config must not race with itself or with
 *     mw_context_new reading that config.
 *
 * Ordering: on one world, sends and collectives run in the order they were
 * issued, like work on a CUDA stream; the receives from each peer run in
 * the order they were issued, independently of everything else, so a
 * receive posted long before its message arrives never holds up sends,
 * collectives or receives from other peers. Point-to-point transfers are
 * posted to the peer at issue time, so a send and its matching recv never
 * wait on each other's issue order. Collectives must be issued in the same
 * order on every member; p2p between a pair is matched in FIFO order.
 *
 * UCX worlds (the host backend): the same order as above. A member that
 * leaves (mw_world_destroy) breaks the world for the others only after what
 * it sent arrived: operations in flight still finish with it, and a receive
 * of a message it sent before leaving still succeeds on the broken world.
 *
 * NCCL worlds: every operation of a world, receives included, is queued on
 * the world's one CUDA stream in issue order, exactly as with NCCL itself.
 * A receive therefore holds up what was issued after it until its message
 * arrives: two members that both post a receive before their send wait on
 * each other forever. Issue the pair in matching order (or use separate
 * worlds for the two directions). Buffers are device memory of the
 * world's device; host memory is refused with MW_ERR_INVALID_ARGUMENT. A
 * send and a recv of different sizes between two members are NCCL's
 * undefined behaviour (to self they fail with MW_ERR_INVALID_ARGUMENT).
 */
#ifndef MULTIWORLD_MULTIWORLD_H
#define MULTIWORLD_MULTIWORLD_H

#include <stddef.h>
#include <stdint.h>

/* The library version, defined here and nowhere else. */
#define MW_VERSION_MAJOR 0
#define MW_VERSION_MINOR 2
#define MW_VERSION_PATCH 0
/* One number for comparisons: major * 10000 + minor * 100 + patch. */
#define MW_VERSION_CODE (MW_VERSION_MAJOR * 10000 + MW_VERSION_MINOR * 100 + MW_VERSION_PATCH)

#if defined(_WIN32)
#define MW_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MW_API __attribute__((visibility("default")))
#else
#define MW_API
#endif

#ifdef __cplusplus
#define MW_NOEXCEPT noexcept
extern "C" {
#else
#define MW_NOEXCEPT
#endif

typedef enum {
  MW_OK = 0,
  MW_IN_PROGRESS = 1,            /* mw_test: request not finished yet */
  MW_ERR_INVALID_ARGUMENT = -1,
  MW_ERR_NOT_FOUND = -2,
  MW_ERR_ALREADY_EXISTS = -3,    /* e.g. a rank of a world claimed twice */
  MW_ERR_TIMEOUT = -4,
  MW_ERR_WORLD_BROKEN = -5,      /* a member failed; the world is unusable */
  MW_ERR_STORE = -6,             /* Redis unreachable, auth failure, bad data */
  MW_ERR_BACKEND = -7,           /* NCCL/Gloo error not attributed to a peer */
  MW_ERR_UNSUPPORTED = -8,       /* e.g. NCCL not built in, no GPU, dtype/op combo */
  MW_ERR_CANCELLED = -9,         /* request's world was destroyed */
  MW_ERR_INTERNAL = -10,
  MW_ERR_NO_MEMORY = -11
} mw_status_t;

/* Host buffers: MW_BACKEND_UCX (the default choice: UCX endpoints with peer
 * error handling, TCP on one host, TCP or RDMA across hosts, one progress
 * engine per context) or MW_BACKEND_GLOO (TCP, a thread per world; kept as a baseline).
 * GPU buffers: MW_BACKEND_NCCL. */
typedef enum { MW_BACKEND_GLOO = 1, MW_BACKEND_NCCL = 2, MW_BACKEND_UCX = 3 } mw_backend_t;

/* Element types, 0..9. MW_FLOAT16 is IEEE binary16, MW_BFLOAT16 is the upper
 * half of a binary32; both are reduced on the CPU through float32 with
 * round-to-nearest-even back to 16 bits. */
typedef enum {
  MW_INT8, MW_UINT8, MW_INT32, MW_UINT32, MW_INT64, MW_UINT64,
  MW_FLOAT16, MW_BFLOAT16, MW_FLOAT32, MW_FLOAT64
} mw_dtype_t;

/* Reduction operations, 0..4. MW_AVG is the sum divided by the world size;
 * on integer dtypes the division truncates toward zero (as C's `/`), and
 * the sum wraps modulo 2^bits like unsigned arithmetic. */
typedef enum { MW_SUM, MW_PROD, MW_MIN, MW_MAX, MW_AVG } mw_redop_t;

/* MW_WORLD_RETIRED: a shrink or grow made its successor (mw_world_shrink);
 * the handle only waits for mw_world_destroy. */
typedef enum { MW_WORLD_READY = 1, MW_WORLD_BROKEN = 2, MW_WORLD_RETIRED = 3 } mw_world_state_t;

typedef struct mw_config mw_config_t;
typedef struct mw_context mw_context_t;
typedef struct mw_world mw_world_t;
typedef struct mw_request mw_request_t;

/* ---- library ------------------------------------------------------------ */
MW_API const char* mw_version_string(void) MW_NOEXCEPT;
MW_API void mw_version(int* major, int* minor, int* patch) MW_NOEXCEPT;
MW_API const char* mw_status_string(mw_status_t s) MW_NOEXCEPT;
/* Never NULL. May be stale after a later successful call. */
MW_API const char* mw_last_error(void) MW_NOEXCEPT;
/* 1 if the backend is compiled in and usable on this machine, else 0. */
MW_API int mw_backend_available(mw_backend_t b) MW_NOEXCEPT;

/* ---- configuration ------------------------------------------------------
 * String keys, string values. Keys (README.md, "Configuration keys", says
 * more of each):
 *   redis_url             "redis://[user:pass@]host:port[/db]",
 *                         "unix:///path/to.sock[?db=N]" or
 *                         "redis+sentinel://[user:pass@]h1:p1,h2:p2[,...]/MASTER_NAME[/db]";
 *                         default: env MW_REDIS_URL, else redis://127.0.0.1:6379
 *   namespace             key prefix in Redis, default "mw"
 *                         (1..64 chars of [A-Za-z0-9._:-])
 *   heartbeat_interval_ms how often this process refreshes its heartbeat and
 *                         checks its peers', default 100
 *   heartbeat_timeout_ms  a peer from which this process has read no new
 *                         heartbeat for this long (by its own clock) breaks
 *                         every world it shares with us, default 1000
 *   op_timeout_ms         an operation running longer breaks its world;
 *                         0 = no limit (default)
 *   bind_address          IP or host name the Gloo transport listens on;
 *                         default: env MW_BIND_ADDRESS, else this host's name
 *                         (UCX chooses its devices; UCX_* variables apply)
 *   log_level             off, error, warn (default), info, debug
 *   store_timeout_ms      one Redis round trip, default 2000
 *   spin_us               how long mw_wait and mw_poll spin, driving the
 *                         progress of UCX worlds on the calling thread,
 *                         while UCX does nothing, before they sleep (a
 *                         transfer that keeps moving is driven for up to
 *                         1 ms, or spin_us if larger); 0 = never spin,
 *                         default 20
 *   data_addresses        UCX: comma-separated local IPs, one data path
 *                         each, in order of preference; with two or more,
 *                         worlds survive a cut link; default: env
 *                         MW_DATA_ADDRESSES, else bind_address, else every
 *                         non-loopback interface that is up
 *   path_timeout_ms       UCX, two or more paths: a message unacknowledged
 *                         this long puts its path in doubt, default 100
 *   path_failover         on (default) or off: off keeps one path even with
 *                         several addresses
 *   same_host_path        auto or off: whether members on one host (one
 *                         boot, pid and network namespace) move messages
 *                         through per-pair rings of shared memory, and
 *                         those of same_host_min_bytes and more by
 *                         cross-memory attach (process_vm_readv, one
 *                         copy), instead of TCP; a pair the kernel
 *                         refuses it (process_vm_readv or pidfd_getfd)
 *                         stays on TCP
 *                         and says so in the log and `multiworld status`;
 *                         never taken by a context with two or more data
 *                         addresses; default: env MW_SAME_HOST_PATH, else
 *                         auto
 *   same_host_min_bytes   the smallest message lent rather than copied
 *                         through the ring (one larger than the ring,
 *                         256 KiB, is lent anyway); default: env
 *                         MW_SAME_HOST_MIN_BYTES, else 65536
 *   max_world_size        the largest size mw_world_create accepts (a larger
 *                         one is MW_ERR_INVALID_ARGUMENT before Redis is
 *                         touched), default 65536
 *   metrics               on (default) or off: this context's counters and
 *                         histograms (mw_metrics_snapshot)
 *   metrics_world_labels  off (default) or on: the per-world metrics carry a
 *                         world label, one series set per world name
 *   metrics_publish_ms    how often the snapshot goes to Redis for
 *                         `multiworld metrics`; 0 = never, else at least
 *                         100; default 10000
 *   metrics_listen        host:port (or [v6]:port) where this context serves
 *                         its own metrics over HTTP (GET /metrics), one
 *                         thread; default: empty, no server
 * Unknown key or unparsable value -> MW_ERR_INVALID_ARGUMENT.
 */
MW_API mw_status_t mw_config_new(mw_config_t** out) MW_NOEXCEPT;
MW_API mw_status_t mw_config_set(mw_config_t* cfg, const char* key, const char* value) MW_NOEXCEPT;
MW_API void mw_config_free(mw_config_t* cfg) MW_NOEXCEPT;

/* ---- context ------------------------------------------------------------
 * One per process is typical; owns the Redis connections, the heartbeat and
 * watchdog thread and the completion queue. `cfg` is copied; NULL means
 * defaults. Fails with MW_ERR_STORE when Redis cannot be reached.
 * Signals: the transports write to sockets whose peer may die. The
 * library's own threads run with SIGPIPE blocked; writes can also happen on
 * the caller's thread, so when SIGPIPE still has its default disposition
 * the first context sets it to SIG_IGN (as gRPC does); a handler installed
 * by the program is kept. */
MW_API mw_status_t mw_context_new(const mw_config_t* cfg, mw_context_t** out) MW_NOEXCEPT;
MW_API void mw_context_free(mw_context_t* ctx) MW_NOEXCEPT; /* destroys remaining worlds */

/* ---- worlds -------------------------------------------------------------
 * Collective over the `size` members: blocks until every rank joined or
 * timeout_ms passed (MW_ERR_TIMEOUT). `device` is the CUDA ordinal for NCCL
 * and ignored for UCX and Gloo. Names: 1..128 chars of [A-Za-z0-9._:-].
 * UCX worlds have at most 65536 members (MW_ERR_UNSUPPORTED beyond).
 * NCCL: the backend lives in a plugin, libmultiworld-nccl.so.<major>,
 * loaded on first use from $MW_NCCL_PLUGIN, else next to this library,
 * else the loader's search path. Without the plugin, a CUDA driver or a
 * device, mw_backend_available(MW_BACKEND_NCCL) is 0 and creation fails
 * with MW_ERR_UNSUPPORTED saying which; a device outside the visible ones
 * is MW_ERR_INVALID_ARGUMENT.
 * Errors: a rank already claimed by a live process -> MW_ERR_ALREADY_EXISTS;
 * members disagreeing on `size` -> MW_ERR_INVALID_ARGUMENT on every member
 * that is waiting; size > max_world_size -> MW_ERR_INVALID_ARGUMENT; Redis
 * down, or a record in Redis that is not the library's -> MW_ERR_STORE
 * naming the key. Each successful creation is
 * a new incarnation (epoch) of the name, so a name can be created again
 * after its previous incarnation broke. Equal to mw_world_create_with with
 * these arguments and every other setting at its default. */
MW_API mw_status_t mw_world_create(mw_context_t* ctx, const char* name, int rank, int size,
                                   mw_backend_t backend, int device, int timeout_ms,
                                   mw_world_t** out) MW_NOEXCEPT;

/* World creation from a parameters struct: mw_world_create's arguments plus
 * the settings a world may take from its context or set for itself. Start
 * from MW_WORLD_PARAMS_INIT and set what differs:
 *
 *   mw_world_params_t p = MW_WORLD_PARAMS_INIT;
 *   p.name = "train"; p.rank = rank; p.world_size = 4;
 *   mw_status_t s = mw_world_create_with(ctx, &p, &world);
 *
 * Growth (as NCCL's ncclConfig_t and mw_op_t): `size`, `magic` and
 * `version` are the macro's. Fields are only ever added at the end. The
 * library reads the caller's first `size` bytes: fields past them (a caller
 * built against an older header) take their defaults, and bytes past the
 * fields this library knows (a newer caller) must be zero, else
 * MW_ERR_UNSUPPORTED naming the byte. A size below the first version's
 * (through timeout_ms), a wrong magic or a version below 200 (0.2.0, the
 * first header with this struct) is MW_ERR_INVALID_ARGUMENT: the struct
 * was not made from MW_WORLD_PARAMS_INIT. Every setting's 0 means "as the context says".
 * `name` is read during the call only. Errors are those of mw_world_create,
 * plus MW_ERR_INVALID_ARGUMENT naming a setting this library cannot honour. */
#define MW_WORLD_PARAMS_MAGIC 0x6d77706d /* "mwpm" */

/* Path failover (config key path_failover) for one world. ON needs the
 * context's path_failover on, and a UCX or NCCL world (MW_ERR_INVALID_ARGUMENT
 * otherwise); it then runs wherever every member publishes two or more data
 * addresses. OFF: this world's data takes one path even where the context
 * has several, and since the members decide alike from what each publishes,
 * one member's OFF puts the whole world on one path. */
typedef enum {
  MW_PATH_FAILOVER_DEFAULT = 0, /* the context's path_failover */
  MW_PATH_FAILOVER_ON = 1,
  MW_PATH_FAILOVER_OFF = 2
} mw_path_failover_t;

/* The same-host path (members on one host moving messages through memory
 * rather than the network; see same_host_path in mw_config_set).
 * DEFAULT follows the context's same_host_path, AUTO takes it where it can,
 * OFF keeps this world's members on the network paths. As with path
 * failover, a pair takes it only where both members ask for it. */
typedef enum {
  MW_SAME_HOST_PATH_DEFAULT = 0,
  MW_SAME_HOST_PATH_AUTO = 1,
  MW_SAME_HOST_PATH_OFF = 2
} mw_same_host_path_t;

typedef struct mw_world_params {
  size_t size;           /* sizeof(mw_world_params_t), from MW_WORLD_PARAMS_INIT */
  uint32_t magic;        /* MW_WORLD_PARAMS_MAGIC */
  uint32_t version;      /* MW_VERSION_CODE of the caller's header */
  const char* name;      /* as mw_world_create's, required */
  int rank;
  int world_size;        /* mw_world_create's `size` */
  mw_backend_t backend;  /* default MW_BACKEND_UCX */
  int device;            /* CUDA ordinal for NCCL, default 0 */
  int timeout_ms;        /* for the members to join; default -1 (forever) */
  /* Up to here: the first version. */
  int op_timeout_ms;     /* 0: the context's op_timeout_ms; -1: no limit for
                            this world; > 0: this world's limit */
  mw_path_failover_t path_failover;
  mw_same_host_path_t same_host_path;
} mw_world_params_t;

#define MW_WORLD_PARAMS_INIT                                                        \
  {                                                                                 \
    sizeof(mw_world_params_t), MW_WORLD_PARAMS_MAGIC, MW_VERSION_CODE, NULL, -1, 0, \
        MW_BACKEND_UCX, 0, -1, 0, MW_PATH_FAILOVER_DEFAULT, MW_SAME_HOST_PATH_DEFAULT \
  }

MW_API mw_status_t mw_world_create_with(mw_context_t* ctx, const mw_world_params_t* params,
                                        mw_world_t** out) MW_NOEXCEPT;

/* Bounded time, never hangs, healthy or broken. Pending requests complete
 * with MW_ERR_CANCELLED. Not collective: the other members see the world
 * break once what this member sent them has arrived, so an operation of
 * theirs that still needed this member fails with MW_ERR_WORLD_BROKEN;
 * agree on the last operation (e.g. wait for a final message) before
 * leaving. Redis records that this member left, so the name can be
 * formed again without it. */
MW_API mw_status_t mw_world_destroy(mw_world_t* world) MW_NOEXCEPT;
MW_API mw_world_state_t mw_world_state(const mw_world_t* world) MW_NOEXCEPT;
MW_API int mw_world_rank(const mw_world_t* world) MW_NOEXCEPT;   /* -1 for NULL */
MW_API int mw_world_size(const mw_world_t* world) MW_NOEXCEPT;   /* -1 for NULL */
MW_API const char* mw_world_name(const mw_world_t* world) MW_NOEXCEPT; /* "" for NULL */
/* The incarnation number Redis gave this world at creation (>= 1). A name
 * Redis holds no record of (new, expired, or lost in a failover) starts at
 * its creator's clock in milliseconds since 1970, each later incarnation at
 * the next number, so no number comes back while an incarnation may use it. */
MW_API uint64_t mw_world_epoch(const mw_world_t* world) MW_NOEXCEPT;

/* ---- shrink and grow ----------------------------------------------------
 * A world changes its members in place: the result is the world's next
 * epoch under the same name, its survivors in their old order renumbered
 * from 0 (as ncclCommShrink numbers them), and the old handle is retired:
 * mw_world_state says MW_WORLD_RETIRED, every operation on it fails at
 * once with MW_ERR_INVALID_ARGUMENT naming the successor's epoch, and
 * mw_world_destroy frees it as usual (it tells the other members nothing).
 * What survives is kept: a UCX world's members keep their endpoints to
 * each other (no connection is opened for them), an NCCL world shrinks
 * its communicator with ncclCommShrink and grows it with ncclCommGrow
 * where the loaded NCCL has them (else a new communicator forms); a Gloo
 * world connects its pairs again.
 *
 * Shrink: every survivor calls mw_world_shrink with the same `exclude`
 * list of `n` ranks (of the old numbering). exclude = NULL, n = 0 excludes
 * exactly the members the world's break named (every rank a break notice
 * of this epoch blamed, and members that left), fixed in Redis by the
 * first survivor to call, so the members need no agreement of their own.
 * The library compares the lists through Redis: a survivor whose list
 * differs from the one the first fixed gets MW_ERR_INVALID_ARGUMENT naming
 * both. MW_SHRINK_DEFAULT needs a ready world with no operation pending
 * (else MW_ERR_INVALID_ARGUMENT naming the count), or one broken only
 * because a member the list excludes went (an excluded member that is
 * torn down may break it before a survivor calls); MW_SHRINK_ABORT first
 * completes every pending operation with MW_ERR_CANCELLED, and is the flag
 * for a broken world.
 *
 * Grow: every member calls mw_world_grow with `new_size` (it keeps its
 * rank, and needs a ready world with nothing pending); each newcomer calls
 * mw_world_create_with with the world's name, `new_size` and a rank from
 * the old size up, knowing nothing else.
 *
 * Nobody hangs: an excluded member need not call anything (it gets
 * MW_EVENT_WORLD_BROKEN saying it was excluded, and MW_ERR_WORLD_BROKEN if
 * it calls mw_world_shrink); a member that dies meanwhile fails the call
 * on the others with MW_ERR_WORLD_BROKEN, as fast as its death is noticed
 * (at once over a UCX or NCCL world's connections, else within
 * heartbeat_timeout_ms), and a second shrink with exclude = NULL also
 * excludes it; a newcomer that never comes fails the grow at timeout_ms
 * (-1: none) with MW_ERR_TIMEOUT, the old world still usable. On a failure
 * nothing of the old world changes, except that operations cancelled by
 * MW_SHRINK_ABORT leave it broken, and that the members a shrink excludes
 * are out once the first survivor calls it (told so then, they break the
 * old world by leaving): the survivors shrink again.
 *
 * Bad input is MW_ERR_INVALID_ARGUMENT naming the value, and changes
 * nothing: a rank out of range or listed twice, excluding oneself, n < 0,
 * a list at NULL with n > 0, an unknown flag, new_size not above the size
 * or above max_world_size, a timeout below -1, a retired world, a NULL
 * world or `out`. */
typedef enum { MW_SHRINK_DEFAULT = 0, MW_SHRINK_ABORT = 1 } mw_shrink_flags_t;
MW_API mw_status_t mw_world_shrink(mw_world_t* w, const int* exclude, int n, int flags, int timeout_ms,
                                   mw_world_t** out) MW_NOEXCEPT;
MW_API mw_status_t mw_world_grow(mw_world_t* w, int new_size, int timeout_ms, mw_world_t** out) MW_NOEXCEPT;

/* ---- operations ---------------------------------------------------------
 * All return at once; the buffers must stay valid and unmodified until the
 * request completes. Counts are in elements of `dt`; count 0 is allowed.
 *   send/recv        the recv's byte size must equal the send's; otherwise
 *                    the recv completes with MW_ERR_INVALID_ARGUMENT naming
 *                    both sizes (its buffer's contents are then
 *                    unspecified), the send completes with MW_OK as in
 *                    MPI, and the world stays usable. One message moves
 *                    at most 2^36-1 bytes on Gloo.
 *   broadcast        `count` elements from root's buf into everyone's buf.
 *   allreduce        `count` elements.
 *   reduce           result in root's recvbuf; recvbuf is ignored elsewhere.
 *   allgather        recvbuf holds size * sendcount elements, rank-major.
 *   gather           root's recvbuf holds size * sendcount elements.
 *   scatter          root's sendbuf holds size * recvcount elements.
 *   reduce_scatter   sendbuf holds size * recvcount elements; this rank gets
 *                    the reduced block `rank`.
 *   alltoall         both buffers hold size * count elements; block j of
 *                    sendbuf goes to rank j.
 * In place (sendbuf == recvbuf): allreduce and reduce reduce in place;
 * allgather and gather take this rank's contribution from its block of
 * recvbuf; scatter leaves root's block where it is; reduce_scatter writes
 * the result to the start of the buffer; alltoall exchanges in place.
 * On a broken world these fail at once with MW_ERR_WORLD_BROKEN (UCX: except
 * a receive whose message a member that left sent before leaving). */
MW_API mw_status_t mw_send_async(mw_world_t* w, const void* buf, size_t count, mw_dtype_t dt,
                                 int dst, mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_recv_async(mw_world_t* w, void* buf, size_t count, mw_dtype_t dt,
                                 int src, mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_broadcast_async(mw_world_t* w, void* buf, size_t count, mw_dtype_t dt,
                                      int root, mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_allreduce_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                      size_t count, mw_dtype_t dt, mw_redop_t op,
                                      mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_reduce_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                   size_t count, mw_dtype_t dt, mw_redop_t op, int root,
                                   mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_allgather_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                      size_t sendcount, mw_dtype_t dt,
                                      mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_gather_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                   size_t sendcount, mw_dtype_t dt, int root,
                                   mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_scatter_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                    size_t recvcount, mw_dtype_t dt, int root,
                                    mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_reduce_scatter_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                           size_t recvcount, mw_dtype_t dt, mw_redop_t op,
                                           mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_alltoall_async(mw_world_t* w, const void* sendbuf, void* recvbuf,
                                     size_t count, mw_dtype_t dt,
                                     mw_request_t** req) MW_NOEXCEPT;
MW_API mw_status_t mw_barrier_async(mw_world_t* w, mw_request_t** req) MW_NOEXCEPT;

/* One call for every operation, with its user_data fixed at issue time, so
 * a completion that mw_poll delivers on another thread at once already
 * carries it. `size` is sizeof(mw_op_t) as the caller compiled it, so the
 * struct can grow: a library older than the caller's header accepts it when
 * every byte past the fields it knows is zero (MW_ERR_UNSUPPORTED
 * otherwise), and a size below this version's first one is
 * MW_ERR_INVALID_ARGUMENT. Fields the operation does not use are ignored:
 *   kind             sendbuf  recvbuf  count      op   peer
 *   SEND             buf      -        count      -    dst
 *   RECV             -        buf      count      -    src
 *   BROADCAST        -        buf      count      -    root
 *   ALLREDUCE        in       out      count      op   -
 *   REDUCE           in       out      count      op   root
 *   ALLGATHER        in       out      sendcount  -    -
 *   GATHER           in       out      sendcount  -    root
 *   SCATTER          in       out      recvcount  -    root
 *   REDUCE_SCATTER   in       out      recvcount  op   -
 *   ALLTOALL         in       out      count      -    -
 *   BARRIER          -        -        -          -    -
 * The eleven *_async calls above are this call with user_data 0. */
typedef enum {
  MW_OP_SEND, MW_OP_RECV, MW_OP_BROADCAST, MW_OP_ALLREDUCE, MW_OP_REDUCE,
  MW_OP_ALLGATHER, MW_OP_GATHER, MW_OP_SCATTER, MW_OP_REDUCE_SCATTER,
  MW_OP_ALLTOALL, MW_OP_BARRIER
} mw_op_kind_t;
typedef struct {
  size_t size;          /* sizeof(mw_op_t) */
  mw_op_kind_t kind;
  const void* sendbuf;  /* send, and collectives' input */
  void* recvbuf;        /* recv, broadcast (in place), collectives' output */
  size_t count;         /* as in the matching *_async call */
  mw_dtype_t dtype;
  mw_redop_t op;
  int peer;             /* dst, src or root */
  uint64_t user_data;
} mw_op_t;
MW_API mw_status_t mw_submit(mw_world_t* w, const mw_op_t* op, mw_request_t** req) MW_NOEXCEPT;

/* ---- completion ---------------------------------------------------------
 * A request's final status is reported once to the program: by mw_test or
 * mw_wait returning it, or by mw_poll delivering it, whichever comes first.
 * After that mw_test/mw_wait keep returning the same status. */
MW_API mw_status_t mw_test(mw_request_t* req) MW_NOEXCEPT; /* MW_IN_PROGRESS, MW_OK or the error */
/* -1 = forever; MW_ERR_TIMEOUT leaves req valid and still running. */
MW_API mw_status_t mw_wait(mw_request_t* req, int timeout_ms) MW_NOEXCEPT;
/* mw_poll reports the user_data the request holds when it is delivered: set
 * it right after issuing and before another thread may poll, or key the
 * completions by their request handle instead. */
MW_API void mw_request_set_user_data(mw_request_t* req, uint64_t user_data) MW_NOEXCEPT;
MW_API uint64_t mw_request_user_data(const mw_request_t* req) MW_NOEXCEPT;
/* A pending request is detached: it still runs, its completion is dropped. */
MW_API void mw_request_free(mw_request_t* req) MW_NOEXCEPT;
/* Cancels a pending request and returns at once; the completion follows
 * through mw_test, mw_wait and mw_poll as usual. A receive that no message
 * matched yet completes with MW_ERR_CANCELLED and its world stays usable
 * (on UCX worlds). Anything already moving data, and every operation that
 * cannot be taken back (a collective the other members run too; on Gloo
 * and NCCL worlds every pending operation), breaks its world: the request
 * completes with MW_ERR_WORLD_BROKEN and the members hear of the break.
 * Either way the request's buffers are released when it completes. No
 * effect on a finished request. */
MW_API mw_status_t mw_request_cancel(mw_request_t* req) MW_NOEXCEPT;

typedef struct {
  mw_request_t* request; /* still owned by the caller: free it */
  mw_world_t* world;     /* NULL once that world was destroyed */
  uint64_t user_data;
  mw_status_t status;
} mw_completion_t;
/* Fills up to `max` completions of this context's requests, each exactly
 * once; waits up to timeout_ms (0 = just look, -1 = forever) for the first
 * one. It sleeps, after driving the progress of UCX worlds itself until
 * they did nothing for spin_us (for 1 ms, or spin_us if larger, at most).
 * A freed request's completion is never delivered.
 * Returns MW_OK with *n_out = 0 when the timeout passed with none, or when
 * mw_context_wake interrupted it. */
MW_API mw_status_t mw_poll(mw_context_t* ctx, mw_completion_t* out, size_t max, int timeout_ms,
                           size_t* n_out) MW_NOEXCEPT;

/* mw_poll with completions that can grow: the caller passes the size of
 * its array's elements, elem_size = sizeof(mw_completion_info_t) as it was
 * compiled. Element i starts at byte i * elem_size of `out`; the library
 * writes its first elem_size bytes (a caller built against an older header
 * gets the fields it knows) and zeroes whatever lies past the fields it
 * knows (a newer caller reads its fields as absent). The first four fields
 * are mw_completion_t's, in its layout: elem_size = sizeof(mw_completion_t)
 * works too. elem_size below offsetof(mw_completion_info_t, kind) or above
 * 4096 is MW_ERR_INVALID_ARGUMENT, checked before anything is taken.
 * Receives: a receive takes exactly its sender's byte size (see the
 * operations above); a receive into a larger buffer is not offered,
 * because NCCL's receive has no such form, so it would be a host-only
 * feature. `bytes` is there so that a version which offers it changes no
 * struct. The same queue as mw_poll: each completion goes to one call. */
typedef struct mw_completion_info {
  mw_request_t* request; /* still owned by the caller: free it */
  mw_world_t* world;     /* NULL once that world was destroyed */
  uint64_t user_data;
  mw_status_t status;
  mw_op_kind_t kind;     /* what the request ran */
  size_t bytes;          /* MW_OP_RECV completed MW_OK: the bytes received into its
                            buffer (count * the dtype's size); else 0 */
} mw_completion_info_t;
MW_API mw_status_t mw_poll_info(mw_context_t* ctx, mw_completion_info_t* out, size_t elem_size, size_t max,
                                int timeout_ms, size_t* n_out) MW_NOEXCEPT;

/* An fd an event loop can wait on (epoll, tokio, Go's netpoller, asyncio):
 * readable while at least one completion (for mw_poll) or event (for
 * mw_next_event) of this context is queued, level-triggered. The caller
 * never reads or closes it; it stays valid until mw_context_free. After it
 * turns readable, drain with mw_poll / mw_next_event with timeout 0.
 * A completion that mw_test or mw_wait already reported is not queued. */
MW_API mw_status_t mw_context_fd(mw_context_t* ctx, int* fd_out) MW_NOEXCEPT;
/* Makes a blocked mw_poll (*n_out = 0) and a blocked mw_next_event
 * (MW_ERR_TIMEOUT) of this context return at once. A wake that finds no
 * call blocked is kept for the next blocking call of each kind, so a wake
 * sent just before a thread blocks is not lost. Safe from any thread. */
MW_API mw_status_t mw_context_wake(mw_context_t* ctx) MW_NOEXCEPT;

/* ---- events -------------------------------------------------------------
 * World state changes and store outages, in the order they happened. A
 * world's MW_EVENT_WORLD_BROKEN is queued before any of its requests
 * completes with MW_ERR_WORLD_BROKEN. */
typedef enum {
  MW_EVENT_WORLD_BROKEN = 1,
  MW_EVENT_STORE_DOWN = 2,
  MW_EVENT_STORE_UP = 3,
  MW_EVENT_PATH_DOWN = 4, /* a data path to peer_rank failed; the world lives on */
  MW_EVENT_PATH_UP = 5    /* that path carries traffic again */
} mw_event_type_t;
typedef struct {
  mw_event_type_t type;
  mw_world_t* world; /* NULL for store events and for destroyed worlds */
  char world_name[129];
  int peer_rank;      /* the member blamed, -1 if unknown */
  mw_status_t reason;
  char detail[256];
} mw_event_t;
/* MW_ERR_TIMEOUT if none arrived within timeout_ms (0 = just look, -1 = forever). */
MW_API mw_status_t mw_next_event(mw_context_t* ctx, mw_event_t* out, int timeout_ms) MW_NOEXCEPT;

/* The same events as mw_next_event (one queue: each event goes to whichever
 * of the two calls takes it first), with room to grow and, for
 * MW_EVENT_PATH_DOWN / MW_EVENT_PATH_UP, the path's facts as fields, so that
 * no program parses `detail`. The caller sets `size` to
 * sizeof(mw_event_info_t) as it was compiled; the library writes only the
 * first `size` bytes (a caller built against an older header gets the
 * fields it knows) and zeroes what lies past the fields it knows (a newer
 * caller then reads its fields as absent). A size below
 * offsetof(mw_event_info_t, world), or above 4096, is
 * MW_ERR_INVALID_ARGUMENT, checked before an event is taken.
 * Strings are copied into the struct, NUL-terminated, truncated to the
 * field's size (world names are at most 128 chars, so only `detail` can be
 * cut short); nothing in it points into the library except `world`, a
 * handle as in mw_event_t. */
typedef struct mw_event_info {
  size_t size;          /* set by the caller: sizeof(mw_event_info_t) */
  mw_event_type_t type;
  mw_world_t* world;    /* NULL for store events and for destroyed worlds */
  uint64_t world_epoch; /* the world's incarnation (mw_world_epoch), 0 for store events */
  char world_name[129];
  int peer_rank;        /* the member blamed, or whose path changed; -1 if unknown */
  mw_status_t reason;
  char detail[1024];    /* for people, not programs */
  /* MW_EVENT_PATH_DOWN / MW_EVENT_PATH_UP; for other events path_index is
   * -1, the addresses are empty and the counts 0. */
  int path_index;                 /* the path to peer_rank: its place in this context's
                                     data_addresses, from 0 */
  char local_address[256];        /* this member's address of the path */
  char remote_address[256];       /* peer_rank's address of the path */
  uint64_t outstanding_messages;  /* messages this member held for peer_rank when the
                                     path changed: sent, and not yet acknowledged (or
                                     still held by UCX); they go again on the next path
                                     when this one carried them. 0 on a member that
                                     only receives from peer_rank */
  uint64_t outstanding_bytes;     /* their payload bytes */
} mw_event_info_t;
/* MW_ERR_TIMEOUT if none arrived within timeout_ms (0 = just look, -1 = forever). */
MW_API mw_status_t mw_next_event_info(mw_context_t* ctx, mw_event_info_t* out, int timeout_ms) MW_NOEXCEPT;

/* ---- metrics ------------------------------------------------------------
 * The context's counters and histograms, as Prometheus models them: a
 * family (name, help, kind, label names) holds one series per set of label
 * values. README.md, "Metrics", lists every metric, its labels and what it
 * counts. A series appears once it counted something. Counting costs the
 * operations relaxed atomic adds, no lock and no allocation; the config
 * key metrics=off turns it off, and a snapshot is then empty.
 *
 * A snapshot copies every series at one moment; it does not change
 * afterwards and does not need the context (free it before or after
 * mw_context_free). Every pointer it hands out lives until mw_metrics_free.
 * A snapshot may be read from several threads at once.
 */
typedef struct mw_metrics mw_metrics_t;
typedef enum { MW_METRIC_COUNTER = 1, MW_METRIC_GAUGE = 2, MW_METRIC_HISTOGRAM = 3 } mw_metric_kind_t;
/* One series. As mw_event_info_t, it carries its size: the caller sets
 * `size` to sizeof(mw_metric_info_t) as it was compiled, the library writes
 * the first `size` bytes (zeroing any it does not know), and fields are
 * only ever added at the end. A size below this first version's, or above
 * 4096, is MW_ERR_INVALID_ARGUMENT. */
typedef struct mw_metric_info {
  size_t size;                     /* set by the caller: sizeof(mw_metric_info_t) */
  const char* name;                /* the family's, e.g. "mw_ops_total" */
  const char* help;                /* one line, for people */
  mw_metric_kind_t kind;
  size_t label_count;
  const char* const* label_names;  /* label_count names ... */
  const char* const* label_values; /* ... and this series' values, in the same order */
  double value;                    /* counter, gauge: the value; histogram: the sum of the observations */
  uint64_t count;                  /* histogram: the observations; else 0 */
  size_t bucket_count;             /* histogram: the finite buckets; else 0 */
  const double* bucket_bounds;     /* their upper bounds (Prometheus' le), increasing */
  const uint64_t* bucket_counts;   /* cumulative: the observations <= each bound; the
                                      +Inf bucket is `count` */
} mw_metric_info_t;
/* Takes a snapshot of ctx's metrics; free it with mw_metrics_free. */
MW_API mw_status_t mw_metrics_snapshot(mw_context_t* ctx, mw_metrics_t** out) MW_NOEXCEPT;
/* The series in the snapshot (0 for NULL), in families as the text lists them. */
MW_API size_t mw_metrics_count(const mw_metrics_t* m) MW_NOEXCEPT;
/* Series i, 0 <= i < mw_metrics_count(m); MW_ERR_INVALID_ARGUMENT beyond. */
MW_API mw_status_t mw_metrics_get(const mw_metrics_t* m, size_t i, mw_metric_info_t* out) MW_NOEXCEPT;
/* The snapshot in Prometheus' text exposition format, version 0.0.4 (what
 * an HTTP scrape of /metrics returns; README, "Metrics"), NUL-terminated.
 * *needed (when not NULL) gets the bytes it takes, NUL included. With
 * buf NULL only *needed is set; a buffer of fewer bytes than that is
 * MW_ERR_INVALID_ARGUMENT naming both sizes, and nothing is written. */
MW_API mw_status_t mw_metrics_text(const mw_metrics_t* m, char* buf, size_t len, size_t* needed) MW_NOEXCEPT;
MW_API void mw_metrics_free(mw_metrics_t* m) MW_NOEXCEPT;

#ifdef __cplusplus
}
#endif
#endif /* MULTIWORLD_MULTIWORLD_H */
