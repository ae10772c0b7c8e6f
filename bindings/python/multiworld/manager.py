"""pymultiworld 0.2.3's `multiworld.manager` over this package, so its
programs run unchanged:

    from multiworld.manager import WorldManager

WorldManager forms worlds by name (rendezvous through Redis, $MW_REDIS_URL)
and removes them; a task on the running loop removes every world whose
break the context reports, as pymultiworld's watchdog does, but the break
comes from the library's failure detection (a dead member's connections,
its process, heartbeats) instead of a store polled every 3 s, and no
patched PyTorch is needed.

Differences a program can see: `addr` and `port` are accepted and ignored
(members meet through Redis); a removed world is destroyed, so its name can
be formed again; and formation failures are multiworld errors that are also
RuntimeErrors, as torch.distributed's store errors are.
"""

import asyncio
import logging
import os
import sys

from . import _m8d
from .communicator import WorldCommunicator, member_failed
from .context import Context
from .errors import StoreError, TimeoutError
from .events import EventType

logger = logging.getLogger(__name__)


class FormationTimeoutError(TimeoutError, RuntimeError):
    """initialize_world ran out of time before every member joined (where
    pymultiworld's TCPStore raises torch's DistStoreError, a RuntimeError)."""


class FormationStoreError(StoreError, RuntimeError):
    """Redis could not be used while forming a world (where pymultiworld's
    TCPStore raises torch's DistNetworkError, a RuntimeError)."""


class WorldManager:
    """Creates and removes worlds; construct it inside a running asyncio
    loop, as pymultiworld's. Extra keywords go to multiworld.Context
    (redis_url, namespace, heartbeat_timeout_ms, ...)."""

    def __init__(self, enable_monitor=True, **config):
        self._ctx = Context(**_m8d.library_config(config))
        self._worlds = {}   # name -> World, None while it forms
        self._known = set()  # every name added here: removing one again is no error, as in pymultiworld
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
        `rank`, waiting `timeout` seconds at most. backend "gloo" (or "ucx")
        for CPU tensors, "nccl" for CUDA tensors on `device` (a
        torch.device or an index). `addr` and `port` are not used."""
        self.add_world(world_name, backend)
        kwargs = {}
        if backend == "nccl" and device is not None:
            kwargs["device"] = device
        try:
            world = await self._ctx.create_world_async(world_name, rank, world_size, backend=backend,
                                                       timeout=timeout, **kwargs)
        except BaseException as e:
            self._worlds.pop(world_name, None)
            self._communicator._record_break(world_name, f"initialize_world() failed: {e!r}", -1)
            self._communicator.remove_world(world_name)
            if isinstance(e, TimeoutError):
                raise FormationTimeoutError(e.status, e.message) from e
            if isinstance(e, StoreError):
                raise FormationStoreError(e.status, e.message) from e
            raise
        self._worlds[world_name] = world
        self._communicator._formed(world_name)
        logger.info("world %s formed: rank %d of %d, backend %s", world_name, rank, world_size, backend)

    def add_world(self, world_name, backend):
        """Registers a world name (initialize_world does this); ValueError
        when a world of that name is forming or formed here."""
        if world_name in self._worlds:
            raise ValueError(f"World {world_name} already exists: remove it first")
        self._worlds[world_name] = None
        self._known.add(world_name)
        self._communicator.add_world(world_name, backend)

    def remove_world(self, world_name):
        """Destroys the world; its pending operations raise
        BrokenWorldException. Removing a world removed already (by the
        program, or because it broke) does nothing, as in pymultiworld;
        a name never added is a ValueError."""
        if world_name not in self._worlds:
            if world_name in self._known:
                return
            raise ValueError(f"World {world_name} does not exist")
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

    def _drop(self, world_name, world, msg, peer_rank):
        """Records why `world` broke and removes it, unless its name went
        already or names another world by now."""
        if self._worlds.get(world_name) is not world:
            return
        logger.debug("world %s is broken: %s", world_name, msg)
        self._communicator._record_break(world_name, msg, peer_rank)
        self.remove_world(world_name)

    async def _remove_broken_worlds(self):
        async for ev in self._ctx.events():
            if ev.type == EventType.WORLD_BROKEN and ev.world is not None:
                self._drop(ev.world_name, ev.world, member_failed(ev.peer_rank, ev.detail), ev.peer_rank)
