#!/usr/bin/env python3
"""send/recv in worlds that share a leader, and a leader that outlives them.

Workers send the leader a tensor each step; the leader (rank 0 of every world
it joins) receives from all of them at once and checks every tensor. When a
worker dies, only its world breaks: the leader's receive there raises
BrokenWorldException, the world is gone, and the leader goes on with the
others. It ends when its last world is gone (or after --steps, if given).

Two worlds of two members, the leader in both (Redis from $MW_REDIS_URL):

    python3 send_recv.py --world left 0 --world right 0 &
    python3 send_recv.py --world left 1 &
    python3 send_recv.py --world right 1 &
    kill -9 %3    # right breaks; left goes on

Exit status 0 unless a tensor arrived wrong.
"""

import asyncio

import torch

from common import check, filled, leave, parse_args, step_numbers, value

from multiworld.communicator import BrokenWorldException
from multiworld.manager import WorldManager


async def lead(comm, world, args):
    """Receives every worker's tensors in `world` until it breaks."""
    got = torch.zeros(4, dtype=torch.int64)
    for n in step_numbers(args):
        for src in range(1, args.size):
            await comm.recv(got, src, world_name=world)
            check(f"{world} step {n} from rank {src}", got, value(world, src, n))
        print(f"{world}: step {n} received from {args.size - 1} worker(s)", flush=True)


async def work(comm, world, rank, args):
    """Sends the leader one tensor a step until `world` breaks."""
    for n in step_numbers(args):
        await comm.send(filled(world, rank, n), 0, world_name=world)
        print(f"{world} rank {rank}: step {n} sent", flush=True)
        await asyncio.sleep(args.pause)


async def main(args):
    wm = WorldManager()
    comm = wm.communicator
    await asyncio.gather(*(wm.initialize_world(world, rank, args.size, backend=args.backend)
                           for world, rank in args.worlds))
    print(f"joined {', '.join(world for world, _ in args.worlds)}", flush=True)

    async def member(world, rank):
        try:
            await (lead(comm, world, args) if rank == 0 else work(comm, world, rank, args))
            await leave(wm, world, rank, args.size)  # after --steps
        except BrokenWorldException as e:
            left = [w for w, _ in args.worlds if not comm.is_broken(w)]
            print(f"{world} is gone ({e}); still in: {', '.join(left) or 'none'}", flush=True)

    await asyncio.gather(*(member(world, rank) for world, rank in args.worlds))
    wm.cleanup()  # exits with status 0; a wrong tensor raised before this


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, size=2, steps=0)))
