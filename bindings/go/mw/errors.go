package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
)

// Code is a status of the C library (mw_status_t). Every failing status is
// also a sentinel error, so that
//
//	errors.Is(err, mw.ErrWorldBroken)
//
// is true for any *Error carrying that code, wherever it was wrapped.
type Code int

// The failure statuses of mw_status_t, one sentinel each.
const (
	ErrInvalidArgument Code = C.MW_ERR_INVALID_ARGUMENT // bad argument, or a recv whose size differs from the send
	ErrNotFound        Code = C.MW_ERR_NOT_FOUND
	ErrAlreadyExists   Code = C.MW_ERR_ALREADY_EXISTS // e.g. a rank of a world claimed twice
	ErrTimeout         Code = C.MW_ERR_TIMEOUT        // world creation did not complete in time
	ErrWorldBroken     Code = C.MW_ERR_WORLD_BROKEN   // a member failed; the world is unusable
	ErrStore           Code = C.MW_ERR_STORE          // Redis unreachable, auth failure, bad data
	ErrBackend         Code = C.MW_ERR_BACKEND        // transport error not attributed to a peer
	ErrUnsupported     Code = C.MW_ERR_UNSUPPORTED    // e.g. NCCL not built in, or a library version mismatch
	ErrCancelled       Code = C.MW_ERR_CANCELLED      // the request's world was closed
	ErrInternal        Code = C.MW_ERR_INTERNAL
	ErrNoMemory        Code = C.MW_ERR_NO_MEMORY
)

// String is the C name of the status, e.g. "MW_ERR_WORLD_BROKEN"
// (mw_status_string).
func (c Code) String() string { return C.GoString(C.mw_status_string(C.mw_status_t(c))) }

// Error makes every Code a sentinel error value; its text is String's.
func (c Code) Error() string { return c.String() }

// Error is every error the library reports: the status and the message the
// C library gave for it (mw_last_error, or the request's own reason).
type Error struct {
	Code Code
	Msg  string
	err  error // a further cause, e.g. ErrClosed
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "mw: " + e.Code.String()
	}
	return "mw: " + e.Msg
}

// Is reports whether target is e's Code, or an *Error with the same Code.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return t == e.Code
	case *Error:
		return t.Code == e.Code && (t.Msg == "" || t.Msg == e.Msg)
	}
	return false
}

// Unwrap returns the further cause, if any: ErrClosed for closed handles,
// the context's error for a request cancelled because its context ended.
func (e *Error) Unwrap() error { return e.err }

// ErrClosed is wrapped by the *Error returned when a closed Context, World
// or Buffer is used.
var ErrClosed = errors.New("mw: use of a closed handle")

func closedError(code Code, what string) error {
	return &Error{Code: code, Msg: code.String() + ": " + what + " is closed", err: ErrClosed}
}

// withCause makes err, the result of a request cancelled because a
// context.Context ended, wrap that context's error too.
func withCause(err, cause error) error {
	e, ok := err.(*Error)
	if !ok || cause == nil || e.err != nil {
		return err
	}
	wrapped := *e
	wrapped.err = cause
	return &wrapped
}

func argError(msg string) error {
	return &Error{Code: ErrInvalidArgument, Msg: "MW_ERR_INVALID_ARGUMENT: " + msg}
}

// MemoryError reports memory of the wrong kind for a world's backend:
// device memory handed to a host world (UCX, Gloo), host memory (a Go slice
// or a Buffer) handed to an NCCL world, or device memory of another device
// than the NCCL world's. It is also an ErrInvalidArgument:
//
//	errors.Is(err, mw.ErrInvalidArgument) // true
//	var me *mw.MemoryError
//	errors.As(err, &me)                   // true, with the details
type MemoryError struct {
	Op          string // the operation, e.g. "allreduce"
	Operand     string // "buf", "send" or "recv"
	World       string
	Backend     Backend
	WorldDevice int // the NCCL world's CUDA device; -1 for host worlds
	Device      int // the CUDA device of the memory; -1 for host memory
}

func (e *MemoryError) Error() string {
	what := "host memory"
	if e.Device >= 0 {
		what = fmt.Sprintf("device memory of CUDA device %d", e.Device)
	}
	want := "host memory (a Go slice or a Buffer)"
	if e.Backend == NCCL {
		want = fmt.Sprintf("device memory of CUDA device %d (a DeviceBuffer)", e.WorldDevice)
	}
	return fmt.Sprintf("mw: MW_ERR_INVALID_ARGUMENT: %s: %s is %s, but world %q is a %v world, which moves %s",
		e.Op, e.Operand, what, e.World, e.Backend, want)
}

// Is makes a MemoryError match ErrInvalidArgument.
func (e *MemoryError) Is(target error) bool { return target == ErrInvalidArgument }

// call runs f, which makes one cgo call returning a status, and turns a
// failure into an *Error. mw_last_error is thread-local, so the goroutine
// stays on its OS thread from the call until the message is read.
func call(f func() C.mw_status_t) error {
	runtime.LockOSThread()
	s := f()
	var err error
	if s != C.MW_OK {
		err = &Error{Code: Code(s), Msg: C.GoString(C.mw_last_error())}
	}
	runtime.UnlockOSThread()
	return err
}
