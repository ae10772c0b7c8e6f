"""Request: one issued operation, completed once."""

import math

from . import _capi
from .errors import InvalidArgumentError, TimeoutError, WorldBrokenError, error_for


def timeout_ms(timeout, what="timeout"):
    """Seconds (None: forever) as the C API's milliseconds (-1: forever)."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout != timeout or timeout < 0:
        raise InvalidArgumentError(_capi.ERR_INVALID_ARGUMENT,
                                   f"{what} must be None or a number of seconds >= 0, got {timeout!r}")
    if math.isinf(timeout):
        return -1
    return min(int(math.ceil(timeout * 1000)), 2**31 - 1)


class Request:
    """An operation in flight. `wait()` blocks for it, `await req` suspends
    for it; both return the operation's output tensor (None for send and
    barrier) or raise the operation's error. The tensors it uses stay
    referenced here until it completes."""

    __slots__ = ("_ctx", "_world", "_key", "_handle", "_keep", "_result", "_status", "_error", "_futures",
                 "__weakref__")

    def __init__(self, ctx, world, key, keep, result):
        self._ctx = ctx
        self._world = world
        self._key = key
        self._handle = None
        self._keep = keep       # tensors the library reads or writes until completion
        self._result = result   # what wait() returns
        self._status = None     # final mw_status_t once known
        self._error = None
        self._futures = None    # asyncio futures awaiting it

    def __repr__(self):
        state = "pending" if self._status is None else _capi.lib.status_name(self._status)
        return f"<multiworld.Request {self._world.name!r} {state}>"

    def wait(self, timeout=None):
        """Blocks until the operation completed (`timeout` seconds at most,
        None: forever) and returns its output; raises its error, or
        multiworld.TimeoutError when the time ran out (the request goes on)."""
        if self._status is None:
            ms = timeout_ms(timeout)
            status = self._ctx._wait_request(self, ms)
            if status == _capi.IN_PROGRESS:
                raise TimeoutError(_capi.ERR_TIMEOUT, f"request on world '{self._world.name}' still running "
                                                      f"after {timeout} s")
        return self._outcome()

    def done(self):
        """True once the operation completed (successfully or not)."""
        if self._status is None:
            self._ctx._test_request(self)
        return self._status is not None

    def cancel(self):
        """Takes the operation back (mw_request_cancel): a receive no message
        matched yet completes with CancelledError on UCX worlds and its world
        lives on; anything else pending breaks its world. Returns at once;
        the completion follows as usual. No effect once completed."""
        self._ctx._cancel_request(self)

    def exception(self):
        """The error it completed with, None if it succeeded; raises
        InvalidArgumentError while it is still running."""
        if not self.done():
            raise InvalidArgumentError(_capi.ERR_INVALID_ARGUMENT, "the request is still running")
        return self._error

    def __await__(self):
        if self._status is None:
            fut = self._ctx._future_for(self)
            if fut is not None:
                yield from fut.__await__()
        return self._outcome()

    def _outcome(self):
        if self._error is not None:
            raise self._error
        return self._result

    # Called by the context, under its lock, exactly once.
    def _finish(self, status, message):
        self._status = status
        if status != _capi.OK:
            w = self._world
            if status == _capi.ERR_WORLD_BROKEN:
                self._error = WorldBrokenError(status, message, w.name, w._broken_peer)
            else:
                self._error = error_for(status, message)
        self._keep = None
        futures, self._futures = self._futures, None
        return futures

    def __del__(self):
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            ctx._free_request(self._key)
