package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"errors"
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

// Unwrap returns the further cause, if any (ErrClosed for closed handles).
func (e *Error) Unwrap() error { return e.err }

// ErrClosed is wrapped by the *Error returned when a closed Context, World
// or Buffer is used.
var ErrClosed = errors.New("mw: use of a closed handle")

func closedError(code Code, what string) error {
	return &Error{Code: code, Msg: code.String() + ": " + what + " is closed", err: ErrClosed}
}

func argError(msg string) error {
	return &Error{Code: ErrInvalidArgument, Msg: "MW_ERR_INVALID_ARGUMENT: " + msg}
}

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
