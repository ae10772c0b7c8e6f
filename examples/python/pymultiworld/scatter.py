#!/usr/bin/env python3
"""scatter in worlds that share a leader: the leader (rank 0 of every world)
hands each member a tensor of its own from a list by rank, and each member
checks the one it got."""

import torch

from common import check, filled, run_collective, value


async def scatter_step(comm, world, rank, size, n):
    parts = [filled(world, r, n) for r in range(size)] if rank == 0 else None
    mine = torch.zeros(4, dtype=torch.int64)
    await comm.scatter(mine, parts, 0, world_name=world)
    check(f"{world} step {n}", mine, value(world, rank, n))


if __name__ == "__main__":
    run_collective(__doc__, scatter_step)
