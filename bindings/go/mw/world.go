package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"fmt"
	"sync"
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
