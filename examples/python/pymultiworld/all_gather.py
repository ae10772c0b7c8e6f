#!/usr/bin/env python3
"""all_gather in worlds that share a leader: every member gets every member's
tensor, in a list by rank, and checks them all."""

import torch

from common import check, filled, run_collective, value


async def all_gather_step(comm, world, rank, size, n):
    everyone = [torch.zeros(4, dtype=torch.int64) for _ in range(size)]
    await comm.all_gather(everyone, filled(world, rank, n), world_name=world)
    for r, t in enumerate(everyone):
        check(f"{world} step {n}, rank {r}'s tensor", t, value(world, r, n))


if __name__ == "__main__":
    run_collective(__doc__, all_gather_step)
