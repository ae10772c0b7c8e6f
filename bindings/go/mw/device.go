package mw

import (
	"fmt"
	"unsafe"
)

// DevicePtr is a raw CUDA device address (a CUdeviceptr, or a pointer
// from cudaMalloc or a framework's tensor). Go never dereferences it and
// the garbage collector does not see it as a pointer.
type DevicePtr uintptr

// DeviceBuffer is n elements of T in CUDA device memory of one device: the
// memory NCCL worlds move. Every operation on an NCCL world takes
// DeviceBuffers, on the world's device; host worlds (UCX, Gloo) refuse
// them with a *MemoryError, as NCCL worlds refuse host memory.
//
// Ownership:
//   - NewDeviceBuffer allocates the memory (cuMemAlloc) and the buffer owns
//     it: Close frees it, at once or, while requests use it, when the last
//     of them completes.
//   - WrapDevice borrows memory the caller allocated and keeps owning:
//     Close only stops new operations from using it. The caller frees the
//     memory, but not before every request that used it has completed.
//
// Ordering: an NCCL world runs its operations on its own CUDA stream. A
// request completes only once its work on that stream has finished, so
// after Wait (or Test, Done, a Poller) returns it, the results are ready on
// the device for any stream and any kernel. Conversely, the data an
// operation reads must be ready on the device before it is issued:
// synchronize the stream that produced it first.
//
// Do not change a DeviceBuffer while a request that uses it is in flight.
type DeviceBuffer[T Element] struct {
	c *bufCore
	n int
}

// NewDeviceBuffer allocates n elements of T, not initialized, on CUDA
// device `device` through the CUDA driver (libcuda.so.1), which is loaded
// on first use: the package builds without CUDA. Without a driver or a
// device it fails with ErrUnsupported saying which.
func NewDeviceBuffer[T Element](n, device int) (*DeviceBuffer[T], error) {
	if n < 0 {
		return nil, argError(fmt.Sprintf("device buffer length %d is negative", n))
	}
	nbytes := n * elemSize[T]()
	ptr, err := cudaAlloc(device, max1(nbytes))
	if err != nil {
		return nil, err
	}
	liveBuffers.Add(1)
	c := &bufCore{dev: ptr, device: device, nbytes: nbytes}
	c.free = func() {
		cudaFree(device, c.dev)
		c.dev = 0
	}
	return &DeviceBuffer[T]{c: c, n: n}, nil
}

// WrapDevice describes nbytes of device memory at ptr on CUDA device
// `device`, allocated and owned by the caller, as a DeviceBuffer. nbytes
// must be a whole number of elements of T.
func WrapDevice[T Element](ptr DevicePtr, nbytes, device int) (*DeviceBuffer[T], error) {
	size := elemSize[T]()
	switch {
	case ptr == 0:
		return nil, argError("device pointer is 0")
	case nbytes < 0 || nbytes%size != 0:
		return nil, argError(fmt.Sprintf("device buffer of %d bytes is not a whole number of %d-byte %v elements", nbytes, size, DTypeOf[T]()))
	case device < 0:
		return nil, argError(fmt.Sprintf("CUDA device %d is negative", device))
	}
	return &DeviceBuffer[T]{c: &bufCore{dev: ptr, device: device, nbytes: nbytes}, n: nbytes / size}, nil
}

func elemSize[T Element]() int {
	var zero T
	return int(unsafe.Sizeof(zero))
}

func max1(n int) int {
	if n < 1 {
		return 1 // a real allocation even for empty buffers
	}
	return n
}

// Ptr is the device address; 0 after Close.
func (d *DeviceBuffer[T]) Ptr() DevicePtr {
	if d == nil || d.c == nil {
		return 0
	}
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if d.c.closed {
		return 0
	}
	return d.c.dev
}

// Len is the number of elements.
func (d *DeviceBuffer[T]) Len() int {
	if d == nil {
		return 0
	}
	return d.n
}

// ByteLen is the size in bytes.
func (d *DeviceBuffer[T]) ByteLen() int { return d.Len() * elemSize[T]() }

// Device is the CUDA device ordinal the memory is on.
func (d *DeviceBuffer[T]) Device() int { return d.c.device }

// DType is the element type.
func (d *DeviceBuffer[T]) DType() DType { return DTypeOf[T]() }

// CopyFromHost copies src into the buffer's first elements, as copy()
// does, through the CUDA driver, and returns the number copied. The data
// is on the device when it returns.
func (d *DeviceBuffer[T]) CopyFromHost(src []T) (int, error) {
	if err := d.hold(); err != nil {
		return 0, err
	}
	defer d.c.release()
	n := len(src)
	if n > d.n {
		n = d.n
	}
	return n, cudaToDevice(d.c.device, d.c.dev, asBytes(src[:n]))
}

// CopyToHost copies the buffer's first elements into dst, as copy() does,
// through the CUDA driver, and returns the number copied.
func (d *DeviceBuffer[T]) CopyToHost(dst []T) (int, error) {
	if err := d.hold(); err != nil {
		return 0, err
	}
	defer d.c.release()
	n := len(dst)
	if n > d.n {
		n = d.n
	}
	return n, cudaToHost(d.c.device, asBytes(dst[:n]), d.c.dev)
}

func asBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*elemSize[T]())
}

func (d *DeviceBuffer[T]) hold() error {
	if d == nil || d.c == nil {
		return closedError(ErrInvalidArgument, "device buffer")
	}
	return d.c.acquire()
}

// Close ends the buffer's use by new operations and, for memory that
// NewDeviceBuffer allocated, frees it once no request uses it. Idempotent.
func (d *DeviceBuffer[T]) Close() error {
	if d != nil && d.c != nil {
		d.c.close()
	}
	return nil
}

func (d *DeviceBuffer[T]) core() *bufCore {
	if d == nil {
		return nil
	}
	return d.c
}
