"""Context events (world broken, store down/up, path down/up) and the
iterator over them, blocking or asynchronous."""

import asyncio
import collections
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


class Path(collections.namedtuple("Path", "index local_address remote_address outstanding_messages "
                                           "outstanding_bytes")):
    """What a PATH_DOWN / PATH_UP event says of the path to `peer_rank`: its
    index in the context's data_addresses, this member's and the peer's
    address of it, and the messages (and their bytes) this member held for
    the peer, sent and not yet acknowledged, when the path changed."""

    __slots__ = ()


class Event:
    """One event. `world` is the World (None for store events and for
    worlds destroyed since), `world_name` its name, `world_epoch` its
    incarnation (0 for store events), `peer_rank` the member blamed or whose
    path changed (-1 if unknown), `reason` an mw_status_t, `detail` the text
    (for people), `path` a Path for path events, else None."""

    __slots__ = ("type", "world", "world_name", "world_epoch", "peer_rank", "reason", "detail", "path")

    def __init__(self, type, world, world_name, peer_rank, reason, detail, world_epoch=0, path=None):
        self.type = type
        self.world = world
        self.world_name = world_name
        self.world_epoch = world_epoch
        self.peer_rank = peer_rank
        self.reason = reason
        self.detail = detail
        self.path = path

    def __repr__(self):
        name = self.type.name if isinstance(self.type, EventType) else self.type
        path = f" path={tuple(self.path)}" if self.path else ""
        return (f"<multiworld.Event {name} world={self.world_name!r} peer_rank={self.peer_rank}{path} "
                f"detail={self.detail!r}>")


def convert(raw, world):
    """An Event from an mw_event_info_t."""
    try:
        kind = EventType(raw.type)
    except ValueError:  # a type newer than this package: keep its number
        kind = raw.type
    path = None
    if raw.path_index >= 0:
        path = Path(raw.path_index, raw.local_address.decode("utf-8", "replace"),
                    raw.remote_address.decode("utf-8", "replace"), raw.outstanding_messages, raw.outstanding_bytes)
    return Event(kind, world, raw.world_name.decode("utf-8", "replace"), raw.peer_rank, raw.reason,
                 raw.detail.decode("utf-8", "replace"), raw.world_epoch, path)


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
