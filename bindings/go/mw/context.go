package mw

/*
#include <stdlib.h>
#include <multiworld/multiworld.h>
*/
import "C"

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Option configures NewContext.
type Option func(*options)

type options struct {
	kv            [][2]string
	createTimeout time.Duration
}

// WithConfig sets a configuration key of the C library (mw_config_set):
// redis_url, namespace, heartbeat_interval_ms, heartbeat_timeout_ms,
// op_timeout_ms, bind_address, log_level, store_timeout_ms. An unknown key
// or a bad value makes NewContext fail with ErrInvalidArgument.
func WithConfig(key, value string) Option {
	return func(o *options) { o.kv = append(o.kv, [2]string{key, value}) }
}

// WithRedisURL sets redis_url: "redis://[user:pass@]host:port[/db]" or
// "unix:///path/to.sock". The default is $MW_REDIS_URL, else
// redis://127.0.0.1:6379.
func WithRedisURL(url string) Option { return WithConfig("redis_url", url) }

// WithNamespace sets the prefix of every Redis key (default "mw").
func WithNamespace(ns string) Option { return WithConfig("namespace", ns) }

// WithBindAddress sets the address the data transport listens on (default
// $MW_BIND_ADDRESS, else the host name).
func WithBindAddress(addr string) Option { return WithConfig("bind_address", addr) }

// WithLogLevel sets log_level: off, error, warn (default), info, debug.
func WithLogLevel(level string) Option { return WithConfig("log_level", level) }

// WithHeartbeat sets how often this process beats and checks its peers
// (heartbeat_interval_ms, default 100 ms) and how long a silent peer is
// tolerated before the worlds shared with it break (heartbeat_timeout_ms,
// default 1 s).
func WithHeartbeat(interval, timeout time.Duration) Option {
	return func(o *options) {
		WithConfig("heartbeat_interval_ms", ms(interval))(o)
		WithConfig("heartbeat_timeout_ms", ms(timeout))(o)
	}
}

// WithOpTimeout sets op_timeout_ms: an operation running longer breaks its
// world. 0 (the default) is no limit.
func WithOpTimeout(d time.Duration) Option { return WithConfig("op_timeout_ms", ms(d)) }

// WithStoreTimeout sets store_timeout_ms, the limit of one Redis round trip.
func WithStoreTimeout(d time.Duration) Option { return WithConfig("store_timeout_ms", ms(d)) }

// WithCreateTimeout bounds CreateWorld when its context.Context has no
// deadline (default one minute; 0 means no limit). A deadline on the
// context.Context always wins.
func WithCreateTimeout(d time.Duration) Option {
	return func(o *options) { o.createTimeout = d }
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// How long one blocking call into the library may last, so that Close and
// context cancellation are noticed without spinning.
const (
	pollSliceMs    = 50
	maxCompletions = 64
)

// Context is a process's membership in any number of worlds (mw_context_t):
// the Redis connections, heartbeats, and the completion of every request
// issued on its worlds. One per process is typical. All methods are safe
// for concurrent use. Close it when done: it closes its remaining worlds.
type Context struct {
	mu sync.RWMutex    // held shared by calls on h, exclusively by Close
	h  *C.mw_context_t // nil once closed

	createTimeout time.Duration
	disp          *dispatcher

	wmu    sync.Mutex
	worlds map[*C.mw_world_t]*World

	evOnce sync.Once
	evCh   chan Event
	stop   chan struct{} // closed by Close
}

var sigpipeOnce sync.Once

// NewContext connects to Redis and starts the context's heartbeat and
// completion machinery. It fails with ErrStore when Redis is unreachable,
// ErrInvalidArgument for a bad option, ErrUnsupported when the loaded C
// library does not match the header this package was compiled with.
func NewContext(opts ...Option) (*Context, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	o := options{createTimeout: time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	// The transports write to sockets from library threads; a peer that
	// dies turns such a write into SIGPIPE on a non-Go thread, which the Go
	// runtime answers by killing the process unless the program asked for
	// SIGPIPE. Asking for it (and dropping it) keeps the process alive; the
	// write fails with EPIPE and the library breaks that one world.
	sigpipeOnce.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })

	var cfg *C.mw_config_t
	if err := call(func() C.mw_status_t { return C.mw_config_new(&cfg) }); err != nil {
		return nil, err
	}
	defer C.mw_config_free(cfg)
	for _, kv := range o.kv {
		k, v := C.CString(kv[0]), C.CString(kv[1])
		err := call(func() C.mw_status_t { return C.mw_config_set(cfg, k, v) })
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if err != nil {
			return nil, err
		}
	}
	var h *C.mw_context_t
	if err := call(func() C.mw_status_t { return C.mw_context_new(cfg, &h) }); err != nil {
		return nil, err
	}
	c := &Context{
		h:             h,
		createTimeout: o.createTimeout,
		disp:          newDispatcher(h),
		worlds:        make(map[*C.mw_world_t]*World),
		stop:          make(chan struct{}),
	}
	go c.disp.loop()
	return c, nil
}

// Close closes every world of the context (their pending requests complete
// with ErrCancelled), stops the context's goroutines and frees it. It waits
// for a CreateWorld in progress to return. Idempotent; later calls on the
// context fail with an error wrapping ErrClosed.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	close(c.stop)
	c.wmu.Lock()
	worlds := make([]*World, 0, len(c.worlds))
	for _, w := range c.worlds {
		worlds = append(worlds, w)
	}
	c.worlds = map[*C.mw_world_t]*World{}
	c.wmu.Unlock()
	for _, w := range worlds {
		w.destroy() // pending requests complete with MW_ERR_CANCELLED
	}
	leftover := c.disp.shutdown()
	C.mw_context_free(c.h)
	c.h = nil
	for _, r := range leftover {
		r.complete(closedError(ErrCancelled, "context"))
	}
	return nil
}

func (c *Context) register(w *World) {
	c.wmu.Lock()
	c.worlds[w.h] = w
	c.wmu.Unlock()
}

func (c *Context) forget(h *C.mw_world_t) {
	c.wmu.Lock()
	delete(c.worlds, h)
	c.wmu.Unlock()
}

func (c *Context) lookup(h *C.mw_world_t) *World {
	if h == nil {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.worlds[h]
}

// dispatcher completes requests: one goroutine per Context takes finished
// requests from mw_poll (waiting at most pollSliceMs per call, so it never
// spins and notices shutdown) and hands each to its *Request. It owns every
// C request handle from issue to completion and frees it then.
type dispatcher struct {
	ctx   *C.mw_context_t
	comps *C.mw_completion_t // C array of maxCompletions

	mu      sync.Mutex
	pending map[*C.mw_request_t]*Request
	early   map[*C.mw_request_t]C.mw_status_t // completed before registered

	quit chan struct{}
	done chan struct{}
}

func newDispatcher(h *C.mw_context_t) *dispatcher {
	return &dispatcher{
		ctx:     h,
		comps:   (*C.mw_completion_t)(C.calloc(maxCompletions, C.sizeof_mw_completion_t)),
		pending: make(map[*C.mw_request_t]*Request),
		early:   make(map[*C.mw_request_t]C.mw_status_t),
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
		if d.pollOnce(pollSliceMs) < 0 {
			time.Sleep(pollSliceMs * time.Millisecond) // never hot-loop on a failing poll
		}
	}
}

// pollOnce delivers what mw_poll returns within timeoutMs; -1 on failure.
func (d *dispatcher) pollOnce(timeoutMs int) int {
	var n C.size_t
	if C.mw_poll(d.ctx, d.comps, maxCompletions, C.int(timeoutMs), &n) != C.MW_OK {
		return -1
	}
	for _, c := range unsafe.Slice(d.comps, int(n)) {
		d.deliver(c.request, c.status)
	}
	return int(n)
}

func (d *dispatcher) deliver(h *C.mw_request_t, s C.mw_status_t) {
	d.mu.Lock()
	r, ok := d.pending[h]
	if !ok {
		d.early[h] = s
		d.mu.Unlock()
		return
	}
	delete(d.pending, h)
	d.mu.Unlock()
	finish(h, s, r)
}

// register hands a just-issued request handle to the dispatcher.
func (d *dispatcher) register(h *C.mw_request_t, r *Request) {
	d.mu.Lock()
	if s, ok := d.early[h]; ok {
		delete(d.early, h)
		d.mu.Unlock()
		finish(h, s, r)
		return
	}
	d.pending[h] = r
	d.mu.Unlock()
}

// finish reads a failed request's reason, frees the handle and completes r.
func finish(h *C.mw_request_t, s C.mw_status_t, r *Request) {
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

// shutdown stops the goroutine and delivers what is left. The caller has
// destroyed every world, so every request has completed; the rare one that
// was not delivered is freed and returned, to be completed by the caller
// after the context is gone.
func (d *dispatcher) shutdown() []*Request {
	close(d.quit)
	<-d.done
	for d.pollOnce(0) > 0 {
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var left []*Request
	for h, r := range d.pending {
		C.mw_request_free(h)
		left = append(left, r)
	}
	for h := range d.early {
		C.mw_request_free(h)
	}
	d.pending, d.early = map[*C.mw_request_t]*Request{}, map[*C.mw_request_t]C.mw_status_t{}
	C.free(unsafe.Pointer(d.comps))
	d.comps = nil
	return left
}

func (d *dispatcher) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending) + len(d.early)
}

// CreateWorld joins the world `name` as `rank` of `size` members, blocking
// until every member joined (a collective call). The wait is bounded by
// ctx's deadline, else by WithCreateTimeout; the library then fails with
// ErrTimeout. When ctx is cancelled first, CreateWorld returns ctx.Err() at
// once and the world, should it still form, is closed as soon as it does.
//
// Errors: ErrAlreadyExists for a rank claimed by a live process,
// ErrInvalidArgument for a bad name (1..128 chars of [A-Za-z0-9._:-]),
// rank or size, or members disagreeing on size; ErrStore when Redis is
// down; ErrUnsupported for a backend not built in.
func (c *Context) CreateWorld(ctx context.Context, name string, rank, size int, backend Backend, opts ...WorldOption) (*World, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var wo worldOptions
	for _, opt := range opts {
		opt(&wo)
	}
	timeoutMs := -1
	if c.createTimeout > 0 {
		timeoutMs = clampMs(c.createTimeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		timeoutMs = clampMs(left)
	}

	c.mu.RLock() // released by the goroutine once the library returns
	if c.h == nil {
		c.mu.RUnlock()
		return nil, closedError(ErrInvalidArgument, "context")
	}
	var (
		mu        sync.Mutex
		abandoned bool
		finished  bool
		result    *World
		resErr    error
	)
	done := make(chan struct{})
	go func() {
		defer c.mu.RUnlock()
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var h *C.mw_world_t
		err := call(func() C.mw_status_t {
			return C.mw_world_create(c.h, cname, C.int(rank), C.int(size), C.mw_backend_t(backend),
				C.int(wo.device), C.int(timeoutMs), &h)
		})
		var w *World
		if err == nil {
			w = newWorld(c, h, backend)
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if w != nil {
				w.destroy()
			}
			return
		}
		if w != nil {
			c.register(w)
		}
		finished, result, resErr = true, w, err
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		if !finished {
			abandoned = true
			mu.Unlock()
			return nil, ctx.Err()
		}
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	return result, resErr
}

func clampMs(d time.Duration) int {
	m := d.Milliseconds()
	if m < 1 {
		m = 1
	}
	if m > 1<<31-1 {
		m = 1<<31 - 1
	}
	return int(m)
}

// WorldOption configures CreateWorld.
type WorldOption func(*worldOptions)

type worldOptions struct{ device int }

// WithDevice sets the CUDA device ordinal of an NCCL world (ignored by Gloo).
func WithDevice(ordinal int) WorldOption { return func(o *worldOptions) { o.device = ordinal } }
