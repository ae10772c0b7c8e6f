"""Context: the library's context, its worlds, and the one place where
completions and events come in (mw_wait/mw_test on the caller's thread,
mw_poll and mw_next_event when the context's fd turns readable in an
asyncio loop)."""

import asyncio
import atexit
import collections
import ctypes
import itertools
import math
import operator
import os
import threading
import weakref

from . import _capi
from . import metrics as _metrics
from .errors import ClosedError, check, invalid, last_error
from .events import EventStream, convert
from .request import timeout_ms
from .world import World

_lib = _capi.lib
_POLL_BATCH = 64
_EVENT_BACKLOG = 4096  # as the library's own queue: the oldest go first
_live_contexts = weakref.WeakSet()


def _config_value(key, value):
    if isinstance(value, bool) or value is None:
        raise invalid(f"config key '{key}': {value!r} is not a string or a number")
    return str(value).encode()


def _integer(what, v):
    """An int from an int-like value (numpy integers too), never a bool."""
    try:
        if not isinstance(v, bool):
            return operator.index(v)
    except TypeError:
        pass
    raise invalid(f"{what} must be an integer, got {v!r}")


def _op_timeout_ms(seconds):
    """mw_world_params_t.op_timeout_ms: 0 keeps the context's, -1 is no limit."""
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise invalid(f"op_timeout must be None, math.inf or seconds > 0, got {seconds!r}")
    if math.isinf(seconds):
        return -1
    return min(max(1, math.ceil(seconds * 1000)), 2**31 - 1)


def _path_failover(on):
    if on is None:
        return _capi.PATH_FAILOVER_DEFAULT
    if not isinstance(on, bool):
        raise invalid(f"path_failover must be None, True or False, got {on!r}")
    return _capi.PATH_FAILOVER_ON if on else _capi.PATH_FAILOVER_OFF


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(fut):
    if not fut.done():
        fut.set_result(None)


def _resolve_all(futures):
    """Wakes asyncio futures from whatever thread completed them."""
    here = _running_loop()
    for fut in futures:
        loop = fut.get_loop()
        if loop is here:
            _resolve(fut)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(_resolve, fut)


class Context:
    """A multiworld context: Redis connections, heartbeats, the worlds of
    this process. `config` takes every C configuration key as a keyword
    (heartbeat_timeout_ms=500, namespace="job7", ...); redis_url defaults
    to $MW_REDIS_URL, else redis://127.0.0.1:6379. Also a context manager:
    leaving it closes the context."""

    def __init__(self, redis_url=None, **config):
        if redis_url is not None:
            config = dict(config, redis_url=redis_url)
        cfg = ctypes.c_void_p()
        check(_lib.config_new(ctypes.byref(cfg)))
        try:
            for key, value in config.items():
                check(_lib.config_set(cfg, key.encode(), _config_value(key, value)))
            handle = ctypes.c_void_p()
            check(_lib.context_new(cfg, ctypes.byref(handle)))
        finally:
            _lib.config_free(cfg)
        self._handle = handle.value
        fd = ctypes.c_int()
        check(_lib.context_fd(self._handle, ctypes.byref(fd)))
        self._fd = fd.value
        self._forked = False
        self._closing = False
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._inflight = 0                     # threads inside a library call that close() must outlast
        self._keys = itertools.count(1)        # user_data of requests
        self._pending = {}                     # user_data -> Request not completed yet
        self._handles = {}                     # user_data -> mw_request_t* not freed yet
        self._worlds = {}                      # mw_world_t* -> World
        self._loops = weakref.WeakSet()        # asyncio loops watching the fd
        self._drain_lock = threading.Lock()
        self._completions = (_capi.CompletionInfo * _POLL_BATCH)()
        self._events = collections.deque(maxlen=_EVENT_BACKLOG)
        self._event_futures = []
        self._event_sleepers = 0               # threads blocked in mw_next_event
        _live_contexts.add(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<multiworld.Context {'closed' if self._handle is None else 'open'} worlds={len(self._worlds)}>"

    @property
    def fd(self):
        """The library's fd: readable while a completion or an event is
        queued (level-triggered). Do not read or close it."""
        if self._handle is None:
            raise self._closed_error()
        return self._fd

    @property
    def closed(self):
        return self._handle is None

    # ---- worlds ----------------------------------------------------------------
    def create_world(self, name, rank, size, backend="ucx", device=0, timeout=30.0, op_timeout=None,
                     path_failover=None):
        """Forms world `name` with `size` members, this process at `rank`;
        blocks until every member joined (timeout seconds at most).
        backend: "ucx" or "gloo" (host memory), "nccl" (CUDA memory on
        `device`, an int or a torch.device).
        This world's own settings (mw_world_params_t), None meaning the
        context's: op_timeout, seconds an operation may run before it breaks
        the world (math.inf: no limit); path_failover, True or False."""
        if not isinstance(name, str):
            raise invalid(f"world name must be a str, got {type(name).__name__}")
        if backend not in _capi.BACKENDS:
            raise invalid(f"backend {backend!r} is not one of 'ucx', 'gloo', 'nccl'")
        rank, size = _integer("rank", rank), _integer("size", size)
        if backend == "nccl" and getattr(device, "type", "cuda") != "cuda":
            raise invalid(f"device {device!r}: an NCCL world needs a CUDA device")
        index = getattr(device, "index", device)  # a torch.device or an int
        device = 0 if index is None else _integer("device", index)
        params = _capi.WorldParams(size=ctypes.sizeof(_capi.WorldParams), magic=_capi.WORLD_PARAMS_MAGIC,
                                   version=_capi.VERSION_CODE, name=name.encode(), rank=rank, world_size=size,
                                   backend=_capi.BACKENDS[backend], device=device, timeout_ms=timeout_ms(timeout),
                                   op_timeout_ms=_op_timeout_ms(op_timeout),
                                   path_failover=_path_failover(path_failover))
        out = ctypes.c_void_p()
        self._enter()
        try:
            status = _lib.world_create_with(self._handle, ctypes.byref(params), ctypes.byref(out))
            if status != _capi.OK:
                raise last_error(status)
            world = World(self, out.value, name, rank, size, backend, device if backend == "nccl" else None)
            self._worlds[out.value] = world
            return world
        finally:
            self._leave()

    async def create_world_async(self, *args, **kwargs):
        """create_world() without blocking the event loop: the rendezvous
        runs on a helper thread that ends with it."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def deliver(world):
            if fut.cancelled():  # nobody takes it: leave it again
                world.destroy()
            else:
                fut.set_result(world)

        def fail(error):
            if not fut.cancelled():
                fut.set_exception(error)

        def form():
            try:
                world = self.create_world(*args, **kwargs)
            except BaseException as e:  # handed to the awaiting task
                loop.call_soon_threadsafe(fail, e)
                return
            try:
                loop.call_soon_threadsafe(deliver, world)
            except RuntimeError:  # the loop is closed
                world.destroy()

        threading.Thread(target=form, name="mw-py-create", daemon=True).start()
        return await fut

    @property
    def worlds(self):
        """The worlds of this context not destroyed yet."""
        return list(self._worlds.values())

    def metrics(self):
        """A snapshot of this context's metrics: a multiworld.metrics.Metrics,
        the list of its series (Metric) with .text, Prometheus' text format.
        multiworld.metrics.Collector serves them to prometheus_client."""
        self._enter()
        try:
            return _metrics.snapshot(self._handle)
        finally:
            self._leave()

    def _forget_world(self, handle):
        self._worlds.pop(handle, None)

    # ---- events ----------------------------------------------------------------
    def events(self, timeout=None):
        """Iterator over events (world broken, store down/up, path down/up);
        `for` blocks, `async for` awaits. Ends after `timeout` seconds
        without an event (None: never) or when the context is closed."""
        return EventStream(self, timeout)

    def _convert_event(self, raw):
        world = self._worlds.get(raw.world) if raw.world else None
        ev = convert(raw, world)
        if raw.type == _capi.EVENT_WORLD_BROKEN and world is not None:
            world._broken_peer = raw.peer_rank
        return ev

    def _pump_events(self):
        """Moves the library's queued events into ours."""
        raw = _capi.EventInfo(size=ctypes.sizeof(_capi.EventInfo))
        got = False
        with self._lock:
            if self._handle is None or self._forked:
                return
            while _lib.next_event_info(self._handle, ctypes.byref(raw), 0) == _capi.OK:
                self._events.append(self._convert_event(raw))
                got = True
            if not got:
                return
            if self._event_sleepers:
                _lib.context_wake(self._handle)  # they find them here
            futures, self._event_futures = self._event_futures, []
        _resolve_all(futures)

    def _take_event(self):
        with self._lock:
            if self._events:
                return self._events.popleft()
            if self._handle is not None:
                self._pump_events()
            return self._events.popleft() if self._events else None

    def _next_event_blocking(self, ms):
        ev = self._take_event()
        if ev is not None or ms == 0:
            return ev
        raw = _capi.EventInfo(size=ctypes.sizeof(_capi.EventInfo))
        while True:
            with self._lock:
                if self._closing or self._handle is None:
                    return None
                self._inflight += 1
                self._event_sleepers += 1
            try:
                status = _lib.next_event_info(self._handle, ctypes.byref(raw), ms)
                ev = self._convert_event(raw) if status == _capi.OK else None
            finally:
                with self._lock:
                    self._event_sleepers -= 1
                self._leave()
            if ev is None:
                ev = self._take_event()  # woken because another thread took them
            if ev is not None or ms >= 0:
                return ev

    def _event_future(self):
        """A future resolved when events arrive; None once closed."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closing or self._handle is None:
                return None
            self._watch(loop)
            fut = loop.create_future()
            # Futures of iterations that timed out go here, not at the next event.
            self._event_futures = [f for f in self._event_futures if not f.done()] + [fut]
            return fut

    # ---- requests ----------------------------------------------------------------
    def _enter(self):
        with self._lock:
            if self._closing or self._handle is None:
                raise self._closed_error()
            self._inflight += 1

    def _leave(self):
        with self._lock:
            self._leave_locked()

    def _leave_locked(self):
        self._inflight -= 1
        if self._closing and self._inflight == 0:
            self._idle.notify_all()

    def _complete(self, req, status, message):
        """Records the final status of `req` (from any reporting path)."""
        if status == _capi.ERR_WORLD_BROKEN:
            self._pump_events()  # queued before the failure: names the peer
        with self._lock:
            if req._status is not None:
                return
            futures = req._finish(status, message)
            self._pending.pop(req._key, None)
        if futures:
            _resolve_all(futures)

    def _wait_request(self, req, ms):
        self._enter()
        try:
            status = _lib.wait(req._handle, ms)
            if status == _capi.ERR_TIMEOUT and ms >= 0:
                status = _lib.test(req._handle)
            message = None if status in (_capi.OK, _capi.IN_PROGRESS) else _lib.error_message()
        except BaseException:
            self._leave()
            raise
        with self._lock:
            self._leave_locked()
            if status == _capi.OK and req._status is None:
                # The common case, completed in the same locked step.
                futures = req._finish(status, None)
                self._pending.pop(req._key, None)
                if futures:
                    _resolve_all(futures)
                return status
        if status != _capi.IN_PROGRESS:
            self._complete(req, status, message)
        return status

    def _test_request(self, req):
        self._enter()
        try:
            status = _lib.test(req._handle)
            message = _lib.error_message() if status not in (_capi.OK, _capi.IN_PROGRESS) else None
        finally:
            self._leave()
        if status != _capi.IN_PROGRESS:
            self._complete(req, status, message)

    def _cancel_request(self, req):
        if req._status is not None:
            return
        self._enter()
        try:
            check(_lib.request_cancel(req._handle))
        finally:
            self._leave()

    def _future_for(self, req):
        loop = asyncio.get_running_loop()
        with self._lock:
            if req._status is not None:
                return None
            if self._handle is not None:
                self._watch(loop)
            fut = loop.create_future()
            if req._futures is None:
                req._futures = [fut]
            else:
                req._futures.append(fut)
            return fut

    def _free_request(self, key):
        with self._lock:
            handle = self._handles.pop(key, None)
            if handle is not None and self._handle is not None and not self._forked:
                _lib.request_free(handle)

    # ---- asyncio -----------------------------------------------------------------
    def _watch(self, loop):
        """Has `loop` drain the context whenever its fd is readable (under
        the lock)."""
        if loop not in self._loops:
            loop.add_reader(self._fd, self._drain)
            self._loops.add(loop)

    def _drain(self):
        """Takes every queued completion and event (the fd's reader)."""
        with self._lock:
            if self._closing or self._handle is None:
                return
            self._inflight += 1
        try:
            self._drain_completions()
            self._pump_events()
        finally:
            self._leave()

    def _drain_completions(self):
        n = ctypes.c_size_t()
        batch = self._completions
        while True:
            with self._drain_lock:
                check(_lib.poll_info(self._handle, batch, ctypes.sizeof(_capi.CompletionInfo), _POLL_BATCH, 0,
                                     ctypes.byref(n)))
                done = [(batch[i].user_data, batch[i].status, batch[i].request) for i in range(n.value)]
            for key, status, handle in done:
                req = self._pending.get(key)
                if req is None:
                    continue
                message = None
                if status != _capi.OK:
                    _lib.test(handle)  # sets this thread's last error to the reason
                    message = _lib.error_message()
                self._complete(req, status, message)
            if len(done) < _POLL_BATCH:
                return

    def _unwatch(self):
        here = _running_loop()
        for loop in list(self._loops):
            if loop.is_closed():
                continue
            if loop is here or not loop.is_running():
                loop.remove_reader(self._fd)
            else:
                loop.call_soon_threadsafe(loop.remove_reader, self._fd)
        self._loops = weakref.WeakSet()

    # ---- closing -----------------------------------------------------------------
    def _closed_error(self):
        if self._forked:
            return ClosedError("this multiworld.Context was created before os.fork(); create one in the child")
        return ClosedError("the multiworld.Context is closed")

    def close(self):
        """Destroys the remaining worlds (their pending requests fail with
        CancelledError), then frees the context. Idempotent."""
        with self._lock:
            if self._closing or self._handle is None:
                return
            self._closing = True
        for world in list(self._worlds.values()):
            world.destroy()
        with self._lock:
            if self._forked:
                self._handle = None
                return
            _lib.context_wake(self._handle)  # blocked mw_next_event calls return
            while self._inflight:
                self._idle.wait()
            self._drain_completions()
            futures = []
            for req in list(self._pending.values()):
                futures += req._finish(_capi.ERR_CANCELLED, "the context was closed") or []
            self._pending.clear()
            self._unwatch()
            for handle in self._handles.values():
                _lib.request_free(handle)
            self._handles.clear()
            _lib.context_free(self._handle)
            self._handle = None
            futures += self._event_futures
            self._event_futures = []
        _resolve_all(futures)

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def _after_fork_in_child(self):
        # The library's threads are not in the child: nothing may call it,
        # and a lock another thread of the parent held stays held here.
        self._forked = True
        self._closing = True
        self._handle = None
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._drain_lock = threading.Lock()
        for world in self._worlds.values():
            world._lock = threading.Lock()
            world._h = None


def _forget_contexts_in_child():
    for ctx in list(_live_contexts):
        ctx._after_fork_in_child()


def _close_all():
    for ctx in list(_live_contexts):
        ctx.close()


os.register_at_fork(after_in_child=_forget_contexts_in_child)
atexit.register(_close_all)
