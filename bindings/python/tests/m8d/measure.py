"""Figures for the migration guide (README, "pymultiworld programs"): the
p2p rate and the failure detection time of a pymultiworld-style send/recv
program (a leader awaiting communicator.recv, a worker awaiting
communicator.send, one world of two) on the gloo backend.

Each figure is taken twice, on the same machine in the same run:
  multiworld  this package: `from multiworld.manager import WorldManager`;
  pymw-path   pymultiworld 0.2.3's call path for gloo rebuilt on stock
              torch.distributed: a ThreadPoolExecutor made per call running
              the blocking dist.send / dist.recv, as its WorldCommunicator
              does. pymultiworld itself needs its patched PyTorch (2.2.1 or
              2.4.0) and cannot run here; this path omits its watchdog and
              the patch's per-world lookups, so it flatters pymultiworld.

    MW_LIB=build/capi/libmultiworld.so.0 PYTHONPATH=bindings/python \\
        python3 bindings/python/tests/m8d/measure.py

Needs redis-server in PATH (a private one is started). Not a test: it
prints a table and checks only that every payload arrived.
"""

import argparse
import asyncio
import multiprocessing
import os
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

import torch


# ---- one side of the program, in its own process --------------------------------------
# job: elements (float32 per message), iters (0: a fault instead), mode
# ("pending": the leader awaits a receive when the fault comes; "idle": it
# awaits nothing and polls is_broken), cfg (WorldManager keywords).
async def _ours(role, url, job, q, go):
    from multiworld.communicator import BrokenWorldException
    from multiworld.manager import WorldManager
    wm = WorldManager(redis_url=url, **job["cfg"])
    rank = 0 if role == "leader" else 1
    await wm.initialize_world("world1", rank, 2, backend="gloo")
    comm = wm.communicator
    t = torch.full((job["elements"],), float(rank))
    await _exchange(lambda: comm.send(t, 0, "world1"), lambda: comm.recv(t, 1, "world1"), rank, job, q, t)
    if job["iters"] == 0 and job["mode"] == "idle":
        await _await_idle_break(lambda: comm.is_broken("world1"), rank, q, go)
    elif job["iters"] == 0:  # the leader waits on a receive the worker never sends
        await _await_break(lambda: comm.recv(t, 1, "world1"), rank, q, go, BrokenWorldException)
    flush(q)
    wm.cleanup()


async def _pymw_path(role, url, job, q, go):
    import concurrent.futures

    import torch.distributed as dist
    rank = 0 if role == "leader" else 1
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=2)
    loop = asyncio.get_running_loop()

    async def call(fn, *args):  # pymultiworld 0.2.3's WorldCommunicator.send/recv for gloo
        with concurrent.futures.ThreadPoolExecutor() as pool:
            await loop.run_in_executor(pool, fn, *args)

    t = torch.full((job["elements"],), float(rank))
    await _exchange(lambda: call(dist.send, t, 0), lambda: call(dist.recv, t, 1), rank, job, q, t)
    if job["iters"] == 0:
        await _await_break(lambda: call(dist.recv, t, 1), rank, q, go, RuntimeError)
    flush(q)
    os._exit(0)  # as WorldManager.cleanup()


def flush(q):
    """What was put on `q` reaches the parent before os._exit."""
    q.close()
    q.join_thread()


async def _exchange(send, recv, rank, job, q, t):
    iters = job["iters"]
    if iters == 0:
        return
    if rank == 1:
        for _ in range(iters + 1):
            await send()
        return
    await recv()  # the first one waits for the worker to start: not timed
    start = time.monotonic()
    for _ in range(iters):
        await recv()
    q.put(time.monotonic() - start)
    assert t[0].item() == 1.0 and t[-1].item() == 1.0, "a payload arrived wrong"


async def _await_break(recv, rank, q, go, caught):
    if rank == 1:
        q.put(os.getpid())
        await asyncio.sleep(3600)  # killed or stopped by the parent
    go.wait()
    try:
        await asyncio.wait_for(recv(), 30)
        q.put("completed")
    except caught as e:
        q.put((time.monotonic(), str(e)[:120]))
    except asyncio.TimeoutError:
        q.put((None, "nothing in 30 s"))


async def _await_idle_break(is_broken, rank, q, go):
    if rank == 1:
        q.put(os.getpid())
        await asyncio.sleep(3600)
    go.wait()
    deadline = time.monotonic() + 30
    while not is_broken() and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    q.put((time.monotonic(), "is_broken() = True") if is_broken() else (None, "nothing in 30 s"))


def side(path, role, url, job, q, go):
    asyncio.run((_ours if path == "multiworld" else _pymw_path)(role, url, job, q, go))


# ---- the parent ---------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pair(mp, path, url, job):
    """The leader and the worker; `url` is Redis's, or torch's init_method."""
    if path != "multiworld":
        url = f"tcp://127.0.0.1:{free_port()}"
    q, go = mp.Queue(), mp.Event()
    procs = [mp.Process(target=side, args=(path, role, url, job, q, go)) for role in ("leader", "worker")]
    for p in procs:
        p.start()
    return procs, q, go


def get(q, procs, timeout):
    """The next report of a side; fails at once when a side died."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return q.get(timeout=0.2)
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead or all(p.exitcode is not None for p in procs) or time.monotonic() > deadline:
                for p in procs:
                    p.kill()
                raise RuntimeError(f"a side failed (exit codes {dead}) or {timeout} s passed") from None


def rate(mp, path, url, size, iters):
    procs, q, _ = pair(mp, path, url, {"elements": size // 4, "iters": iters, "mode": "rate", "cfg": {}})
    elapsed = get(q, procs, 300)
    for p in procs:
        p.join(60)
    return iters / elapsed, iters * size / elapsed


def detect(mp, path, url, sig, mode, cfg):
    procs, q, go = pair(mp, path, url, {"elements": 1, "iters": 0, "mode": mode, "cfg": cfg})
    worker = get(q, procs, 120)
    time.sleep(0.5)  # the leader's receive is posted
    go.set()
    time.sleep(0.2)
    t_fault = time.monotonic()
    os.kill(worker, sig)
    t_caught, text = get(q, procs, 60)
    os.kill(worker, signal.SIGKILL)
    for p in procs:
        p.join(60)
        if p.is_alive():
            p.kill()
    return None if t_caught is None else t_caught - t_fault, text


def human(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} GiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4,65536,1048576,16777216", help="payload bytes, comma-separated")
    ap.add_argument("--bytes-per-size", type=float, default=512e6, help="volume per size (fewer messages when big)")
    ap.add_argument("--max-iters", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3, help="rate runs per path and size; the median is shown")
    ap.add_argument("--faults", type=int, default=5, help="repetitions of each detection measurement")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mw-m8d-")
    sock = os.path.join(tmp, "redis.sock")
    redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL)
    os.environ.setdefault("MW_BIND_ADDRESS", "127.0.0.1")
    mp = multiprocessing.get_context("spawn")
    try:
        while not os.path.exists(sock):
            time.sleep(0.05)
        url = f"unix://{sock}"
        print(f"torch {torch.__version__}, {os.cpu_count()} CPUs; gloo; one world of two on this host\n")
        print(f"rates: median of {args.rounds} runs per path, alternating\n")
        print("| payload | multiworld msg/s | multiworld MB/s | pymw-path msg/s | pymw-path MB/s | ratio |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for size in (int(s) for s in args.sizes.split(",")):
            iters = max(20, min(args.max_iters, int(args.bytes_per_size / size)))
            runs = {"multiworld": [], "pymw-path": []}
            for _ in range(args.rounds):  # alternating, so both see the same load
                for path, got in runs.items():
                    got.append(rate(mp, path, url, size, iters))
            ours, theirs = (statistics.median_low(runs[p]) for p in ("multiworld", "pymw-path"))
            print(f"| {human(size)} | {ours[0]:.0f} | {ours[1] / 1e6:.1f} | {theirs[0]:.0f} | {theirs[1] / 1e6:.1f} "
                  f"| {ours[0] / theirs[0]:.2f}x |", flush=True)
        print("\n| fault of the worker | leader | path | median ms | max ms | what the leader saw |")
        print("| --- | --- | --- | ---: | ---: | --- |")
        fast = {"heartbeat_interval_ms": 50, "heartbeat_timeout_ms": 200}
        cases = [(signal.SIGKILL, "kill -9", "pending", "multiworld", {}),
                 (signal.SIGKILL, "kill -9", "pending", "pymw-path", {}),
                 (signal.SIGKILL, "kill -9", "idle", "multiworld", {}),
                 (signal.SIGSTOP, "SIGSTOP (hang)", "pending", "multiworld", {}),
                 (signal.SIGSTOP, "SIGSTOP (hang)", "pending", "multiworld", fast)]
        for sig, name, mode, path, cfg in cases:
            runs = [detect(mp, path, url, sig, mode, cfg) for _ in range(args.faults)]
            times = [t * 1000 for t, _ in runs if t is not None]
            cell = (f"{statistics.median(times):.0f} | {max(times):.0f}" if len(times) == len(runs)
                    else f"none in 30 s ({len(runs) - len(times)} of {len(runs)}) | -")
            label = path + "".join(f", {k}={v}" for k, v in cfg.items())
            leader = "awaits recv" if mode == "pending" else "polls is_broken"
            print(f"| {name} | {leader} | {label} | {cell} | {runs[-1][1]} |", flush=True)
        # What these rows lack, pymultiworld's watchdog does (0.2.3: a tick
        # every 0.3 s, compared every 3 s): a hung or idle peer that closes no
        # connection is found in 3 to 6 s. Not run here; from its source.
        print("| kill -9 | polls is_broken | pymw-path | - | - | pymultiworld's watchdog: 3-6 s |")
        print("| SIGSTOP (hang) | awaits recv | pymw-path | - | - | the gloo receive blocks; pymultiworld's watchdog: "
              "3-6 s |")
    finally:
        redis.terminate()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
