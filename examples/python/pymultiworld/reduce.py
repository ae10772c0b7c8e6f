#!/usr/bin/env python3
"""reduce in worlds that share a leader: the members' tensors meet at the
leader (rank 0 of every world) under torch.distributed.ReduceOp.MAX, and the
leader checks the maximum."""

from torch.distributed import ReduceOp

from common import check, filled, run_collective, value


async def reduce_step(comm, world, rank, size, n):
    t = filled(world, rank, n)
    await comm.reduce(t, 0, ReduceOp.MAX, world_name=world)
    if rank == 0:  # the other members' tensors hold no result
        check(f"{world} step {n}", t, max(value(world, r, n) for r in range(size)))


if __name__ == "__main__":
    run_collective(__doc__, reduce_step)
