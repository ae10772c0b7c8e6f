// Package mw is the Go binding of multiworld: elastic, fault-isolated
// process groups ("worlds") over the library's stable C ABI
// (<multiworld/multiworld.h>, libmultiworld.so).
//
// A process belongs to any number of small worlds at once; each world is
// its own communicator and its own fault domain. When a member dies, hangs
// or is cut off, only the worlds that contain it break: their pending
// operations fail with ErrWorldBroken, every member hears of it, and every
// other world keeps running. Redis is the control plane (rendezvous,
// heartbeats, break notices). Host memory moves over UCX (TCP on one host
// and across hosts, RDMA where present; HostBackend
// picks it where the library has it) or Gloo (TCP, kept as a baseline);
// CUDA device memory moves over NCCL.
//
// # Building
//
// The package uses cgo and finds the C library with pkg-config
// (#cgo pkg-config: multiworld). For an installed library nothing is
// needed. To build against a build tree of the C library, point
// PKG_CONFIG_PATH at the tree's pkg-config directory, whose multiworld.pc
// also sets an rpath:
//
//	cmake -S . -B build && cmake --build build --target multiworld
//	PKG_CONFIG_PATH=$PWD/build/pkgconfig-build-tree go test ./...
//
// Without pkg-config, build with -tags mw_no_pkgconfig and pass the flags
// yourself: CGO_CFLAGS=-I<src>/capi/include and
// CGO_LDFLAGS="-L<build>/capi -Wl,-rpath,<build>/capi".
//
// The header's version is checked when the package compiles, and the
// loaded library's version when a Context is created (CheckVersion).
//
// # Use
//
// One Context per process, one World per group the process is in:
//
//	c, err := mw.NewContext() // Redis from $MW_REDIS_URL, or WithRedisURL
//	if err != nil { ... }
//	defer c.Close()
//	w, err := c.CreateWorld(ctx, "pair", rank, 2, mw.HostBackend()) // waits for both ranks
//	if err != nil { ... }
//	defer w.Close()
//	sum := make([]float32, 4)
//	err = w.AllReduce(ctx, []float32{1, 2, 3, float32(rank)}, sum, mw.Sum)
//
// Every operation exists twice. The blocking form (Send, Recv, Broadcast,
// AllReduce, Reduce, AllGather, Gather, Scatter, ReduceScatter, AllToAll,
// Barrier) takes Go slices of an Element type, Buffers or DeviceBuffers,
// and waits with a context.Context. The asynchronous form (SendAsync, ...)
// takes Buffers or DeviceBuffers and returns a *Request, completed with
// Wait(ctx), Test, Done, WaitAll, or a Poller collecting many requests in
// completion order. The Context's Events (or NextEvent) report worlds that
// broke, data paths that failed or recovered, and Redis outages.
//
// # Shapes
//
// Element counts come from the buffer lengths, as in the C API (Size() is
// the world size):
//
//	Send, Recv     len(buf); a receive's length must match the send's, else
//	               the receive fails with ErrInvalidArgument, the send
//	               completes (as in MPI) and the world stays usable
//	Broadcast      len(buf) elements from root's buf into everyone's
//	AllReduce      len(recv) == len(send)
//	Reduce         result in root's recv (len(send)); recv may be nil elsewhere
//	AllGather      len(recv) == Size()*len(send), rank-major
//	Gather         root's recv as AllGather; recv may be nil elsewhere
//	Scatter        root's len(send) == Size()*len(recv); send may be nil elsewhere
//	ReduceScatter  len(send) == Size()*len(recv); this rank gets block Rank()
//	AllToAll       len(send) == len(recv) == Size()*block; block j goes to rank j
//
// The same slice (or Buffer) as send and recv makes an operation in place,
// with the C API's meaning: AllReduce and Reduce reduce in place; AllGather
// and Gather take this rank's contribution from its block of a
// Size()*count buffer; Scatter (at the root) leaves the root's block where
// it is; ReduceScatter writes the result to the start of the buffer;
// AllToAll exchanges in place. Send and recv must have the same element
// type. Operations on one world run in issue order, and collectives must be
// issued in the same order on every member.
//
// # Memory
//
// No Go pointer ever reaches the library: it uses an operation's buffers
// until the operation completes, which cgo forbids for Go memory. So:
//
//   - the asynchronous operations take only memory outside Go's heap: a
//     Buffer is C memory (calloc), a DeviceBuffer is CUDA device memory. A
//     request holds its buffers until it completes, so a buffer closed
//     while the library still uses it is freed only afterwards;
//   - the blocking operations copy Go slices into C memory and the result
//     back, and pass Buffers and DeviceBuffers through without copying.
//
// A Buffer's memory never escapes as a Go slice that could outlive it: the
// program copies in and out (CopyFrom, CopyTo, Values) or works inside
// With, whose slice is valid during the call only; after Close each of
// them fails with an error wrapping ErrClosed.
//
// Host worlds (UCX, Gloo) take host memory (Go slices, Buffers); NCCL
// worlds take DeviceBuffers of the world's device (WithDevice). Anything
// else fails at issue with a *MemoryError, which is also an
// ErrInvalidArgument. A DeviceBuffer is allocated by NewDeviceBuffer
// through the CUDA driver, loaded at run time (the package builds without
// CUDA), or wraps memory the program allocated (WrapDevice); see
// DeviceBuffer for who frees what. An NCCL request completes once its work
// on the world's CUDA stream has finished: after it completed, its results
// are ready on the device for any stream.
//
// # Cancellation
//
// A wait whose context.Context ends (Request.Wait, WaitAll and every
// blocking operation) cancels its operation (Request.Cancel,
// mw_request_cancel) and still waits for it to complete, so the library is
// done with the buffers when the call returns and nothing is written into
// them afterwards. A receive that no message matched yet is taken back
// (ErrCancelled) and its world stays usable on UCX; anything else, and
// every operation on Gloo and NCCL worlds, breaks its world
// (ErrWorldBroken). The error wraps the context's error too. To stop
// waiting without cancelling, select on Request.Done. Closing the World
// completes its pending requests with ErrCancelled.
//
// # Completion
//
// Each Context runs one goroutine that sleeps in mw_poll_info with no timeout
// (a cgo call holding its OS thread while it sleeps) and completes each
// *Request as the library reports it: no polling interval adds latency and
// an idle Context uses no CPU. Every operation is issued with mw_submit,
// its user_data naming its *Request from the start. Events come the same
// way, from one goroutine sleeping in mw_next_event_info, started by the first
// call to Events or NextEvent. Close wakes both with mw_context_wake.
//
// There are no finalizers: Close every Context, World, Buffer and
// DeviceBuffer. Close is idempotent and safe to call concurrently with
// other methods; Context.Close closes the context's remaining worlds.
//
// # Errors
//
// Errors from the library are *Error values holding the status Code and
// the library's message. Each failing status is a sentinel Code, so
//
//	if errors.Is(err, mw.ErrWorldBroken) { /* rebuild the world */ }
//
// and errors.As(err, &e) for e *mw.Error both work. Using a closed handle
// gives an *Error that also wraps ErrClosed. An operation cancelled
// because its context.Context ended returns its *Error wrapping the
// context's error (context.Canceled or context.DeadlineExceeded); a call
// that had not issued anything yet returns the context's error alone.
//
// # Signals
//
// The transports write to sockets on library threads. When a peer dies
// such a write raises SIGPIPE on a non-Go thread, which the Go runtime
// turns into process death unless the program has asked for SIGPIPE; so
// NewContext calls signal.Notify for SIGPIPE (with a channel it never
// reads). The write then fails with EPIPE and only that peer's worlds
// break; a write to a closed stdout no longer kills the program either.
package mw
