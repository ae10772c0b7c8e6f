"""pymultiworld 0.2.3's `multiworld.communicator` over this package.

WorldCommunicator runs pymultiworld's async send/recv and collectives on a
world named by its last argument; BrokenWorldException is what they raise
once that world is unusable: broken by a member that failed (the message
names the world and the member), removed by the program, or never formed
in this process. The operation that meets the break removes the world, as
in pymultiworld, and every later call on it repeats why it went.
"""

import asyncio
import logging
import re
import sys

from . import _capi, _m8d
from .errors import CancelledError, WorldBrokenError
from .world import WorldState

# pymultiworld's patched torch.distributed names its default world "": no
# world has that name here, so a call without world_name raises
# BrokenWorldException (the unknown-world message says what to pass).
DEFAULT_WORLD_NAME = ""

logger = logging.getLogger(__name__)
_m8d.configure_logging()

# The library's text for a broken world, before the part worth repeating.
_BROKEN_PREFIX = re.compile(r"^MW_ERR_[A-Z_]+: world '.*?' is broken: ")
# How long a failed operation waits for the break event that names the member.
_BLAME_WAIT_S = 0.5


class BrokenWorldException(WorldBrokenError):
    """The world is unusable. str() is pymultiworld's "<world> broken:
    <why>"; also a multiworld.WorldBrokenError with .world and .peer_rank
    (the member blamed, -1 when no member is)."""

    def __init__(self, world_name, msg, peer_rank=-1):
        self._world_name = world_name
        self._msg = msg
        super().__init__(_capi.ERR_WORLD_BROKEN, f"{world_name} broken: {msg}", world_name, peer_rank)

    def __str__(self):
        return f"{self._world_name} broken: {self._msg}"

    def __reduce__(self):  # pickles (multiprocessing queues) with its own arguments
        return type(self), (self._world_name, self._msg, self.peer_rank)


def member_failed(peer_rank, detail):
    """Why a world broke, naming the member the library blamed."""
    detail = _BROKEN_PREFIX.sub("", detail or "").strip()
    if peer_rank < 0:  # e.g. a gloo error whose address matches no member's
        return f"a member failed (the library could not tell which): {detail}" if detail else "a member failed"
    if detail.startswith(f"rank {peer_rank} "):
        return detail  # the library's text names it already
    return f"rank {peer_rank} failed: {detail}" if detail else f"rank {peer_rank} failed"


class WorldCommunicator:
    """Async operations on named worlds (pymultiworld's signatures). Every
    call raises BrokenWorldException when its world is broken, removed or
    unknown; other failures (a tensor of the wrong size, dtype or device)
    raise multiworld's errors, ValueError among them."""

    def __init__(self, world_manager):
        self._manager = world_manager
        self._broken = {}  # name -> False while usable
        self._why = {}     # name -> (msg, peer_rank): why it went, for every later call

    def add_world(self, world_name, backend):
        """Called by WorldManager: the world is forming (not usable yet)."""
        self._broken[world_name] = True
        self._why[world_name] = ("still forming: initialize_world() has not returned", -1)

    def _formed(self, world_name):
        self._broken[world_name] = False
        self._why.pop(world_name, None)

    def remove_world(self, world_name):
        """Called by WorldManager: the world is gone; the reason recorded
        first (a member's failure) stays."""
        logger.debug("remove world %s", world_name)
        self._broken[world_name] = True
        self._why.setdefault(world_name, ("removed by WorldManager.remove_world()", -1))

    def _record_break(self, world_name, msg, peer_rank):
        self._why[world_name] = (msg, peer_rank)

    def is_broken(self, world_name):
        """True when the world is broken, removed or unknown."""
        if self._broken.get(world_name, True):
            return True
        world = self._manager._world(world_name)
        return world is None or world.state != WorldState.READY

    async def send(self, tensor, dst, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "send", lambda w: w.send(tensor, dst))

    async def recv(self, tensor, src, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "recv", lambda w: w.recv(tensor, src))

    async def broadcast(self, tensor, src, world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "broadcast", lambda w: w.broadcast(tensor, src))

    async def all_reduce(self, tensor, op="sum", world_name=DEFAULT_WORLD_NAME):
        """In place; op: a torch.distributed.ReduceOp, or "sum", "prod",
        "min", "max", "avg"."""
        await self._run(world_name, "all_reduce", lambda w: w.all_reduce(tensor, op))

    async def reduce(self, tensor, dst, op="sum", world_name=DEFAULT_WORLD_NAME):
        await self._run(world_name, "reduce", lambda w: w.reduce(tensor, dst, op))

    async def all_gather(self, tensors, tensor, world_name=DEFAULT_WORLD_NAME):
        """Gathers every rank's `tensor` into the list `tensors`."""
        world = self._get(world_name)
        _check_list("all_gather", tensors, world.size, tensor)
        staging = _stack_like(tensor, world.size)
        await self._run(world_name, "all_gather", lambda w: w.all_gather(staging, tensor))
        _unstack(staging, tensors)

    async def gather(self, tensor, gather_list=None, dst=0, world_name=DEFAULT_WORLD_NAME):
        """Rank `dst` gets every rank's `tensor` in `gather_list`."""
        world = self._get(world_name)
        staging = None
        if world.rank == dst:
            _check_list("gather", gather_list, world.size, tensor)
            staging = _stack_like(tensor, world.size)
        await self._run(world_name, "gather", lambda w: w.gather(staging, tensor, dst))
        if staging is not None:
            _unstack(staging, gather_list)

    async def scatter(self, tensor, scatter_list=None, src=0, world_name=DEFAULT_WORLD_NAME):
        """Rank `src` sends scatter_list[j] to rank j, into its `tensor`."""
        world = self._get(world_name)
        staging = None
        if world.rank == src:
            _check_list("scatter", scatter_list, world.size, tensor)
            staging = _concat(scatter_list)
        await self._run(world_name, "scatter", lambda w: w.scatter(tensor, staging, src))

    def _get(self, world_name):
        world = self._manager._world(world_name)
        if world is not None and not self._broken.get(world_name, True):
            return world
        msg, peer = self._why.get(world_name) or (
            f"no such world in this process: initialize_world({world_name!r}, ...) never formed it", -1)
        raise BrokenWorldException(world_name, msg, peer)

    async def _run(self, world_name, op, issue):
        world = self._get(world_name)
        try:
            await issue(world)
        except (WorldBrokenError, CancelledError) as e:
            # Cancelled: the monitor removed the world under this operation
            # and recorded why; otherwise this operation met the break first.
            peer = getattr(e, "peer_rank", -1)
            if peer < 0 and world_name not in self._why:
                peer = await self._blamed(world_name, world)
            msg, peer = self._why.get(world_name) or (member_failed(peer, e.message), peer)
            self._manager._drop(world_name, world, msg, peer)
            raise BrokenWorldException(world_name, msg, peer) from e

    async def _blamed(self, world_name, world):
        """The member the world's break event blames. An operation can fail
        (a connection closed) a moment before the library has queued that
        event, so it gets a short while to come; -1 if none names one."""
        ctx = self._manager.context
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _BLAME_WAIT_S
        while world._broken_peer < 0 and world_name not in self._why and loop.time() < deadline:
            await asyncio.sleep(0.005)
            ctx._pump_events()
        return world._broken_peer


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
