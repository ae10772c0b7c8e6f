"""A data-parallel group that keeps reducing while it changes its members.

Four workers sum a tensor every step. One is killed (SIGKILL); the
survivors shrink the world around it (World.shrink with no list: the member
the break named) and go on. A replacement then starts and the group grows
back (World.grow; the replacement creates the world with the new size).
Every step's sum is checked against the members of that step.

    python3 elastic_group.py [--backend ucx|gloo] [--steps N]

Redis comes from MW_REDIS_URL. Exits 0 when every result was right.
"""

import argparse
import multiprocessing as mp
import os
import signal
import sys
import time

import torch

import multiworld as mw

NAME = "elastic-group-py"
WORKERS = 4
KILL_AT = 30
WIDTH = 512


def resync(w, step, wid):
    """After the world formed, shrank or grew: rank 0's step, and the sum of
    the members' ids."""
    t = torch.tensor([step], dtype=torch.int64)
    w.broadcast(t, 0).wait(60)
    ids = torch.zeros(w.size, dtype=torch.int64)
    w.all_gather(ids, torch.tensor([wid + 1], dtype=torch.int64)).wait(60)
    return int(t[0]), int(ids.sum())


def worker(wid, rank, size, changes, backend, steps, board):
    """Reduces at least `steps` steps, and until the group shrank and grew
    (`changes`: 2 for the replacement, which joins the grown world)."""
    with mw.Context() as ctx:
        w = ctx.create_world(NAME, rank, size, backend=backend, timeout=60)
        step, id_sum = resync(w, 0, wid)
        base = torch.arange(WIDTH, dtype=torch.int64)
        while step < steps or changes < 2:
            n = w.size
            t = torch.empty(WIDTH + 1, dtype=torch.int64)
            t[:WIDTH] = (wid + 1) * (step + 1) + base
            t[WIDTH] = 1 if board.target.value > n else 0  # a replacement waits: grow
            try:
                w.all_reduce(t).wait(60)
            except mw.WorldBrokenError:
                # A member died: the survivors go on without it.
                shrunk = w.shrink(abort=True, timeout=60)
                w.destroy()
                w, changes = shrunk, changes + 1
                with board.shrunk.get_lock():
                    board.shrunk.value += 1
                print(f"worker {wid}: shrank to {w.size} members (rank {w.rank}), epoch {w.epoch}", flush=True)
                step, id_sum = resync(w, step, wid)
                continue
            want = id_sum * (step + 1) + n * base
            if not torch.equal(t[:WIDTH], want):
                print(f"worker {wid}: step {step}: wrong sum", flush=True)
                sys.exit(1)
            step += 1
            board.step.value = max(board.step.value, step)
            if int(t[WIDTH]) > 0:
                # Every member saw the same sum, so every member grows here.
                grown = w.grow(n + 1, timeout=60)
                w.destroy()
                w, changes = grown, changes + 1
                print(f"worker {wid}: grew to {w.size} members, epoch {w.epoch}", flush=True)
                step, id_sum = resync(w, step, wid)
        w.barrier().wait(60)
        w.destroy()


def await_(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"elastic_group: timed out waiting for {what}")
        time.sleep(0.01)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="ucx" if mw.backend_available("ucx") else "gloo")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    board = argparse.Namespace(step=ctx.Value("i", 0), shrunk=ctx.Value("i", 0), target=ctx.Value("i", 0))
    procs = [ctx.Process(target=worker, args=(i, i, WORKERS, 0, args.backend, args.steps, board))
             for i in range(WORKERS)]
    for p in procs:
        p.start()
    try:
        await_(lambda: board.step.value >= KILL_AT, f"step {KILL_AT}")
        os.kill(procs[2].pid, signal.SIGKILL)
        procs[2].join()
        print("elastic_group: killed worker 2", flush=True)
        await_(lambda: board.shrunk.value == WORKERS - 1, "the survivors' shrink")
        # The replacement joins the shrunk world of 3 as its rank 3; the
        # members grow once they all saw that it waits.
        replacement = ctx.Process(target=worker, args=(WORKERS, WORKERS - 1, WORKERS, 2, args.backend, args.steps,
                                                       board))
        replacement.start()
        procs.append(replacement)
        board.target.value = WORKERS
        for p in procs:
            p.join(120)
        failed = [p.pid for p in procs if p is not procs[2] and p.exitcode != 0]
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    print(f"elastic_group: {'FAILED ' + str(failed) if failed else 'OK'} ({board.step.value} steps)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
