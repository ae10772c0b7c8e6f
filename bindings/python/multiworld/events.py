"""Context events (world broken, store down/up, path down/up) and the
iterator over them, blocking or asynchronous."""

import asyncio
import enum
import time

from . import _capi
from .request import timeout_ms


class EventType(enum.IntEnum):
    WORLD_BROKEN = _capi.EVENT_WORLD_BROKEN
    STORE_DOWN = _capi.EVENT_STORE_DOWN
    STORE_UP = _capi.EVENT_STORE_UP
    PATH_DOWN = _capi.EVENT_PATH_DOWN
    PATH_UP = _capi.EVENT_PATH_UP


class Event:
    """One event. `world` is the World (None for store events and for
    worlds destroyed since), `world_name` its name, `peer_rank` the member
    blamed (-1 if unknown), `reason` an mw_status_t, `detail` the text."""

    __slots__ = ("type", "world", "world_name", "peer_rank", "reason", "detail")

    def __init__(self, type, world, world_name, peer_rank, reason, detail):
        self.type = type
        self.world = world
        self.world_name = world_name
        self.peer_rank = peer_rank
        self.reason = reason
        self.detail = detail

    def __repr__(self):
        return (f"<multiworld.Event {self.type.name} world={self.world_name!r} peer_rank={self.peer_rank} "
                f"detail={self.detail!r}>")


def convert(raw, world):
    try:
        kind = EventType(raw.type)
    except ValueError:  # a type newer than this package: keep its number
        kind = raw.type
    return Event(kind, world, raw.world_name.decode("utf-8", "replace"), raw.peer_rank, raw.reason,
                 raw.detail.decode("utf-8", "replace"))


class EventStream:
    """`for ev in ctx.events(timeout)` blocks for the next event;
    `async for ev in ctx.events(timeout)` awaits it on the context's fd.
    Iteration ends when no event came within `timeout` seconds (None:
    never) or when the context is closed."""

    def __init__(self, ctx, timeout):
        self._ctx = ctx
        self._ms = timeout_ms(timeout)
        self._timeout = timeout

    def __iter__(self):
        return self

    def __next__(self):
        ev = self._ctx._next_event_blocking(self._ms)
        if ev is None:
            raise StopIteration
        return ev

    def __aiter__(self):
        return self

    async def __anext__(self):
        ctx = self._ctx
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while True:
            ev = ctx._take_event()
            if ev is not None:
                return ev
            fut = ctx._event_future()
            if fut is None:  # closed
                raise StopAsyncIteration
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                fut.cancel()
                raise StopAsyncIteration
            try:
                await asyncio.wait_for(fut, left)
            except asyncio.TimeoutError:
                raise StopAsyncIteration from None
