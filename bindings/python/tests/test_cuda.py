"""CUDA tensors on NCCL worlds: every collective on one rank, and send,
receive and all_reduce between two rank processes. Skipped, with the
reason, where torch has no CUDA or the library no NCCL backend.

Runs under pytest, or alone (`python3 test_cuda.py`, as the GPU kit does
where pytest is missing): then it prints one line per test and exits 1 on
a failure.

Where the host has one GPU, both ranks use device 0 and each claims a host
of its own through NCCL_HOSTID (NCCL refuses two ranks on one device of one
host); NCCL then joins them over sockets on loopback. That is a test setup,
not a production one.
"""
import multiprocessing
import os
import sys
import uuid

try:
    import torch
except ImportError:  # the kit's machine has torch; others may not
    torch = None

import multiworld as mw

REDIS_URL = os.environ.get("MW_REDIS_URL")


def _why_skipped():
    if REDIS_URL is None:
        return "MW_REDIS_URL is not set (run under tests/with_redis.sh)"
    if torch is None:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    if not mw.backend_available("nccl"):
        return "mw.backend_available('nccl') is False (no NCCL plugin, CUDA driver or GPU)"
    return None


def _skip_if_unusable():
    why = _why_skipped()
    if why is None:
        return
    try:
        import pytest
    except ImportError:
        raise _Skip(why)
    pytest.skip(why)


class _Skip(Exception):
    pass


def test_every_collective_on_one_rank():
    _skip_if_unusable()
    name = "py-cuda-" + uuid.uuid4().hex[:8]
    x = torch.arange(1 << 16, dtype=torch.float32, device="cuda")
    with mw.Context(REDIS_URL) as ctx, ctx.create_world(name, 0, 1, backend="nccl", device=0, timeout=60) as w:
        t = x.clone()
        # A world's stream does not wait for torch's: what torch wrote must
        # be done before an operation reads it.
        torch.cuda.synchronize()
        w.all_reduce(t, op="sum").wait(timeout=60)
        assert torch.equal(t, x)
        w.broadcast(t, root=0).wait(timeout=60)
        assert torch.equal(t, x)
        for call in ("all_gather", "reduce_scatter", "all_to_all"):
            out = torch.zeros_like(x)
            torch.cuda.synchronize()
            getattr(w, call)(out, x).wait(timeout=60)
            assert torch.equal(out, x), call
        out = torch.zeros_like(x)
        torch.cuda.synchronize()
        w.gather(out, x, root=0).wait(timeout=60)
        assert torch.equal(out, x)
        out = torch.zeros_like(x)
        torch.cuda.synchronize()
        w.scatter(out, x, root=0).wait(timeout=60)
        assert torch.equal(out, x)
        # Self send and receive of half-precision tensors.
        h = torch.arange(1024, dtype=torch.float16, device="cuda")
        got = torch.zeros_like(h)
        torch.cuda.synchronize()
        r = w.recv(got, 0)
        w.send(h, 0).wait(timeout=60)
        r.wait(timeout=60)
        assert torch.equal(got, h)
        w.barrier().wait(timeout=60)
        # Host tensors are refused on an NCCL world.
        try:
            w.all_reduce(torch.zeros(4)).wait(timeout=60)
        except mw.InvalidArgumentError:
            pass
        else:
            raise AssertionError("a CPU tensor on an NCCL world was not refused")


def _rank(name, rank, shared_gpu, result):
    try:
        if shared_gpu:
            os.environ["NCCL_HOSTID"] = "%s-rank%d" % (name, rank)
            os.environ["NCCL_SOCKET_IFNAME"] = "lo"
            os.environ.setdefault("NCCL_NET", "Socket")
        device = 0 if shared_gpu else rank
        torch.cuda.set_device(device)
        n = 1 << 20
        with mw.Context(REDIS_URL) as ctx, ctx.create_world(name, rank, 2, backend="nccl", device=device,
                                                            timeout=120) as w:
            x = torch.arange(n, dtype=torch.float32, device="cuda") + rank
            torch.cuda.synchronize()
            if rank == 0:
                w.send(x, 1).wait(timeout=120)
            else:
                got = torch.zeros_like(x)
                torch.cuda.synchronize()
                w.recv(got, 0).wait(timeout=120)
                assert torch.equal(got, torch.arange(n, dtype=torch.float32, device="cuda"))
            w.all_reduce(x, op="sum").wait(timeout=120)
            assert torch.equal(x, 2 * torch.arange(n, dtype=torch.float32, device="cuda") + 1)
        result.put((rank, None))
    except BaseException as e:  # reported to the parent, which fails the test
        result.put((rank, repr(e)))


def test_two_ranks_exchange_cuda_tensors():
    _skip_if_unusable()
    name = "py-cuda-pair-" + uuid.uuid4().hex[:8]
    shared_gpu = torch.cuda.device_count() < 2
    # Fresh interpreters: CUDA does not survive fork.
    mp = multiprocessing.get_context("spawn")
    result = mp.Queue()
    procs = [mp.Process(target=_rank, args=(name, r, shared_gpu, result)) for r in range(2)]
    for p in procs:
        p.start()
    outcomes = dict(result.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(60)
    assert outcomes == {0: None, 1: None}, outcomes


def _main():
    failed = 0
    for name, fn in sorted(globals().items()):
        if not name.startswith("test_"):
            continue
        try:
            fn()
            print("PASSED", name)
        except _Skip as s:
            print("SKIPPED", name, "-", s)
        except BaseException as e:
            failed += 1
            print("FAILED", name, "-", repr(e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_main())
