// Package mw is the Go binding of multiworld: elastic, fault-isolated
// process groups ("worlds") over the library's stable C ABI
// (<multiworld/multiworld.h>, libmultiworld.so).
//
// A process belongs to any number of small worlds at once; each world is
// its own communicator and its own fault domain. When a member dies, hangs
// or is cut off, only the worlds that contain it break: their pending
// operations fail with ErrWorldBroken, every member hears of it, and every
// other world keeps running. Redis is the control plane (rendezvous,
// heartbeats, break notices); Gloo over TCP carries host buffers.
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
//	w, err := c.CreateWorld(ctx, "pair", rank, 2, mw.Gloo) // waits for both ranks
//	if err != nil { ... }
//	defer w.Close()
//	sum := make([]float32, 4)
//	err = w.AllReduce(ctx, []float32{1, 2, 3, float32(rank)}, sum, mw.Sum)
//
// Every operation exists twice. The blocking form (Send, Recv, Broadcast,
// AllReduce, Reduce, AllGather, Gather, Scatter, ReduceScatter, AllToAll,
// Barrier) takes Go slices of an Element type, or Buffers, and waits with
// a context.Context. The asynchronous form (SendAsync, ...) takes Buffers
// and returns a *Request, completed with Wait(ctx), Test, Done, WaitAll,
// or a Poller collecting many requests in completion order. The Context's
// Events (or NextEvent) report worlds that broke and Redis outages.
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
// No Go pointer is retained by C after a cgo call returns. The library
// uses an operation's buffers until it completes, so:
//
//   - the asynchronous operations take only library-owned memory: a
//     Buffer is C memory (calloc) visible to Go as a slice (Slice), freed by
//     Close. A request holds its buffers until it completes, so a Buffer
//     closed, or a Wait given up, while the library still uses it is freed
//     only afterwards;
//   - the blocking operations copy Go slices into such C memory and the
//     result back, and pass Buffers through without copying.
//
// Giving up a wait (its context.Context ends) returns ctx.Err() and never
// frees or reuses memory the library may still write: the operation still
// completes in the background (a receive still consumes its message) and
// its C memory is freed then. Closing the World cancels it (ErrCancelled).
//
// Each Context runs one goroutine that takes completions from mw_poll,
// blocking at most 50 ms per call (no spinning), frees each C request and
// completes its *Request. There are no finalizers: Close every Context,
// World and Buffer. Close is idempotent and safe to call concurrently with
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
// gives an *Error that also wraps ErrClosed. A wait abandoned through its
// context.Context returns the context's error (context.Canceled or
// context.DeadlineExceeded), not an *Error.
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
