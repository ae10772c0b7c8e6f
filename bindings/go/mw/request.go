package mw

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
	fin     bool
	err     error
	pollers []*Poller
}

func newRequest(op string, bufs []*bufCore) *Request {
	return &Request{op: op, done: make(chan struct{}), bufs: bufs}
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

// Wait blocks until the request completes and returns its result, or until
// ctx is done and returns ctx.Err(). Giving up does not cancel the
// operation: it still runs (a receive still consumes its message), and the
// buffers it uses stay alive until it completes; Wait may be called again.
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
		return ctx.Err()
	}
}

func (r *Request) result() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// WaitAll waits for every request and returns the first error among them in
// argument order, or ctx.Err() as soon as ctx is done.
func WaitAll(ctx context.Context, reqs ...*Request) error {
	var first error
	for _, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil && err == ctxErr {
				return err
			}
			if first == nil {
				first = err
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
// fails with ctx.Err() when ctx is done first, and with ErrNotFound when
// the poller has nothing left to return.
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
