#!/usr/bin/env python3
"""all_reduce in worlds that share a leader: every member adds its tensor to
all the others', and every member checks the sum it gets back."""

from common import check, filled, run_collective, value


async def all_reduce_step(comm, world, rank, size, n):
    t = filled(world, rank, n)
    await comm.all_reduce(t, world_name=world)  # the default op: sum
    check(f"{world} step {n}", t, sum(value(world, r, n) for r in range(size)))


if __name__ == "__main__":
    run_collective(__doc__, all_reduce_step)
