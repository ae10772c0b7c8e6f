package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"context"
	"sync"
)

// Request is one asynchronous operation. It completes exactly once, with
// nil or an *Error (ErrWorldBroken, ErrCancelled, ErrInvalidArgument, ...).
//
// A Request holds nothing the caller must free: its Context completes it,
// frees the C request and releases the buffers it holds as soon as the
// library reports it done, whether or not anybody waits. Closing its World
// or Context completes it with ErrCancelled.
type Request struct {
	op   string
	done chan struct{}
	bufs []*bufCore // holds released at completion

	mu      sync.Mutex
	h       *C.mw_request_t // for Cancel; nil until issued and once completing
	taken   bool            // by the dispatcher, to free it
	fin     bool
	err     error
	pollers []*Poller
}

func newRequest(op string, bufs []*bufCore) *Request {
	return &Request{op: op, done: make(chan struct{}), bufs: bufs}
}

// issued records the C handle once mw_submit returned, unless the
// completion was delivered first (the handle is freed then).
func (r *Request) issued(h *C.mw_request_t) {
	r.mu.Lock()
	if !r.taken {
		r.h = h
	}
	r.mu.Unlock()
}

// detach takes the handle away from Cancel; the caller frees it.
func (r *Request) detach() *C.mw_request_t {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.taken = true
	h := r.h
	r.h = nil
	return h
}

// finish reads a failed request's reason, frees the handle and completes r.
func (r *Request) finish(h *C.mw_request_t, s C.mw_status_t) {
	r.detach() // h itself: the handle may not have been recorded yet
	var err error
	if s != C.MW_OK {
		err = call(func() C.mw_status_t { return C.mw_test(h) }) // sets mw_last_error to the reason
		if err == nil {                                          // cannot happen: the status is final
			err = &Error{Code: Code(s)}
		}
	}
	C.mw_request_free(h)
	r.complete(err)
}

func (r *Request) complete(err error) {
	for _, b := range r.bufs {
		b.release()
	}
	r.bufs = nil
	r.mu.Lock()
	r.fin, r.err = true, err
	ps := r.pollers
	r.pollers = nil
	r.mu.Unlock()
	close(r.done)
	for _, p := range ps {
		p.push(r)
	}
}

// Cancel asks the library to take the operation back (mw_request_cancel)
// and returns at once; the request then completes as usual. A receive that
// no message matched yet completes with ErrCancelled and its world stays
// usable (on UCX worlds). Anything else still pending (a transfer already
// moving data, a collective, and on Gloo and NCCL worlds every operation)
// breaks its world: the request completes with ErrWorldBroken and the other
// members hear of the break. No effect on a completed request.
func (r *Request) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock() // the dispatcher frees the handle only after taking it under mu
	if r.h != nil {
		C.mw_request_cancel(r.h)
	}
}

// Op names the operation: "send", "allreduce", ...
func (r *Request) Op() string { return r.op }

// Done is closed when the request completes, for use in select.
func (r *Request) Done() <-chan struct{} { return r.done }

// Test reports whether the request completed and, if so, its result.
func (r *Request) Test() (done bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fin, r.err
}

// Wait blocks until the request completes and returns its result. When
// ctx ends first, Wait cancels the request (Cancel) and still waits for it
// to complete, so the library is done with the request's buffers when Wait
// returns: nil when the operation completed after all, else the request's
// *Error (ErrCancelled, or ErrWorldBroken when it could not be taken back)
// wrapping ctx.Err(), so that errors.Is(err, context.Canceled) or
// context.DeadlineExceeded holds as well.
//
// To wait without cancelling, select on Done.
func (r *Request) Wait(ctx context.Context) error {
	select {
	case <-r.done:
		return r.result()
	default:
	}
	select {
	case <-r.done:
		return r.result()
	case <-ctx.Done():
	}
	r.Cancel()
	<-r.done
	return withCause(r.result(), ctx.Err())
}

func (r *Request) result() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// WaitAll waits for every request and returns the first error among them
// in argument order. When ctx ends, it cancels every request not yet
// completed and waits for them all, as Wait does.
func WaitAll(ctx context.Context, reqs ...*Request) error {
	var first error
	cancelled := false
	for i, r := range reqs {
		err := r.Wait(ctx)
		if err != nil && first == nil {
			first = err
		}
		if !cancelled && ctx.Err() != nil {
			cancelled = true
			for _, rest := range reqs[i+1:] {
				rest.Cancel() // all at once; the loop then waits for each
			}
		}
	}
	return first
}

// Poller collects the completions of many requests in the order they
// complete, like mw_poll over a set of requests chosen by the caller:
//
//	p := mw.NewPoller(reqs...)
//	for p.Len() > 0 {
//		r, err := p.Next(ctx) // err: ctx's only
//		_, opErr := r.Test()
//	}
//
// A request may be in several pollers. Safe for concurrent use.
type Poller struct {
	mu     sync.Mutex
	ready  []*Request
	outstd int // added and not yet returned by Next
	signal chan struct{}
}

// NewPoller returns a Poller watching reqs.
func NewPoller(reqs ...*Request) *Poller {
	p := &Poller{signal: make(chan struct{}, 1)}
	p.Add(reqs...)
	return p
}

// Add watches more requests; a completed one is ready at once.
func (p *Poller) Add(reqs ...*Request) {
	for _, r := range reqs {
		p.mu.Lock()
		p.outstd++
		p.mu.Unlock()
		r.mu.Lock()
		if r.fin {
			r.mu.Unlock()
			p.push(r)
			continue
		}
		r.pollers = append(r.pollers, p)
		r.mu.Unlock()
	}
}

func (p *Poller) push(r *Request) {
	p.mu.Lock()
	p.ready = append(p.ready, r)
	p.mu.Unlock()
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// Len is the number of requests added and not yet returned by Next.
func (p *Poller) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outstd
}

// Next returns the next request to complete (its result: r.Test()). It
// fails with ctx.Err() when ctx is done first (cancelling nothing), and
// with ErrNotFound when the poller has nothing left to return.
func (p *Poller) Next(ctx context.Context) (*Request, error) {
	for {
		p.mu.Lock()
		if len(p.ready) > 0 {
			r := p.ready[0]
			p.ready[0] = nil
			p.ready = p.ready[1:]
			p.outstd--
			p.mu.Unlock()
			return r, nil
		}
		empty := p.outstd == 0
		p.mu.Unlock()
		if empty {
			return nil, &Error{Code: ErrNotFound, Msg: "MW_ERR_NOT_FOUND: the poller has no request left"}
		}
		select {
		case <-p.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
