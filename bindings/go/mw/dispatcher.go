package mw

/*
#include <stdlib.h>
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// Completions taken from the library per mw_poll_info call.
const maxCompletions = 64

// dispatcher completes requests: one goroutine per Context sleeps in
// mw_poll_info with no timeout (a cgo call that holds its OS thread while it
// sleeps; nothing is polled on a timer) and hands each completion to its
// *Request. Close wakes it with mw_context_wake.
//
// Every request is registered under an id before it is issued, and the id
// travels as the request's user_data (mw_submit sets it at issue time), so
// a completion that arrives before the issuing call returned still finds
// its *Request. The dispatcher frees every C request handle it delivers.
type dispatcher struct {
	ctx   *C.mw_context_t
	comps *C.mw_completion_info_t // C array of maxCompletions

	mu      sync.Mutex
	pending map[uint64]*Request
	lastID  uint64

	quit chan struct{}
	done chan struct{}
}

func newDispatcher(h *C.mw_context_t) *dispatcher {
	return &dispatcher{
		ctx:     h,
		comps:   (*C.mw_completion_info_t)(C.calloc(maxCompletions, C.sizeof_mw_completion_info_t)),
		pending: make(map[uint64]*Request),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (d *dispatcher) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return
		default:
		}
		if d.pollOnce(-1) < 0 {
			// mw_poll_info fails only on arguments it never gets from here; do
			// not turn such a bug into a hot loop.
			select {
			case <-d.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// pollOnce delivers what one mw_poll_info returns (-1: wait until a completion
// comes or mw_context_wake is called; 0: only look). -1 on failure.
func (d *dispatcher) pollOnce(timeoutMs int) int {
	var n C.size_t
	if C.mw_poll_info(d.ctx, d.comps, C.sizeof_mw_completion_info_t, maxCompletions, C.int(timeoutMs), &n) != C.MW_OK {
		return -1
	}
	for _, c := range unsafe.Slice(d.comps, int(n)) {
		d.deliver(c.request, uint64(c.user_data), c.status)
	}
	return int(n)
}

func (d *dispatcher) deliver(h *C.mw_request_t, id uint64, s C.mw_status_t) {
	d.mu.Lock()
	r, ok := d.pending[id]
	delete(d.pending, id)
	d.mu.Unlock()
	if !ok { // cannot happen: every request is registered before it is issued
		C.mw_request_free(h)
		return
	}
	r.finish(h, s)
}

// add registers r before it is issued; its id is the request's user_data.
func (d *dispatcher) add(r *Request) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastID++
	d.pending[d.lastID] = r
	return d.lastID
}

// drop forgets a request whose issue failed.
func (d *dispatcher) drop(id uint64) {
	d.mu.Lock()
	delete(d.pending, id)
	d.mu.Unlock()
}

// shutdown stops the goroutine, which the caller has woken or is about to
// wake, and delivers what is left. The caller has destroyed every world, so
// every request has completed; the rare one not delivered is freed and
// returned, to be completed by the caller after the context is gone.
func (d *dispatcher) shutdown() []*Request {
	close(d.quit)
	C.mw_context_wake(d.ctx)
	<-d.done
	for d.pollOnce(0) > 0 {
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var left []*Request
	for _, r := range d.pending {
		if h := r.detach(); h != nil {
			C.mw_request_free(h)
		}
		left = append(left, r)
	}
	d.pending = map[uint64]*Request{}
	C.free(unsafe.Pointer(d.comps))
	d.comps = nil
	return left
}

func (d *dispatcher) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}
