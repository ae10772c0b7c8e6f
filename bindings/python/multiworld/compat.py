"""pymultiworld's programming model over this package, so its programs run
with one changed import line:

    from multiworld.manager import WorldManager   # pymultiworld
    from multiworld.compat import WorldManager    # here

WorldManager forms and removes worlds by name; its WorldCommunicator runs
async send/recv and collectives on a named world and raises
BrokenWorldException when that world broke, after which the world is
removed. Differences: rendezvous goes through Redis ($MW_REDIS_URL), so
`addr` and `port` are accepted and ignored; there is no patched PyTorch and
no watchdog thread (the library's context detects failures); removed
worlds are really destroyed.
"""

import asyncio
import os
import sys

from . import _capi
from .context import Context
from .errors import CancelledError, WorldBrokenError
from .events import EventType

DEFAULT_WORLD_NAME = ""


class BrokenWorldException(WorldBrokenError):
    """The world broke (a member failed) or was removed."""

    def __init__(self, world_name, msg, peer_rank=-1):
        super().__init__(_capi.ERR_WORLD_BROKEN, f"world {world_name!r} is broken: {msg}", world_name, peer_rank)


class WorldManager:
    """Creates and removes worlds. Construct it inside a running asyncio
    loop (it watches for broken worlds there). `config` goes to
    multiworld.Context (redis_url, namespace, heartbeat_timeout_ms, ...)."""

    def __init__(self, enable_monitor=True, **config):
        self._ctx = Context(**config)
        self._worlds = {}  # name -> World, None while it forms
        self._communicator = WorldCommunicator(self)
        self._monitor = None
        if enable_monitor:
            self._monitor = asyncio.get_running_loop().create_task(self._remove_broken_worlds())

    @property
    def communicator(self):
        """The WorldCommunicator of these worlds."""
        return self._communicator

    @property
    def context(self):
        """The underlying multiworld.Context."""
        return self._ctx

    async def initialize_world(self, world_name, rank, world_size, backend="gloo", addr="127.0.0.1", port=-1,
                               timeout=30, device=None):
        """Forms `world_name` with `world_size` members, this process at
        `rank`; backend "gloo" (or "ucx") for CPU tensors, "nccl" for CUDA
        tensors on `device`. `addr` and `port` are not used: members meet
        through Redis."""
        self.add_world(world_name, backend)
        try:
            kwargs = {}
            if backend == "nccl" and device is not None:
                kwargs["device"] = device
            world = await self._ctx.create_world_async(world_name, rank, world_size, backend=backend,
                                                       timeout=timeout, **kwargs)
        except BaseException:
            self._worlds.pop(world_name, None)
            self._communicator.remove_world(world_name)
            raise
        self._worlds[world_name] = world
        self._communicator._broken[world_name] = False

    def add_world(self, world_name, backend):
        """Registers a world name (initialize_world does this)."""
        if world_name in self._worlds:
            raise ValueError(f"add_world: {world_name!r} is in use; remove it first")
        self._worlds[world_name] = None
        self._communicator.add_world(world_name, backend)

    def remove_world(self, world_name):
        """Destroys the world and forgets its name."""
        if world_name not in self._worlds:
            raise ValueError(f"remove_world: no world {world_name!r} (never added, or removed already)")
        world = self._worlds.pop(world_name)
        self._communicator.remove_world(world_name)
        if world is not None:
            world.destroy()

    def cleanup(self):
        """Flushes stdout, closes every world and ends the process with
        status 0 (os._exit), as pymultiworld does: no code after it runs."""
        sys.stdout.flush()
        sys.stderr.flush()
        self._ctx.close()
        os._exit(0)

    def _world(self, world_name):
        return self._worlds.get(world_name)

    async def _remove_broken_worlds(self):
        async for ev in self._ctx.events():
            if ev.type != EventType.WORLD_BROKEN or ev.world is None:
                continue
            if self._worlds.get(ev.world_name) is ev.world:
                self.remove_world(ev.world_name)


class WorldCommunicator:
    """Async operations on named worlds. Every call raises
    BrokenWorldException when the world is broken, removed or unknown."""

    def __init__(self, world_manager):
        self._manager = world_manager
        self._broken = {}

    def add_world(self, world_name, backend):
        self._broken[world_name] = True  # until it has formed

    def remove_world(self, world_name):
        if world_name in self._broken:
            self._broken[world_name] = True

    def is_broken(self, world_name):
        """True when the world is broken, removed or unknown."""
        return self._broken.get(world_name, True)

    async def send(self, tensor, dst, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "send", lambda w: w.send(tensor, dst))

    async def recv(self, tensor, src, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "recv", lambda w: w.recv(tensor, src))

    async def broadcast(self, tensor, src, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "broadcast", lambda w: w.broadcast(tensor, src))

    async def all_reduce(self, tensor, op="sum", world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "all_reduce", lambda w: w.all_reduce(tensor, op))

    async def reduce(self, tensor, dst, op="sum", world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "reduce", lambda w: w.reduce(tensor, dst, op))

    async def all_gather(self, tensors, tensor, world_name=DEFAULT_WORLD_NAME):
        """Gathers every rank's `tensor` into the list `tensors`."""
        world = self._get(world_name, "all_gather")
        _check_list("all_gather", tensors, world.size, tensor)
        staging = _stack_like(tensor, world.size)
        await self._run(world_name, "all_gather", lambda w: w.all_gather(staging, tensor))
        _unstack(staging, tensors)

    async def gather(self, tensor, gather_list=None, dst=0, world_name=DEFAULT_WORLD_NAME):
        """Rank `dst` gets every rank's `tensor` in `gather_list`."""
        world = self._get(world_name, "gather")
        staging = None
        if world.rank == dst:
            _check_list("gather", gather_list, world.size, tensor)
            staging = _stack_like(tensor, world.size)
        await self._run(world_name, "gather", lambda w: w.gather(staging, tensor, dst))
        if staging is not None:
            _unstack(staging, gather_list)

    async def scatter(self, tensor, scatter_list=None, src=0, world_name=DEFAULT_WORLD_NAME):
        """Rank `src` sends scatter_list[j] to rank j, into its `tensor`."""
        world = self._get(world_name, "scatter")
        staging = None
        if world.rank == src:
            _check_list("scatter", scatter_list, world.size, tensor)
            staging = _concat(scatter_list)
        await self._run(world_name, "scatter", lambda w: w.scatter(tensor, staging, src))

    def _get(self, world_name, op):
        world = self._manager._world(world_name)
        if world is None or self.is_broken(world_name):
            raise BrokenWorldException(world_name, f"{op} on a world that is unknown, removed or not formed yet")
        return world

    async def _run(self, world_name, op, issue):
        world = self._get(world_name, op)
        try:
            await issue(world)
        except (WorldBrokenError, CancelledError) as e:
            peer = getattr(e, "peer_rank", -1)
            try:
                self._manager.remove_world(world_name)
            except ValueError:
                pass  # removed already, e.g. by the monitor
            raise BrokenWorldException(world_name, e.message, peer) from e


# ---- lists of tensors through one contiguous buffer -------------------------------
def _check_list(op, tensors, size, like):
    if tensors is None or len(tensors) != size:
        raise ValueError(f"{op}: need a list of {size} tensors (the world size), got "
                         f"{'None' if tensors is None else len(tensors)}")
    for t in tensors:
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"{op}: every tensor of the list must have shape {tuple(like.shape)} and dtype "
                             f"{like.dtype}, got {tuple(t.shape)} {t.dtype}")


def _is_torch(t):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(t, torch.Tensor)


def _stack_like(t, n):
    if _is_torch(t):
        return t.new_empty((n,) + tuple(t.shape))
    import numpy as np
    return np.empty((n,) + t.shape, dtype=t.dtype)


def _concat(tensors):
    if _is_torch(tensors[0]):
        return sys.modules["torch"].stack(list(tensors)).contiguous()
    import numpy as np
    return np.ascontiguousarray(np.stack(tensors))


def _unstack(staging, tensors):
    for i, t in enumerate(tensors):
        if _is_torch(t):
            t.copy_(staging[i])
        else:
            t[...] = staging[i]
