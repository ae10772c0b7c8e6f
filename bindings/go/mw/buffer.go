package mw

import (
	"strconv"
	"unsafe"
)

// Buffer is an array of n elements of T in C memory (calloc): host memory
// the asynchronous operations may use after they returned, which Go memory
// does not allow.
//
// Its memory never escapes as a Go slice the program could keep: a slice
// kept past Close would read and write freed C memory unseen by the race
// detector and by cgocheck. The program reaches the elements by copying
// (CopyFrom, CopyTo, Values) or inside With, whose slice lives only during
// the call. Each of these fails with an error wrapping ErrClosed after
// Close, and Close during a With frees the memory only when With returns.
//
// Do not change a Buffer while a request that uses it is in flight (as with
// any asynchronous I/O buffer). Close may be called then: the memory is
// freed when the last such request completes, never before.
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
	c, err := newHostCore(n*int(unsafe.Sizeof(zero)), true)
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
	b.CopyFrom(s)
	return b, nil
}

// With calls f with the buffer's elements as a slice of its C memory, and
// returns f's error. The slice is valid only until f returns: do not keep
// it, or any part of it, past the call. The buffer stays allocated while f
// runs, even if it is closed meanwhile. Fails without calling f once the
// buffer is closed.
func (b *Buffer[T]) With(f func(elems []T) error) error {
	if err := b.hold(); err != nil {
		return err
	}
	defer b.c.release()
	return f(unsafe.Slice((*T)(b.c.host), b.n))
}

// CopyFrom copies src into the buffer's first elements, as copy() does,
// and returns the number copied.
func (b *Buffer[T]) CopyFrom(src []T) (int, error) {
	n := 0
	err := b.With(func(elems []T) error {
		n = copy(elems, src)
		return nil
	})
	return n, err
}

// CopyTo copies the buffer's first elements into dst, as copy() does, and
// returns the number copied.
func (b *Buffer[T]) CopyTo(dst []T) (int, error) {
	n := 0
	err := b.With(func(elems []T) error {
		n = copy(dst, elems)
		return nil
	})
	return n, err
}

// Values returns a copy of the buffer's elements in Go memory.
func (b *Buffer[T]) Values() ([]T, error) {
	out := make([]T, b.Len())
	if _, err := b.CopyTo(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *Buffer[T]) hold() error {
	if b == nil || b.c == nil {
		return closedError(ErrInvalidArgument, "buffer")
	}
	return b.c.acquire()
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

// Close releases the memory, at once or, while requests or a With use it,
// when the last of them ends. Idempotent.
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
