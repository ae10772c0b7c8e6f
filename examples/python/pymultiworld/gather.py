#!/usr/bin/env python3
"""gather in worlds that share a leader: the leader (rank 0 of every world)
collects every member's tensor in a list by rank and checks them."""

import torch

from common import check, filled, run_collective, value


async def gather_step(comm, world, rank, size, n):
    collected = [torch.zeros(4, dtype=torch.int64) for _ in range(size)] if rank == 0 else None
    await comm.gather(filled(world, rank, n), collected, 0, world_name=world)
    for r, t in enumerate(collected or []):
        check(f"{world} step {n}, rank {r}'s tensor", t, value(world, r, n))


if __name__ == "__main__":
    run_collective(__doc__, gather_step)
