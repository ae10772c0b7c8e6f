package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"unsafe"
)

// World is this process's membership in one world (mw_world_t): a
// communicator and a fault domain of Size members, this one being Rank.
// Operations on one world run in issue order; collectives must be issued in
// the same order on every member. All methods are safe for concurrent use;
// Close waits for operations being issued and then destroys the world.
type World struct {
	c   *Context
	key *C.mw_world_t // the handle at creation: identity in the context's table

	mu sync.RWMutex  // held shared by calls on h, exclusively by destroy
	h  *C.mw_world_t // nil once destroyed

	name    string
	rank    int
	size    int
	epoch   uint64
	backend Backend
	device  int // the CUDA device of an NCCL world
}

func newWorld(c *Context, h *C.mw_world_t, b Backend, device int) *World {
	return &World{
		c: c, key: h, h: h, backend: b, device: device,
		name:  C.GoString(C.mw_world_name(h)),
		rank:  int(C.mw_world_rank(h)),
		size:  int(C.mw_world_size(h)),
		epoch: uint64(C.mw_world_epoch(h)),
	}
}

// Name is the world's name.
func (w *World) Name() string { return w.name }

// Rank is this member's rank, in [0, Size()).
func (w *World) Rank() int { return w.rank }

// Size is the number of members.
func (w *World) Size() int { return w.size }

// Epoch is the incarnation number Redis gave this world at creation (>= 1):
// a name created again after it broke gets a new epoch.
func (w *World) Epoch() uint64 { return w.epoch }

// Backend is the transport the world was created with.
func (w *World) Backend() Backend { return w.backend }

// Device is the CUDA device of an NCCL world (WithDevice), whose memory
// its operations take; -1 for host worlds.
func (w *World) Device() int {
	if w.backend != NCCL {
		return hostMemory
	}
	return w.device
}

// Context is the Context the world belongs to.
func (w *World) Context() *Context { return w.c }

func (w *World) String() string {
	return fmt.Sprintf("world %q epoch %d rank %d/%d", w.name, w.epoch, w.rank, w.size)
}

// State is WorldReady, WorldBroken once a member failed (every operation
// then fails with ErrWorldBroken), or WorldClosed after Close.
func (w *World) State() WorldState {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.h == nil {
		return WorldClosed
	}
	return WorldState(C.mw_world_state(w.h))
}

// Shrink returns the world without the members exclude (ranks of this
// world; nil: exactly those its break named), as its successor
// (mw_world_shrink): the same name, the next epoch, the survivors in their
// order renumbered from 0. Every survivor calls it with the same list; one
// whose list differs gets ErrInvalidArgument naming both, and an excluded
// member gets ErrWorldBroken. ctx's deadline bounds it. This World is
// retired afterwards (WorldRetired): Close frees it.
func (w *World) Shrink(ctx context.Context, exclude []int, mode ShrinkMode) (*World, error) {
	ranks := make([]C.int, len(exclude))
	for i, r := range exclude {
		ranks[i] = C.int(r)
	}
	return w.resized(ctx, func(h *C.mw_world_t, timeoutMs C.int, out **C.mw_world_t) C.mw_status_t {
		var list *C.int
		if len(ranks) > 0 {
			// Go memory for the call only: the library copies what it keeps.
			list = (*C.int)(unsafe.Pointer(&ranks[0]))
		}
		return C.mw_world_shrink(h, list, C.int(len(ranks)), C.int(mode), timeoutMs, out)
	})
}

// Grow returns this world with newSize members, as its successor
// (mw_world_grow): every member calls it and keeps its rank; each newcomer
// calls CreateWorld with the world's name, newSize and a rank from Size()
// up. A newcomer that does not come before ctx's deadline (else the
// context's create timeout) fails it with ErrTimeout, and this world runs
// on; otherwise it is retired.
func (w *World) Grow(ctx context.Context, newSize int) (*World, error) {
	return w.resized(ctx, func(h *C.mw_world_t, timeoutMs C.int, out **C.mw_world_t) C.mw_status_t {
		return C.mw_world_grow(h, C.int(newSize), timeoutMs, out)
	})
}

func (w *World) resized(ctx context.Context,
	resize func(h *C.mw_world_t, timeoutMs C.int, out **C.mw_world_t) C.mw_status_t) (*World, error) {
	return w.c.formWorld(ctx, w.backend, w.device, func(timeoutMs C.int, out **C.mw_world_t) error {
		w.mu.RLock() // the handle stays until the library returned
		defer w.mu.RUnlock()
		if w.h == nil {
			return closedError(ErrInvalidArgument, "world")
		}
		return call(func() C.mw_status_t { return resize(w.h, timeoutMs, out) })
	})
}

// Close destroys the world, healthy or broken, in bounded time: its pending
// requests complete with ErrCancelled and the other members see the world
// break. Idempotent.
func (w *World) Close() error {
	err := w.destroy()
	w.c.forget(w.key)
	return err
}

func (w *World) destroy() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == nil {
		return nil
	}
	h := w.h
	w.h = nil
	return call(func() C.mw_status_t { return C.mw_world_destroy(h) })
}
