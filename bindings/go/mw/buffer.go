package mw

/*
#include <stdlib.h>
*/
import "C"

import (
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// liveBuffers counts C allocations made by this package and not yet freed.
var liveBuffers atomic.Int64

// bufCore is a block of C memory shared by a Buffer and the requests that
// use it. It is freed once it is closed and no request holds it, so a
// request whose waiter gave up (context cancelled) keeps its memory until
// the library is done with it.
type bufCore struct {
	mu     sync.Mutex
	p      unsafe.Pointer // C memory; nil once freed
	nbytes int
	refs   int
	closed bool
}

func newCore(nbytes int, zero bool) (*bufCore, error) {
	n := nbytes
	if n == 0 {
		n = 1 // a real pointer even for empty buffers
	}
	var p unsafe.Pointer
	if zero {
		p = C.calloc(C.size_t(n), 1)
	} else {
		p = C.malloc(C.size_t(n))
	}
	if p == nil {
		return nil, &Error{Code: ErrNoMemory, Msg: "MW_ERR_NO_MEMORY: cannot allocate " + strconv.Itoa(nbytes) + " bytes"}
	}
	liveBuffers.Add(1)
	return &bufCore{p: p, nbytes: nbytes}, nil
}

// acquire takes a hold for an operation; fails once the buffer is closed.
func (b *bufCore) acquire() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return closedError(ErrInvalidArgument, "buffer")
	}
	b.refs++
	return nil
}

func (b *bufCore) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs--
	if b.refs == 0 && b.closed {
		b.free()
	}
}

func (b *bufCore) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	if b.refs == 0 {
		b.free()
	}
}

func (b *bufCore) free() { // under mu
	C.free(b.p)
	b.p = nil
	liveBuffers.Add(-1)
}

// bytes views the memory as Go bytes; only while a hold or the owner keeps
// it alive.
func (b *bufCore) bytes() []byte { return unsafe.Slice((*byte)(b.p), b.nbytes) }

// Buf is a library-owned buffer, the only kind the asynchronous operations
// take: *Buffer[T] for every Element T. Its memory is C memory, so the
// library may use it after the call that issued an operation returns.
type Buf interface {
	DType() DType
	Len() int
	core() *bufCore
}

// Buffer is an array of n elements of T in C memory (malloc), visible to
// Go as a slice. It is what the asynchronous operations read and write:
// the library keeps using it until the request completes, which Go memory
// does not allow.
//
// Rules: do not touch the slice while a request that uses the buffer is in
// flight (like any async I/O buffer), and do not use the slice after
// Close. Close may be called while requests are in flight: the memory is
// then freed when the last of them completes, never before.
type Buffer[T Element] struct {
	c *bufCore
	n int
}

// NewBuffer allocates a zeroed Buffer of n elements.
func NewBuffer[T Element](n int) (*Buffer[T], error) {
	if n < 0 {
		return nil, argError("buffer length " + strconv.Itoa(n) + " is negative")
	}
	var zero T
	c, err := newCore(n*int(unsafe.Sizeof(zero)), true)
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{c: c, n: n}, nil
}

// BufferFrom allocates a Buffer holding a copy of s.
func BufferFrom[T Element](s []T) (*Buffer[T], error) {
	b, err := NewBuffer[T](len(s))
	if err != nil {
		return nil, err
	}
	copy(b.Slice(), s)
	return b, nil
}

// Slice is the buffer's memory as a Go slice; nil after Close. The slice
// must not be used after Close.
func (b *Buffer[T]) Slice() []T {
	if b == nil || b.c == nil {
		return nil
	}
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	if b.c.closed {
		return nil
	}
	return unsafe.Slice((*T)(b.c.p), b.n)
}

// Len is the number of elements.
func (b *Buffer[T]) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// DType is the element type.
func (b *Buffer[T]) DType() DType { return DTypeOf[T]() }

// Close releases the memory, at once or, while requests use it, when the
// last of them completes. Idempotent.
func (b *Buffer[T]) Close() error {
	if b != nil && b.c != nil {
		b.c.close()
	}
	return nil
}

func (b *Buffer[T]) core() *bufCore {
	if b == nil {
		return nil
	}
	return b.c
}
