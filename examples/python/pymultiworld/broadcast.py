#!/usr/bin/env python3
"""broadcast in worlds that share a leader: at each step one member, in turn
(the leader first), sends its tensor to the others, and every member checks
what it holds afterwards."""

import torch

from common import check, filled, run_collective, value


async def broadcast_step(comm, world, rank, size, n):
    root = (n - 1) % size
    t = filled(world, rank, n) if rank == root else torch.zeros(4, dtype=torch.int64)
    await comm.broadcast(t, root, world_name=world)
    check(f"{world} step {n} from rank {root}", t, value(world, root, n))


if __name__ == "__main__":
    run_collective(__doc__, broadcast_step)
