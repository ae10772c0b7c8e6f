"""What the worker processes of the tests run. Each function is one
process's side of a scenario; a failed check raises, so the process exits
non-zero and its traceback lands in the test's output."""

import asyncio
import os
import signal
import threading

import numpy as np
import torch

import multiworld as mw

N = 5  # elements per block


# ---- every op and dtype ---------------------------------------------------------
def dtypes(lib):
    if lib == "torch":
        out = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
               torch.float64]
        return out + [getattr(torch, n) for n in ("uint32", "uint64") if hasattr(torch, n)]
    return [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]


def make(lib, values, dtype):
    if lib == "torch":
        return torch.tensor(values, dtype=torch.float64).to(dtype)
    return np.array(values, dtype=np.float64).astype(dtype)


def as_list(t):
    return (t.to(torch.float64) if isinstance(t, torch.Tensor) else t.astype(np.float64)).tolist()


def is_float(dtype):
    return dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, np.float16, np.float32,
                     np.float64)


def check(what, got, want, dtype):
    got = as_list(got)
    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16, np.float16) else 1e-6
    ok = len(got) == len(want) and all(
        (abs(g - w) <= tol * max(1.0, abs(w))) if is_float(dtype) else g == w for g, w in zip(got, want))
    assert ok, f"{what} {dtype}: got {got}, want {want}"


def v(r, i):
    """Rank r's element i: small, so products of three fit in int8."""
    return (r + i) % 4 + 1


def reduce_all(op, columns, size, dtype):
    out = []
    for col in columns:
        if op == "sum":
            out.append(sum(col))
        elif op == "prod":
            p = 1
            for x in col:
                p *= x
            out.append(p)
        elif op == "min":
            out.append(min(col))
        elif op == "max":
            out.append(max(col))
        else:  # avg: integer types truncate
            out.append(sum(col) / size if is_float(dtype) else sum(col) // size)
    return out


def all_ops(rank, size, lib, url, backend):
    """Every operation, every dtype of `lib`, values checked."""
    with mw.Context(url) as ctx, ctx.create_world("ops", rank, size, backend=backend, timeout=60) as w:
        mine = [v(rank, i) for i in range(N)]
        for dt in dtypes(lib):
            t = lambda vals: make(lib, vals, dt)  # noqa: E731
            # send/recv around the ring
            nxt, prv = (rank + 1) % size, (rank - 1) % size
            inbox = t([0] * N)
            r = w.recv(inbox, prv)
            w.send(t(mine), nxt).wait(60)
            assert r.wait(60) is inbox
            check("recv", inbox, [v(prv, i) for i in range(N)], dt)
            # broadcast from the last rank
            b = t(mine)
            w.broadcast(b, size - 1).wait(60)
            check("broadcast", b, [v(size - 1, i) for i in range(N)], dt)
            columns = [[v(r_, i) for r_ in range(size)] for i in range(N)]
            for op in ("sum", "prod", "min", "max", "avg"):
                a = t(mine)
                w.all_reduce(a, op).wait(60)
                check(f"all_reduce {op}", a, reduce_all(op, columns, size, dt), dt)
            # reduce to rank 0: others keep their input
            a = t(mine)
            w.reduce(a, 0, "max").wait(60)
            check("reduce", a, reduce_all("max", columns, size, dt) if rank == 0 else mine, dt)
            # all_gather / gather (to rank 1)
            everyone = [v(r_, i) for r_ in range(size) for i in range(N)]
            out = t([0] * (N * size))
            w.all_gather(out, t(mine)).wait(60)
            check("all_gather", out, everyone, dt)
            root = 1 % size
            out = t([0] * (N * size)) if rank == root else None
            w.gather(out, t(mine), root).wait(60)
            if rank == root:
                check("gather", out, everyone, dt)
            # scatter from rank 0: block j = v(j, i) + 10
            blocks = [v(j, i) + 10 for j in range(size) for i in range(N)]
            got = t([0] * N)
            w.scatter(got, t(blocks) if rank == 0 else None, 0).wait(60)
            check("scatter", got, [v(rank, i) + 10 for i in range(N)], dt)
            # reduce_scatter: block j of rank r = v(r, i) + j
            src = t([v(rank, i) + j for j in range(size) for i in range(N)])
            got = t([0] * N)
            w.reduce_scatter(got, src, "sum").wait(60)
            check("reduce_scatter", got, [sum(v(r_, i) + rank for r_ in range(size)) for i in range(N)], dt)
            # all_to_all: block j of rank r = r * size + j + i
            src = t([rank * size + j + i for j in range(size) for i in range(N)])
            got = t([0] * (N * size))
            w.all_to_all(got, src).wait(60)
            check("all_to_all", got, [j * size + rank + i for j in range(size) for i in range(N)], dt)
            w.barrier().wait(60)


# ---- kill -9 of a peer ------------------------------------------------------------
def echo(url, backend, world, rank, rounds, ready=None):
    """Rank `rank` of a 2-rank world: sends back what it receives, `rounds`
    times (forever when None)."""
    with mw.Context(url) as ctx, ctx.create_world(world, rank, 2, backend=backend, timeout=60) as w:
        if ready is not None:
            ready.set()
        buf = torch.zeros(4, dtype=torch.int64)
        n = 0
        while rounds is None or n < rounds:
            w.recv(buf, 1 - rank).wait()
            w.send(buf, 1 - rank).wait()
            n += 1


def ping(w, value, dst):
    out = torch.full((4,), value, dtype=torch.int64)
    back = torch.zeros(4, dtype=torch.int64)
    w.send(out, dst).wait(30)
    w.recv(back, dst).wait(30)
    assert back.tolist() == [value] * 4, back


def survivor(url, backend, mode, to_parent, from_parent):
    """Rank 0 of "victim" (its peer gets killed) and of "steady". Reports
    "pending" once a receive from the victim is posted, then checks the
    break, the other world, and the re-formed world."""
    with mw.Context(url, heartbeat_timeout_ms=1000) as ctx:
        victim = ctx.create_world("victim", 0, 2, backend=backend, timeout=60)
        steady = ctx.create_world("steady", 0, 2, backend=backend, timeout=60)
        ping(steady, 1, 1)
        pending = victim.recv(torch.zeros(4, dtype=torch.int64), 1)
        to_parent.put("pending")

        if mode == "asyncio":
            async def broken():
                try:
                    await pending
                except mw.WorldBrokenError as e:
                    return e
                raise AssertionError("the pending receive completed")
            err = asyncio.run(asyncio.wait_for(broken(), 30))
        else:
            try:
                pending.wait(30)
                raise AssertionError("the pending receive completed")
            except mw.WorldBrokenError as e:
                err = e
        assert err.world == "victim" and err.peer_rank == 1, (err.world, err.peer_rank, str(err))
        assert err.status == -5 and isinstance(err, mw.Error)
        assert victim.state == mw.WorldState.BROKEN
        with_events = []

        async def collect():
            async for ev in ctx.events(timeout=5):
                with_events.append(ev)
                if ev.type == mw.EventType.WORLD_BROKEN:
                    return
        if mode == "asyncio":
            asyncio.run(collect())
        else:
            for ev in ctx.events(timeout=5):
                with_events.append(ev)
                if ev.type == mw.EventType.WORLD_BROKEN:
                    break
        broken = [e for e in with_events if e.type == mw.EventType.WORLD_BROKEN]
        assert broken and broken[0].world is victim and broken[0].peer_rank == 1, with_events
        # new operations on the broken world fail at once
        try:
            victim.send(torch.zeros(1), 1)
            raise AssertionError("send on a broken world was accepted")
        except mw.WorldBrokenError:
            pass
        # the other world keeps working
        for k in range(20):
            ping(steady, 100 + k, 1)
        old_epoch = victim.epoch
        victim.destroy()
        to_parent.put("destroyed")
        assert from_parent.get(timeout=30) == "respawned"
        victim = ctx.create_world("victim", 0, 2, backend=backend, timeout=60)
        assert victim.epoch > old_epoch
        ping(victim, 7, 1)
        ping(steady, 8, 1)
        victim.destroy()
        steady.destroy()


# ---- asyncio: many worlds, one loop --------------------------------------------------
def threads_now():
    return threading.active_count(), len(os.listdir("/proc/self/task"))


async def _pingpong(w, rounds, leader):
    out = torch.zeros(16, dtype=torch.float32)
    back = torch.zeros(16, dtype=torch.float32)
    for k in range(rounds):
        if leader:
            out.fill_(k)
            await w.send(out, 1)
            await w.recv(back, 1)
            assert back[0].item() == k + 0.5, (w.name, k, back[0].item())
        else:
            await w.recv(back, 0)
            back += 0.5
            await w.send(back, 0)


def many_worlds(url, backend, rank, worlds, rounds, to_parent):
    """Rank `rank` of `worlds` two-rank worlds, all driven from one event
    loop; rank 0 reports thread counts."""
    before = threads_now()
    with mw.Context(url) as ctx:
        ws = [ctx.create_world(f"aio.{k}", rank, 2, backend=backend, timeout=60) for k in range(1)]
        one_world = threads_now()
        ws += [ctx.create_world(f"aio.{k}", rank, 2, backend=backend, timeout=60) for k in range(1, worlds)]
        # one blocking round trip per world: every thread the library
        # starts for traffic is running before the loop starts
        for w in ws:
            buf = torch.zeros(16)
            if rank == 0:
                w.send(buf, 1).wait(30)
                w.recv(buf, 1).wait(30)
            else:
                w.recv(buf, 0).wait(30)
                w.send(buf, 0).wait(30)
        warm = threads_now()
        samples = []

        async def main():
            stop = asyncio.Event()

            async def sample():
                while not stop.is_set():
                    samples.append(threads_now())
                    await asyncio.sleep(0.01)

            sampler = asyncio.create_task(sample())
            await asyncio.gather(*(_pingpong(w, rounds, rank == 0) for w in ws))
            stop.set()
            await sampler

        asyncio.run(main())
        for w in ws:
            w.destroy()
    if rank == 0:
        to_parent.put({"before": before, "one_world": one_world, "warm": warm, "samples": samples})


# ---- no leaks -----------------------------------------------------------------------
def usage():
    """(open fds, threads, resident KiB) of this process."""
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return (len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task")),
            rss_pages * os.sysconf("SC_PAGE_SIZE") // 1024)


def cycles(url, backend, rank, n, warmup, to_parent):
    """n create/use/destroy cycles of one world; rank 0 reports usage after
    `warmup` cycles and at the end (both sent at the end: the queue starts
    a thread)."""
    warm = None
    with mw.Context(url) as ctx:
        t = torch.arange(1024, dtype=torch.float32)
        a = np.zeros(1024, dtype=np.float32)
        for k in range(n):
            if k == warmup:
                warm = usage()
            with ctx.create_world("cycle", rank, 2, backend=backend, timeout=60) as w:
                if rank == 0:
                    w.send(t, 1).wait(30)
                else:
                    assert w.recv(a, 0).wait(30)[1023] == 1023
                asyncio.run(_await(w.all_reduce(t if rank == 0 else a, "max")))
                w.barrier().wait(30)
        end = usage()
    if rank == 0:
        to_parent.put((warm, end))


async def _await(req):
    return await req


# ---- pymultiworld's API ---------------------------------------------------------------
def compat_calls(url, rank, backend):
    """The calls of multiworld.compat on a 3-rank world, values checked."""
    import torch.distributed as dist

    from multiworld.compat import BrokenWorldException, WorldManager

    async def main():
        wm = WorldManager(redis_url=url)
        await wm.initialize_world("c", rank, 3, backend=backend, addr="ignored", port=1234)
        comm = wm.communicator
        assert not comm.is_broken("c") and comm.is_broken("nope")
        mine = torch.full((2,), float(rank + 1))
        lst = [torch.zeros(2) for _ in range(3)]
        await comm.all_gather(lst, mine, "c")
        assert [t.tolist() for t in lst] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], lst
        glist = [torch.zeros(2) for _ in range(3)] if rank == 2 else None
        await comm.gather(mine, glist, 2, "c")
        if rank == 2:
            assert [t.tolist() for t in glist] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], glist
        got = torch.zeros(2)
        await comm.scatter(got, [torch.full((2,), 10.0 + j) for j in range(3)] if rank == 0 else None, 0, "c")
        assert got.tolist() == [10.0 + rank] * 2, got
        t = mine.clone()
        await comm.reduce(t, 1, dist.ReduceOp.PRODUCT, "c")
        assert t.tolist() == ([6.0, 6.0] if rank == 1 else mine.tolist()), t
        t = mine.clone()
        await comm.all_reduce(t, dist.ReduceOp.MAX, "c")
        assert t.tolist() == [3.0, 3.0], t
        b = mine.clone()
        await comm.broadcast(b, 2, "c")
        assert b.tolist() == [3.0, 3.0], b
        if rank == 0:
            await comm.send(mine, 1, "c")
        elif rank == 1:
            r = torch.zeros(2)
            await comm.recv(r, 0, "c")
            assert r.tolist() == [1.0, 1.0], r
        try:
            wm.add_world("c", "gloo")
            raise AssertionError("add_world accepted an existing name")
        except ValueError:
            pass
        # A member that leaves breaks the world and can fail the others' last
        # operation (UCX: its send completes before the receiver has it), so
        # rank 0 leaves last, once the others are through; they learn it as
        # BrokenWorldException, and the world is removed for them.
        token = torch.zeros(1)
        if rank == 0:
            for src in (1, 2):
                await comm.recv(token, src, "c")
            wm.remove_world("c")
        else:
            await comm.send(token, 0, "c")
            try:
                await comm.recv(token, 0, "c")  # never sent
                raise AssertionError("a recv that nobody sends completed")
            except BrokenWorldException as e:
                assert e.world == "c", e.world
        assert comm.is_broken("c")
        try:
            await comm.send(mine, 1, "c")
            raise AssertionError("send on a removed world")
        except BrokenWorldException as e:
            assert str(e).startswith("c broken: ") and isinstance(e, mw.WorldBrokenError), str(e)
            assert e.world == "c", e.world
        wm.remove_world("c")  # removed already: nothing to do, as in pymultiworld
        try:
            wm.remove_world("never")
            raise AssertionError("remove_world of a name never added")
        except ValueError:
            pass
        wm.context.close()

    asyncio.run(main())


# ---- shrink and grow ----------------------------------------------------------------
def _summed(w, what):
    """An allreduce every member checks: rank r gives r + 1."""
    t = torch.full((8,), w.rank + 1, dtype=torch.int64)
    w.all_reduce(t).wait(60)
    want = w.size * (w.size + 1) // 2
    assert t.tolist() == [want] * 8, f"{what}: rank {w.rank} of {w.size}: {t.tolist()}, want {want}"


def elastic(url, backend, rank, to_parent, from_parent):
    """A member of "elastic" (3 members): after rank 2 is killed it shrinks
    with the break's list, then grows back to 3 with a newcomer."""
    with mw.Context(url) as ctx:
        w = ctx.create_world("elastic", rank, 3, backend=backend, timeout=60)
        _summed(w, "before")
        to_parent.put("formed")
        if rank == 2:
            signal.pause()
        ev = next(iter(ctx.events(timeout=30)))
        assert ev.type == mw.EventType.WORLD_BROKEN and ev.peer_rank == 2, ev
        shrunk = w.shrink(abort=True, timeout=60)
        assert (shrunk.name, shrunk.rank, shrunk.size) == ("elastic", rank, 2), shrunk
        assert shrunk.epoch == w.epoch + 1 and w.state == mw.WorldState.RETIRED
        try:
            w.barrier()
            raise AssertionError("an operation on the retired world ran")
        except mw.InvalidArgumentError as e:
            assert str(shrunk.epoch) in str(e), e
        w.destroy()
        _summed(shrunk, "shrunk")
        try:
            shrunk.shrink(exclude=[rank], timeout=5)
            raise AssertionError("a shrink excluding this member itself ran")
        except mw.InvalidArgumentError:
            pass
        to_parent.put("shrunk")
        grown = shrunk.grow(3, timeout=60)
        assert (grown.rank, grown.size, grown.epoch) == (rank, 3, shrunk.epoch + 1), grown
        shrunk.destroy()
        _summed(grown, "grown")
        from_parent.get(timeout=60)
        grown.destroy()


def newcomer(url, backend, to_parent, from_parent):
    """Joins "elastic" at rank 2 of 3 once its members grow it."""
    with mw.Context(url) as ctx:
        w = ctx.create_world("elastic", 2, 3, backend=backend, timeout=60)
        _summed(w, "newcomer")
        to_parent.put("joined")
        from_parent.get(timeout=60)
        w.destroy()
