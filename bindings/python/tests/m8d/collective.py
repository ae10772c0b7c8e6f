"""A pymultiworld program, written as pymultiworld's collective examples
are (the same import lines, command line and calls): two worlds of three,
the leader rank 0 of both, every member running --op once per step in each
world it joined, all worlds at once from one asyncio loop.

    python3 collective.py --op all_reduce --worldinfo 1,0 --worldinfo 2,0
    for w in 1 2; do for r in 1 2; do
        python3 collective.py --op all_reduce --worldinfo $w,$r & done; done

Kill a worker (kill -9) and its world breaks for its two other members, who
print the exception and leave that world; the other world runs to the last
step. Every value is checked: a wrong one ends the program with status 1.
"""

import argparse
import asyncio
import sys

import torch
import torch.distributed as dist
from multiworld.communicator import BrokenWorldException
from multiworld.manager import WorldManager

WORLD_SIZE = 3
world_manager = None


async def init_world(world_name, rank, size, backend="gloo", addr="127.0.0.1", port=-1):
    dev_str = f"cuda:{rank}" if backend == "nccl" else "cpu"
    await world_manager.initialize_world(world_name, rank, size, backend=backend, addr=addr, port=port,
                                         device=torch.device(dev_str))


def value(world_name, rank, step):
    """Rank `rank`'s number in `world_name` at `step`: distinct everywhere."""
    return float(int(world_name[5:]) * 100000 + step * 10 + rank)


def mine(world_name, rank, step, backend):
    tensor = torch.full((WORLD_SIZE,), value(world_name, rank, step))
    return tensor.to(f"cuda:{rank}") if backend == "nccl" else tensor


def expect(what, got, want):
    if not torch.equal(got.cpu(), torch.full((WORLD_SIZE,), want)):
        print(f"wrong {what}: got {got.tolist()}, want {want}", flush=True)
        sys.exit(1)


async def one_step(op, comm, world_name, rank, step, backend):
    """Runs `op` once and checks what this rank got."""
    tensor = mine(world_name, rank, step, backend)
    ranks = range(WORLD_SIZE)
    if op == "all_reduce":
        await comm.all_reduce(tensor, dist.ReduceOp.SUM, world_name)
        expect(op, tensor, sum(value(world_name, r, step) for r in ranks))
    elif op == "broadcast":
        await comm.broadcast(tensor, 0, world_name)
        expect(op, tensor, value(world_name, 0, step))
    elif op == "reduce":
        await comm.reduce(tensor, 0, dist.ReduceOp.SUM, world_name)
        if rank == 0:
            expect(op, tensor, sum(value(world_name, r, step) for r in ranks))
    elif op == "all_gather":
        tensors = [torch.zeros_like(tensor) for _ in ranks]
        await comm.all_gather(tensors, tensor, world_name)
        for r in ranks:
            expect(f"{op} [{r}]", tensors[r], value(world_name, r, step))
    elif op == "gather":
        gather_list = [torch.zeros_like(tensor) for _ in ranks] if rank == 0 else None
        await comm.gather(tensor, gather_list, 0, world_name)
        for r in ranks if rank == 0 else ():
            expect(f"{op} [{r}]", gather_list[r], value(world_name, r, step))
    elif op == "scatter":
        scatter_list = [mine(world_name, r, step, backend) + 0.5 for r in ranks] if rank == 0 else None
        await comm.scatter(tensor, scatter_list, 0, world_name)
        expect(op, tensor, value(world_name, rank, step) + 0.5)


async def run(op, world_name, rank, args):
    world_communicator = world_manager.communicator
    step = 1
    while step <= args.steps:
        try:
            await one_step(op, world_communicator, world_name, rank, step, args.backend)
        except BrokenWorldException as e:
            print(f"caught an exception: {e}", flush=True)
            break
        print(f"rank: {rank} from {world_name} done with step: {step}", flush=True)
        await asyncio.sleep(args.pause)
        step += 1


async def main(args):
    global world_manager
    world_manager = WorldManager()
    worlds_ranks = {}
    for item in args.worldinfo:
        world_index, rank = (int(x) for x in item.split(","))
        assert rank <= 2, "the rank must be <= 2"
        assert world_index > 0, "the world index must be greater than 0"
        port = 29500 + world_index * 1000
        world_name = f"world{world_index}"
        worlds_ranks[world_name] = rank
        await init_world(world_name, rank, WORLD_SIZE, args.backend, args.addr, port)

    tasks = [asyncio.create_task(run(args.op, w, r, args)) for w, r in worlds_ranks.items()]
    await asyncio.gather(*tasks)
    world_manager.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", required=True,
                        choices=["all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter"])
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--addr", default="127.0.0.1")
    parser.add_argument("--worldinfo", type=str, action="append")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--pause", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args))
