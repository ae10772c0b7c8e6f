"""Bad input gets a clear exception naming the problem, and nothing
crashes: wrong dtype, non-contiguous tensor, a CUDA tensor on a host world,
a closed context, bad names and values."""

import asyncio

import numpy as np
import pytest
import torch

import multiworld as mw


@pytest.fixture
def ctx(redis):
    with mw.Context(redis.url) as c:
        yield c


@pytest.fixture
def solo(ctx, backend):
    with ctx.create_world("solo", 0, 1, backend=backend, timeout=10) as w:
        yield w


def raises(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, mw.Error)
    return info.value


@pytest.mark.parametrize("t", [torch.zeros(4, dtype=torch.int16), torch.zeros(4, dtype=torch.bool),
                               torch.zeros(4, dtype=torch.complex64), np.zeros(4, dtype=np.int16),
                               np.zeros(4, dtype=np.complex128), np.zeros(4, dtype=">f4"),
                               np.zeros(4, dtype=object)], ids=str)
def test_wrong_dtype(solo, t):
    e = raises(mw.InvalidArgumentError, "dtype .* is not supported", solo.all_reduce, t)
    assert e.status == -1 and isinstance(e, ValueError)


def test_byte_order_named(solo):
    raises(mw.InvalidArgumentError, "byte order not native", solo.send, np.zeros(4, dtype=">f4"), 0)


@pytest.mark.parametrize("t", [torch.zeros(4, 6)[:, ::2], torch.zeros(4, 6).t(), np.zeros((4, 6))[:, 1:],
                               np.zeros((4, 6)).T], ids=["torch-slice", "torch-t", "numpy-slice", "numpy-T"])
def test_non_contiguous(solo, t):
    raises(mw.InvalidArgumentError, "not (C-)?contiguous", solo.broadcast, t, 0)


def test_read_only_output(solo):
    a = np.zeros(4, dtype=np.float32)
    a.setflags(write=False)
    raises(mw.InvalidArgumentError, "read-only", solo.recv, a, 0)
    solo.send(a, 0)  # reading it is fine
    solo.recv(np.zeros(4, dtype=np.float32), 0).wait(10)


def test_not_a_tensor(solo):
    raises(mw.InvalidArgumentError, "expected a torch.Tensor or a numpy.ndarray, got list", solo.send, [1, 2], 0)


def test_non_cpu_tensor_on_host_world(solo):
    raises(mw.InvalidArgumentError, "device 'meta'", solo.send, torch.zeros(4, device="meta"), 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for torch here")
def test_cuda_tensor_on_host_world(solo):
    raises(mw.InvalidArgumentError, "CUDA tensor .* on host world 'solo'", solo.send,
           torch.zeros(4, device="cuda"), 0)


def test_sizes_checked_before_the_library_sees_them(solo):
    raises(mw.InvalidArgumentError, "all_gather: output has 3 elements and input 4",
           solo.all_gather, torch.zeros(3), torch.zeros(4))
    raises(mw.InvalidArgumentError, "dtypes|is int64 but input is float32",
           solo.all_to_all, torch.zeros(4, dtype=torch.int64), torch.zeros(4))
    raises(mw.InvalidArgumentError, "gather: this rank is the root \\(0\\) and needs an output",
           solo.gather, None, torch.zeros(4), 0)


def test_bad_ranks_and_ops(solo):
    raises(mw.InvalidArgumentError, "dst 5 is outside", solo.send, torch.zeros(4), 5)
    raises(mw.InvalidArgumentError, "root -1 is outside", solo.broadcast, torch.zeros(4), -1)
    raises(mw.InvalidArgumentError, "reduction op 'mean-ish' is not supported", solo.all_reduce,
           torch.zeros(4), "mean-ish")


def test_bad_world_arguments(ctx, backend):
    raises(mw.InvalidArgumentError, "bad name", ctx.create_world, "bad name!", 0, 1, backend=backend)
    raises(mw.InvalidArgumentError, "name", ctx.create_world, "x" * 200, 0, 1, backend=backend)
    raises(mw.InvalidArgumentError, "world name must be a str", ctx.create_world, 7, 0, 1)
    raises(mw.InvalidArgumentError, "backend 'tcp'", ctx.create_world, "w", 0, 1, backend="tcp")
    raises(mw.InvalidArgumentError, "rank", ctx.create_world, "w", 3, 2, backend=backend, timeout=1)
    raises(mw.InvalidArgumentError, "rank must be an integer, got '0'", ctx.create_world, "w", "0", 1)
    raises(mw.InvalidArgumentError, "size must be an integer, got True", ctx.create_world, "w", 0, True)
    ctx.create_world("np-ints", np.int64(0), np.int32(1), backend=backend, timeout=10).destroy()
    raises(mw.InvalidArgumentError, "timeout must be", ctx.create_world, "w", 0, 1, backend=backend, timeout=-1)


def test_bad_config(redis):
    raises(mw.InvalidArgumentError, "no_such_key", mw.Context, redis.url, no_such_key=1)
    raises(mw.InvalidArgumentError, "heartbeat_interval_ms", mw.Context, redis.url, heartbeat_interval_ms="soon")


def test_store_down_is_a_store_error(tmp_path):
    e = raises(mw.StoreError, "", mw.Context, f"unix://{tmp_path}/nothing.sock", store_timeout_ms=200)
    assert isinstance(e, ConnectionError)


def test_closed_context(redis, backend):
    ctx = mw.Context(redis.url)
    w = ctx.create_world("solo", 0, 1, backend=backend, timeout=10)
    pending = w.recv(torch.zeros(4), 0)
    ctx.close()
    ctx.close()  # idempotent
    assert ctx.closed and w.state == mw.WorldState.DESTROYED
    raises(mw.ClosedError, "Context is closed", ctx.create_world, "again", 0, 1, backend=backend)
    raises(mw.ClosedError, "Context is closed", w.send, torch.zeros(4), 0)
    with pytest.raises(mw.CancelledError):
        pending.wait(5)
    assert pending.done()
    assert list(ctx.events(timeout=0)) == []

    async def closed_events():
        return [ev async for ev in ctx.events()]
    assert asyncio.run(closed_events()) == []


def test_destroyed_world(ctx, backend):
    w = ctx.create_world("solo", 0, 1, backend=backend, timeout=10)
    w.destroy()
    w.destroy()  # idempotent
    raises(mw.ClosedError, "world 'solo' was destroyed", w.all_reduce, torch.zeros(4))


def test_wait_timeout_leaves_the_request_running(solo):
    r = solo.recv(torch.zeros(4), 0)
    with pytest.raises(mw.TimeoutError) as info:
        r.wait(0.05)
    assert isinstance(info.value, TimeoutError)
    assert not r.done()
    solo.send(torch.arange(4.0), 0).wait(10)
    assert r.wait(10).tolist() == [0, 1, 2, 3]
    assert r.exception() is None


def test_tensor_kept_alive_until_completion(solo):
    import gc
    import weakref
    t = torch.zeros(1 << 16)
    ref = weakref.ref(t)
    r = solo.recv(t, 0)
    del t
    gc.collect()
    assert ref() is not None, "the library still writes into it"
    solo.send(torch.ones(1 << 16), 0).wait(10)
    assert r.wait(10) is ref()
    assert ref().sum().item() == 1 << 16


def test_context_unusable_after_fork(ctx, solo):
    import os
    pid = os.fork()
    if pid == 0:  # the child: no library call may happen here
        code = 1
        try:
            try:
                solo.send(torch.zeros(4), 0)
            except mw.ClosedError as e:
                if "before os.fork()" in str(e):
                    ctx.close()  # a no-op here
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    solo.all_reduce(torch.ones(2)).wait(10)  # the parent's context is untouched


def test_create_world_async_errors(ctx, backend):
    async def form(*args, **kwargs):
        return await ctx.create_world_async(*args, **kwargs)
    with pytest.raises(mw.InvalidArgumentError, match="bad name"):
        asyncio.run(form("bad name!", 0, 1, backend=backend))
    with pytest.raises(mw.TimeoutError):
        asyncio.run(form("alone", 0, 2, backend=backend, timeout=0.3))
    w = asyncio.run(form("solo2", 0, 1, backend=backend, timeout=10))
    assert w.state == mw.WorldState.READY and w in ctx.worlds
    w.destroy()
