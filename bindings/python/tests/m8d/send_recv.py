"""A pymultiworld program, written as pymultiworld's examples are (the same
import lines, command line and calls), to show that such programs run here
unchanged: a leader receives from one worker in each of two worlds.

    python3 send_recv.py --worldinfo 1,0 --worldinfo 2,0   # the leader
    python3 send_recv.py --worldinfo 1,1                    # worker of world1
    python3 send_recv.py --worldinfo 2,1                    # worker of world2

Kill a worker (kill -9) and only its world breaks: the leader goes on with
the other one, and ends once no world is left. Every tensor received is
checked; a wrong one ends the program with status 1.
"""

import argparse
import asyncio
import sys
import time

import torch
from multiworld.manager import WorldManager

world_manager = None


async def init_world(world_name, rank, size, backend="gloo", addr="127.0.0.1", port=-1):
    """Joins `world_name` as `rank` of `size`."""
    dev_str = f"cuda:{rank}" if backend == "nccl" else "cpu"
    await world_manager.initialize_world(world_name, rank, size, backend=backend, addr=addr, port=port,
                                         device=torch.device(dev_str))


def _payload(world_index, step, backend, device_no, elements):
    """What the worker of world `world_index` sends at `step`."""
    tensor = torch.full((elements,), float(world_index * 100000 + step))
    return tensor.to(f"cuda:{device_no}") if backend == "nccl" else tensor


async def send_data(world_name, world_index, backend, device_no, args):
    """The worker: one tensor to the leader every step, until its world
    breaks (or --steps are done)."""
    world_communicator = world_manager.communicator
    step = 1
    while args.steps == 0 or step <= args.steps:
        tensor = _payload(world_index, step, backend, device_no, args.elements)
        try:
            await world_communicator.send(tensor, 0, world_name)
        except Exception as e:
            print(f"caught an exception: {e}", flush=True)
            print("terminate sending", flush=True)
            break
        print(f"world: {world_name}, sent step {step}", flush=True)
        time.sleep(args.pause)  # pymultiworld's examples block the loop here, too
        step += 1


async def receive_data(world_communicator, backend, worlds_ranks, device_no, args):
    """The leader: receives from every world in turn; a world whose worker
    is gone is dropped, and the others go on."""
    steps = {world: 1 for world in worlds_ranks}
    while len(worlds_ranks):
        for world, rank in list(worlds_ranks.items()):
            tensor = torch.zeros(args.elements)
            tensor = tensor.to(f"cuda:{device_no}") if backend == "nccl" else tensor
            try:
                await world_communicator.recv(tensor, 1, world)
            except Exception as e:
                print(f"caught an exception: {e}", flush=True)
                print(f"is_broken({world}) = {world_communicator.is_broken(world)}", flush=True)
                del worlds_ranks[world]
                continue
            want = _payload(int(world[5:]), steps[world], "gloo", 0, args.elements)
            if not torch.equal(tensor.cpu(), want):
                print(f"wrong tensor in {world} at step {steps[world]}: {tensor[:4]}", flush=True)
                sys.exit(1)
            print(f"received step {steps[world]} from rank 1 in {world}", flush=True)
            steps[world] += 1
            if args.steps and steps[world] > args.steps:
                del worlds_ranks[world]


async def main(args):
    global world_manager
    world_manager = WorldManager()
    size = 2
    worlds_ranks = {}
    device_no = 0
    for item in args.worldinfo:
        world_index, rank = (int(x) for x in item.split(","))
        assert rank <= 1, "rank error: rank should be 0 or 1."
        port = 29500 + world_index * 1000
        world_name = f"world{world_index}"
        worlds_ranks[world_name] = rank
        await init_world(world_name, rank, size, args.backend, args.addr, port)
    print(f"joined {', '.join(worlds_ranks)}", flush=True)

    if len(worlds_ranks) > 1:
        await receive_data(world_manager.communicator, args.backend, worlds_ranks, device_no, args)
    else:
        (world_name, _), = worlds_ranks.items()
        await send_data(world_name, int(world_name[5:]), args.backend, device_no, args)
    print("no world left", flush=True)
    world_manager.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--addr", default="127.0.0.1")
    parser.add_argument("--worldinfo", type=str, action="append")
    parser.add_argument("--steps", type=int, default=0, help="steps per world, 0: until the world breaks")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds a worker sleeps between sends")
    parser.add_argument("--elements", type=int, default=1, help="float32 elements per tensor")
    args = parser.parse_args()
    asyncio.run(main(args))
