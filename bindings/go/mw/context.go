package mw

/*
#include <stdlib.h>
#include <multiworld/multiworld.h>

// MW_WORLD_PARAMS_INIT is a braced initializer, which cgo cannot use.
static mw_world_params_t mwgo_world_params(void) {
  mw_world_params_t p = MW_WORLD_PARAMS_INIT;
  return p;
}
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
// op_timeout_ms, bind_address, log_level, store_timeout_ms, spin_us, and
// every other key of the library's README table (metrics, metrics_listen,
// ...). An unknown key or a bad value makes NewContext fail with
// ErrInvalidArgument.
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

// WithSpin sets spin_us: how long a waiting call (the Context's completion
// goroutine included) drives the progress of UCX worlds on its own thread
// before it sleeps. 0 never spins; the library's default is 20 µs.
func WithSpin(d time.Duration) Option {
	return WithConfig("spin_us", strconv.FormatInt(d.Microseconds(), 10))
}

// WithStoreTimeout sets store_timeout_ms, the limit of one Redis round trip.
func WithStoreTimeout(d time.Duration) Option { return WithConfig("store_timeout_ms", ms(d)) }

// WithCreateTimeout bounds CreateWorld when its context.Context has no
// deadline (default one minute; 0 means no limit). A deadline on the
// context.Context always wins.
func WithCreateTimeout(d time.Duration) Option {
	return func(o *options) { o.createTimeout = d }
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

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
	evCh   chan Event    // fed by the event pump, closed when it stops
	evDone chan struct{} // closed when the event pump stopped
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
		evCh:          make(chan Event),
		evDone:        make(chan struct{}),
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
	// The dispatcher's mw_context_wake also wakes the event pump, if any.
	leftover := c.disp.shutdown()
	c.evOnce.Do(func() { close(c.evCh); close(c.evDone) }) // no pump was started
	<-c.evDone
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
	var wo worldOptions
	for _, opt := range opts {
		opt(&wo)
	}
	return c.formWorld(ctx, backend, wo.device, func(timeoutMs C.int, h **C.mw_world_t) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		p := C.mwgo_world_params()
		p.name = cname
		p.rank = C.int(rank)
		p.world_size = C.int(size)
		p.backend = C.mw_backend_t(backend)
		p.device = C.int(wo.device)
		p.timeout_ms = timeoutMs
		p.op_timeout_ms = C.int(wo.opTimeoutMs)
		p.path_failover = C.mw_path_failover_t(wo.pathFailover)
		return call(func() C.mw_status_t { return C.mw_world_create_with(c.h, &p, h) })
	})
}

// formWorld runs a call that forms a world (a create, a shrink, a grow) on
// a goroutine of its own, with ctx's deadline (else the context's create
// timeout) as its timeout, so that ctx ending returns at once: a world the
// call forms after that is destroyed.
func (c *Context) formWorld(ctx context.Context, backend Backend, device int,
	form func(timeoutMs C.int, h **C.mw_world_t) error) (*World, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
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
		var h *C.mw_world_t
		err := form(C.int(timeoutMs), &h)
		var w *World
		if err == nil {
			w = newWorld(c, h, backend, device)
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

type worldOptions struct {
	device       int
	opTimeoutMs  int // mw_world_params_t.op_timeout_ms: 0 the context's, -1 none
	pathFailover int // mw_path_failover_t
}

// WithDevice sets the CUDA device ordinal of an NCCL world (default 0;
// ignored by host backends). The world's operations take DeviceBuffers of
// that device.
func WithDevice(ordinal int) WorldOption { return func(o *worldOptions) { o.device = ordinal } }

// WithWorldOpTimeout sets this world's op_timeout_ms: an operation running
// longer breaks the world. d > 0 is the limit (rounded up to a
// millisecond), d < 0 means no limit even where the context has one, and
// 0 keeps the context's (the default).
func WithWorldOpTimeout(d time.Duration) WorldOption {
	return func(o *worldOptions) {
		switch {
		case d < 0:
			o.opTimeoutMs = -1
		case d == 0:
			o.opTimeoutMs = 0
		default:
			o.opTimeoutMs = clampMs(d + time.Millisecond - 1)
		}
	}
}

// WithPathFailover turns path failover on or off for this world (default:
// the context's path_failover). On needs the context's on and a UCX or
// NCCL world (ErrInvalidArgument otherwise); one member's off puts the
// whole world on one path.
func WithPathFailover(on bool) WorldOption {
	return func(o *worldOptions) {
		o.pathFailover = int(C.MW_PATH_FAILOVER_OFF)
		if on {
			o.pathFailover = int(C.MW_PATH_FAILOVER_ON)
		}
	}
}
