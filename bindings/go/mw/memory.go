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

// liveBuffers counts memory blocks (host and device) allocated by this
// package and not yet freed.
var liveBuffers atomic.Int64

// hostMemory marks a bufCore of host memory in its device field.
const hostMemory = -1

// bufCore is a block of memory the library may use after the call that
// issued an operation returned: C memory of this package, or CUDA device
// memory. It is shared by its Buffer (or DeviceBuffer) and the requests
// using it, and freed once it is closed and neither a request nor a scoped
// view (Buffer.With) holds it, so nothing is freed while the library or
// the program still uses it.
type bufCore struct {
	mu     sync.Mutex
	host   unsafe.Pointer // C memory; nil for device memory and once freed
	dev    DevicePtr      // device memory
	device int            // CUDA ordinal, or hostMemory
	nbytes int
	free   func() // releases an allocation this package made; nil for borrowed memory
	refs   int
	closed bool
}

func newHostCore(nbytes int, zero bool) (*bufCore, error) {
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
	b := &bufCore{host: p, device: hostMemory, nbytes: nbytes}
	b.free = func() {
		C.free(b.host)
		b.host = nil
	}
	return b, nil
}

// acquire takes a hold for an operation or a view; fails once closed.
func (b *bufCore) acquire() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return closedError(ErrInvalidArgument, b.kind())
	}
	b.refs++
	return nil
}

func (b *bufCore) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs--
	if b.refs == 0 && b.closed {
		b.dispose()
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
		b.dispose()
	}
}

func (b *bufCore) dispose() { // under mu
	if b.free != nil {
		b.free()
		b.free = nil
		liveBuffers.Add(-1)
	}
}

// addr is the address the library gets: C or device memory, never Go's.
func (b *bufCore) addr() uintptr {
	if b.device == hostMemory {
		return uintptr(b.host)
	}
	return uintptr(b.dev)
}

func (b *bufCore) kind() string {
	if b.device == hostMemory {
		return "buffer"
	}
	return "device buffer"
}

// bytes views host memory as Go bytes; only while a hold or the owner
// keeps it alive, and never handed to the program.
func (b *bufCore) bytes() []byte { return unsafe.Slice((*byte)(b.host), b.nbytes) }

// Buf is memory the asynchronous operations take, because the library may
// use it after the call that issued an operation returned: *Buffer[T]
// (host memory) and *DeviceBuffer[T] (CUDA device memory) for every
// Element T.
type Buf interface {
	DType() DType
	Len() int
	core() *bufCore
}
