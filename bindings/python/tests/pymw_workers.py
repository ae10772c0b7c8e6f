"""Worker processes and checks for test_pymultiworld.py. The pymultiworld
modules are imported inside the functions: importing them configures the
root logger (as pymultiworld does), which the forkserver that preloads this
module should not get."""

import asyncio
import inspect

import torch

E = inspect.Parameter.empty
# pymultiworld 0.2.3's public methods: (parameter, default) after self.
# Defaults marked "same meaning" differ in form only: ReduceOp.SUM is "sum"
# here, torch.device("cpu") is None (a host world).
SUM, CPU = object(), object()
PYMULTIWORLD = {
    ("WorldManager", "__init__"): [("enable_monitor", True)],
    ("WorldManager", "initialize_world"): [("world_name", E), ("rank", E), ("world_size", E), ("backend", "gloo"),
                                           ("addr", "127.0.0.1"), ("port", -1), ("timeout", 30), ("device", CPU)],
    ("WorldManager", "add_world"): [("world_name", E), ("backend", E)],
    ("WorldManager", "remove_world"): [("world_name", E)],
    ("WorldManager", "cleanup"): [],
    ("WorldCommunicator", "__init__"): [("world_manager", E)],
    ("WorldCommunicator", "add_world"): [("world_name", E), ("backend", E)],
    ("WorldCommunicator", "remove_world"): [("world_name", E)],
    ("WorldCommunicator", "is_broken"): [("world_name", E)],
    ("WorldCommunicator", "send"): [("tensor", E), ("dst", E), ("world_name", "")],
    ("WorldCommunicator", "recv"): [("tensor", E), ("src", E), ("world_name", "")],
    ("WorldCommunicator", "broadcast"): [("tensor", E), ("src", E), ("world_name", "")],
    ("WorldCommunicator", "all_reduce"): [("tensor", E), ("op", SUM), ("world_name", "")],
    ("WorldCommunicator", "reduce"): [("tensor", E), ("dst", E), ("op", SUM), ("world_name", "")],
    ("WorldCommunicator", "all_gather"): [("tensors", E), ("tensor", E), ("world_name", "")],
    ("WorldCommunicator", "gather"): [("tensor", E), ("gather_list", None), ("dst", 0), ("world_name", "")],
    ("WorldCommunicator", "scatter"): [("tensor", E), ("scatter_list", None), ("src", 0), ("world_name", "")],
}
ASYNC = {"initialize_world", "send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "scatter"}


def _same_default(ours, theirs):
    if theirs is SUM:
        from multiworld.world import ReduceOp, redop_value
        return redop_value(ours) == ReduceOp.SUM
    if theirs is CPU:
        return ours is None
    return ours == theirs and type(ours) is type(theirs)


def api_check():
    """The modules, names, signatures and exception types a pymultiworld
    0.2.3 program uses; raises on the first difference."""
    import multiworld.compat as compat
    from multiworld import communicator, manager
    from multiworld.communicator import DEFAULT_WORLD_NAME, BrokenWorldException, WorldCommunicator
    from multiworld.manager import WorldManager
    from multiworld.version import VERSION

    import multiworld as mw
    assert VERSION == "0.2.3", VERSION
    assert DEFAULT_WORLD_NAME == ""
    classes = {"WorldManager": WorldManager, "WorldCommunicator": WorldCommunicator}
    for (cls, name), want in PYMULTIWORLD.items():
        fn = getattr(classes[cls], name)
        params = list(inspect.signature(fn).parameters.values())[1:]
        named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        extra = [p for p in params if p not in named]
        assert [p.name for p in named] == [n for n, _ in want], (cls, name, named)
        assert all(p.kind == p.VAR_KEYWORD for p in extra), (cls, name, extra)  # WorldManager's **config
        for p, (_, default) in zip(named, want):
            assert (p.default is E) if default is E else _same_default(p.default, default), (cls, name, p, default)
        assert inspect.iscoroutinefunction(fn) == (name in ASYNC), (cls, name)
    assert isinstance(WorldManager.communicator, property)
    # BrokenWorldException(world_name, msg): pymultiworld's str(), and ours.
    e = BrokenWorldException("world1", "rank 2 failed: gone")
    assert str(e) == "world1 broken: rank 2 failed: gone", str(e)
    assert isinstance(e, Exception) and isinstance(e, mw.WorldBrokenError) and e.world == "world1"
    assert e.peer_rank == -1 and BrokenWorldException("w", "m", 3).peer_rank == 3
    # Formation failures are also RuntimeErrors, as torch.distributed's store errors are.
    for cls, base in ((manager.FormationTimeoutError, mw.TimeoutError), (manager.FormationStoreError, mw.StoreError)):
        err = cls(base(0, "x").status, "x")
        assert isinstance(err, RuntimeError) and isinstance(err, base), cls
    # multiworld.compat is an alias of the same objects.
    assert compat.WorldManager is WorldManager and compat.WorldCommunicator is WorldCommunicator
    assert compat.BrokenWorldException is BrokenWorldException and communicator.BrokenWorldException is e.__class__


def m8d_idle_break(url, backend, rank, to_parent):
    """Rank `rank` of world "idle"; rank 1 gets killed while nothing is
    pending. Rank 0 waits for is_broken, then checks what every later call
    says, and that an unknown world blames the caller."""
    from multiworld.communicator import BrokenWorldException
    from multiworld.manager import WorldManager

    async def main():
        wm = WorldManager(redis_url=url)
        await wm.initialize_world("idle", rank, 2, backend=backend, addr="10.9.9.9", port=29500, timeout=60)
        comm = wm.communicator
        assert not comm.is_broken("idle")
        to_parent.put("formed")
        if rank == 1:
            await asyncio.sleep(3600)  # killed
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not comm.is_broken("idle"):
            assert loop.time() < deadline, "the world never broke"
            await asyncio.sleep(0.01)
        t = torch.zeros(2)
        for call in (lambda: comm.send(t, 1, "idle"), lambda: comm.all_reduce(t, world_name="idle"),
                     lambda: comm.recv(t, 1, "idle")):
            try:
                await call()
                raise AssertionError("a call on a broken world went through")
            except BrokenWorldException as e:
                assert str(e).startswith("idle broken: rank 1 ") and e.world == "idle" and e.peer_rank == 1, str(e)
                assert "unknown" not in str(e) and "never formed" not in str(e), str(e)
        wm.remove_world("idle")  # removed already by the monitor: nothing to do, as in pymultiworld
        try:
            await comm.send(t, 1, "nope")
            raise AssertionError("a send on a world never formed went through")
        except BrokenWorldException as e:
            assert str(e).startswith("nope broken: no such world in this process"), str(e)
        try:
            wm.remove_world("nope")
            raise AssertionError("remove_world of a name never added")
        except ValueError:
            pass
        wm.context.close()

    asyncio.run(main())


def m8d_formation_timeout(url, backend):
    """A world whose other member never comes: initialize_world raises a
    TimeoutError that is also a RuntimeError, later calls say why, and the
    name can be formed again."""
    import multiworld as mw
    from multiworld.communicator import BrokenWorldException
    from multiworld.manager import WorldManager

    async def main():
        wm = WorldManager(redis_url=url)
        try:
            await wm.initialize_world("lonely", 0, 2, backend=backend, timeout=1)
            raise AssertionError("a world of one formed with size 2")
        except RuntimeError as e:
            assert isinstance(e, mw.TimeoutError), repr(e)
        assert wm.communicator.is_broken("lonely")
        try:
            await wm.communicator.send(torch.zeros(1), 1, "lonely")
            raise AssertionError("a send on a world that never formed went through")
        except BrokenWorldException as e:
            assert str(e).startswith("lonely broken: initialize_world() failed: "), str(e)
        wm.add_world("lonely", backend)  # the name is free again
        wm.remove_world("lonely")
        wm.context.close()

    asyncio.run(main())
