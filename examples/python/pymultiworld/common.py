"""What the pymultiworld-style examples share: their command line, the values
members exchange, and, for the collectives, the program around one step.

Every example takes one `--world NAME RANK` per world the process joins. A
leader joins several worlds (rank 0 in each); a worker joins one.
"""

import argparse
import asyncio
import itertools
import os
import sys
import zlib

import torch

from multiworld.communicator import BrokenWorldException
from multiworld.manager import WorldManager

COLLECTIVE_USAGE = """\
Two worlds of three members, the leader in both (Redis from $MW_REDIS_URL):

    python3 {prog} --world left 0 --world right 0 &
    for w in left right; do for r in 1 2; do python3 {prog} --world $w $r & done; done

The leader drives both worlds at once from one asyncio loop and leaves each
when its steps are done. Exit status 0 when every value checked was right.
"""


def parse_args(doc, epilog="", size=3, steps=20, pause=0.2):
    """The command line of an example described by `doc`."""
    p = argparse.ArgumentParser(description=doc, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--world", nargs=2, action="append", required=True, metavar=("NAME", "RANK"),
                   help="a world to join and this process's rank in it; once per world")
    p.add_argument("--size", type=int, default=size, help=f"members of every world (default {size})")
    p.add_argument("--backend", default="gloo", choices=("gloo", "ucx", "nccl"),
                   help="data plane of the worlds (default gloo)")
    p.add_argument("--steps", type=int, default=steps, help=f"steps to run, 0 for no end (default {steps})")
    p.add_argument("--pause", type=float, default=pause, help=f"seconds between steps (default {pause})")
    args = p.parse_args()
    if args.size < 2:
        p.error(f"--size {args.size}: a world needs 2 members or more")
    if args.steps < 0 or args.pause < 0:
        p.error("--steps and --pause cannot be negative")
    worlds = []
    for name, rank in args.world:
        if not rank.isdigit() or int(rank) >= args.size:
            p.error(f"--world {name} {rank}: the rank must be 0..{args.size - 1}")
        worlds.append((name, int(rank)))
    if len({name for name, _ in worlds}) != len(worlds):
        p.error("a world was named twice")
    args.worlds = worlds
    return args


def value(world, rank, step):
    """What `rank` of `world` contributes at `step`: distinct for every world,
    rank and step, so a tensor that went to the wrong place shows."""
    return (zlib.crc32(world.encode()) % 1000) * 1_000_000 + step * 1000 + rank


def filled(world, rank, step, n=4):
    return torch.full((n,), value(world, rank, step), dtype=torch.int64)


def check(what, got, want):
    """Raises when the tensor `got` does not hold `want` (a tensor or a number)."""
    if not isinstance(want, torch.Tensor):
        want = torch.full_like(got, want)
    if not torch.equal(got, want):
        raise ValueError(f"{what}: got {got.tolist()}, want {want.tolist()}")


def step_numbers(args):
    """1, 2, ... args.steps; without end when --steps is 0."""
    return itertools.count(1) if args.steps == 0 else range(1, args.steps + 1)


async def leave(wm, world, rank, size):
    """Leaves `world` without cutting off a member that still needs messages
    from this one. A member that leaves breaks the world for the others, and
    that can fail their last operation even when this member's part of it is
    done (a send completes once it is on its way). So the leader, rank 0,
    leaves last: once every worker has said it is through. A worker then
    learns that the leader left as BrokenWorldException, its cue to go."""
    token = torch.zeros(1)
    comm = wm.communicator
    if rank == 0:
        for src in range(1, size):
            await comm.recv(token, src, world_name=world)
        wm.remove_world(world)
        return
    await comm.send(token, 0, world_name=world)
    try:
        await comm.recv(token, 0, world_name=world)  # never sent: ends when the leader leaves
    except BrokenWorldException:
        pass


def run_collective(doc, step):
    """The program of a collective example: joins the worlds of the command
    line and runs `await step(communicator, world, rank, size, n)` at every
    step in all of them at once. `step` raises when a value it checks is
    wrong."""
    args = parse_args(doc, COLLECTIVE_USAGE.format(prog=os.path.basename(sys.argv[0])))
    asyncio.run(_collective(args, step))


async def _collective(args, step):
    wm = WorldManager()
    comm = wm.communicator
    await asyncio.gather(*(wm.initialize_world(world, rank, args.size, backend=args.backend)
                           for world, rank in args.worlds))

    async def member(world, rank):
        try:
            for n in step_numbers(args):
                if n > 1:
                    await asyncio.sleep(args.pause)
                await step(comm, world, rank, args.size, n)
                print(f"{world} rank {rank}: step {n} ok", flush=True)
            await leave(wm, world, rank, args.size)  # the leader's other worlds go on
        except BrokenWorldException as e:
            print(f"{world} rank {rank}: {e}", flush=True)
            return False
        return True

    if all(await asyncio.gather(*(member(world, rank) for world, rank in args.worlds))):
        wm.cleanup()  # exits with status 0
    sys.exit(1)
