#!/usr/bin/env python3
"""The elastic serving demo in Python (what `multiworld demo` does in C++).

A leader streams 256 KiB torch tensors through stage 1, N replicas and
stage 3 and back, every connected pair in its own two-rank world. Part-way
through it kill -9s replica 0: only that replica's worlds break, stage 1
and stage 3 hear of it (context events) and tell the leader, which re-sends
that replica's requests through the others. Later a new replica starts and
forms worlds with stage 1 and stage 3 while traffic flows. Ends with

    demo: sent=N completed=N lost=0 retried=N detect_ms=N rejoin_ms=N

and exit status 0 only when nothing was lost and every result was right.

    python3 examples/python/pipeline.py [--replicas 2] [--duration 20] [--kill-after 5]
        [--scale-out-after 12] [--backend ucx|gloo] [--redis URL]

Redis: --redis, else $MW_REDIS_URL, else a private redis-server.
"""

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time

import torch

import multiworld as mw

FLOATS = 64 * 1024          # 256 KiB of float32 per message
HEADER = 8                  # int32 words in front of the tensor
WINDOW_PER_REPLICA = 4
REQUEST, RESULT, REPLICA_DOWN, NACK, ADD_REPLICA, REPLICA_READY, STOP = range(1, 8)


# ---- messages: one float32 tensor, its first 8 words an int32 header -------------------
def message(kind=0, req_id=0, replica=-1, payload=None):
    m = torch.zeros(HEADER + FLOATS, dtype=torch.float32)
    h = m[:HEADER].view(torch.int32)
    h[0], h[1], h[2] = kind, req_id, replica
    if payload is not None:
        m[HEADER:] = payload
    return m


def header(m):
    h = m[:HEADER].view(torch.int32)
    return int(h[0]), int(h[1]), int(h[2])


def stage1(x):
    return x * 2.0


def stage2(x):
    return x + 3.0


def stage3(x):
    return x * 0.5


def input_tensor(req_id):
    return ((torch.arange(FLOATS, dtype=torch.int64) + req_id * 7) % 4096).to(torch.float32)


def s1_replica(k):
    return f"demo.S1-R{k}"


def replica_s3(k):
    return f"demo.R{k}-S3"


class Link:
    """A two-rank world with one peer: messages out, and a receive loop in."""

    def __init__(self, world, tag=-1):
        self.world = world
        self.peer = 1 - world.rank
        self.tag = tag  # the replica it leads to, -1 for the leader

    def send(self, m):
        """Issues the send at once (so messages keep their order) and
        reports a failure in the background. False if the world is gone."""
        try:
            req = self.world.send(m, self.peer)
        except mw.Error:
            return False
        asyncio.ensure_future(_quietly(req))
        return True

    async def messages(self):
        """Yields received messages until the world breaks or is destroyed."""
        while True:
            m = torch.empty(HEADER + FLOATS, dtype=torch.float32)
            try:
                await self.world.recv(m, self.peer)
            except mw.Error:
                return
            yield m


async def _quietly(req):
    try:
        await req
    except mw.Error:
        pass  # the break itself arrives as an event


async def connect(ctx, name, rank, backend, tag=-1):
    return Link(await ctx.create_world_async(name, rank, 2, backend=backend, timeout=30), tag)


# ---- stages -------------------------------------------------------------------------------
async def run_stage1(ctx, backend, replicas):
    leader = await connect(ctx, "demo.L-S1", 1, backend)
    out = {k: await connect(ctx, s1_replica(k), 0, backend, k) for k in replicas}
    watch = asyncio.ensure_future(report_broken(ctx, out, leader))
    async for m in leader.messages():
        kind, req_id, k = header(m)
        if kind == REQUEST:
            m[HEADER:] = stage1(m[HEADER:])
            if k not in out or not out[k].send(m):
                leader.send(message(NACK, req_id, k))
        elif kind == ADD_REPLICA:
            out[k] = await connect(ctx, s1_replica(k), 0, backend, k)
            leader.send(message(REPLICA_READY, 0, k))
        elif kind == STOP:
            for link in out.values():
                link.send(message(STOP))
            break
    watch.cancel()
    await asyncio.sleep(0.2)  # let the stop notices leave before the worlds go


async def run_replica(ctx, backend, k):
    inbound = await connect(ctx, s1_replica(k), 1, backend)
    out = await connect(ctx, replica_s3(k), 0, backend)
    async for m in inbound.messages():
        kind = header(m)[0]
        if kind == STOP:
            break
        if kind == REQUEST:
            m[HEADER:] = stage2(m[HEADER:])
            out.send(m)


async def run_stage3(ctx, backend, replicas):
    inbound = {k: await connect(ctx, replica_s3(k), 1, backend, k) for k in replicas}
    leader = await connect(ctx, "demo.S3-L", 0, backend)
    watch = asyncio.ensure_future(report_broken(ctx, inbound, leader))

    async def serve(link):
        async for m in link.messages():
            if header(m)[0] == REQUEST:
                m[:HEADER].view(torch.int32)[0] = RESULT
                m[HEADER:] = stage3(m[HEADER:])
                leader.send(m)

    servers = [asyncio.ensure_future(serve(link)) for link in inbound.values()]
    async for m in leader.messages():
        kind, _, k = header(m)
        if kind == ADD_REPLICA:
            inbound[k] = await connect(ctx, replica_s3(k), 1, backend, k)
            servers.append(asyncio.ensure_future(serve(inbound[k])))
            leader.send(message(REPLICA_READY, 0, k))
        elif kind == STOP:
            break
    watch.cancel()
    for s in servers:
        s.cancel()


async def report_broken(ctx, links, leader):
    """Tells the leader about every replica whose world with us broke."""
    async for ev in ctx.events():
        if ev.type != mw.EventType.WORLD_BROKEN:
            continue
        for k, link in list(links.items()):
            if link.world is ev.world:
                leader.send(message(REPLICA_DOWN, 0, k))
                del links[k]
                link.world.destroy()


# ---- the leader ---------------------------------------------------------------------------
class Leader:
    def __init__(self, args):
        self.args = args
        self.procs = {}            # replica -> Popen
        self.live = set()
        self.ready = {}            # replica -> ReplicaReady count
        self.spawned_at = {}
        self.inflight = {}         # req_id -> (replica, sent at)
        self.per_replica = {}      # replica -> in flight
        self.retry = []
        self.done = set()
        self.served = {}
        self.second = {}
        self.latencies, self.second_lat = [], []
        self.next_id = self.retried = self.bad = self.duplicates = 0
        self.detect_ms = self.rejoin_ms = -1.0
        self.killed = None
        self.killed_at = 0.0
        self.stopping = False
        self.wake = asyncio.Event()

    def spawn(self, *args):
        return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--backend", self.args.backend, *args])

    def pick(self):
        ok = [k for k in self.live if self.per_replica.get(k, 0) < WINDOW_PER_REPLICA]
        return min(ok, key=lambda k: self.per_replica.get(k, 0)) if ok else None

    def issue(self):
        while True:
            k = self.pick()
            if k is None:
                return
            if self.retry:
                req_id = self.retry.pop(0)
                self.retried += 1
            elif not self.stopping:
                req_id = self.next_id
                self.next_id += 1
            else:
                return
            if not self.to_s1.send(message(REQUEST, req_id, k, input_tensor(req_id))):
                raise RuntimeError("lost the world to stage 1")
            self.inflight[req_id] = (k, time.monotonic())
            self.per_replica[k] = self.per_replica.get(k, 0) + 1

    def resend(self, req_id):
        if req_id in self.inflight:
            k, _ = self.inflight.pop(req_id)
            self.per_replica[k] -= 1
            self.retry.append(req_id)

    def replica_down(self, k):
        if k not in self.live:
            return  # stage 1 and stage 3 both report it
        self.live.discard(k)
        if k == self.killed and self.detect_ms < 0:
            self.detect_ms = (time.monotonic() - self.killed_at) * 1000
        again = [r for r, (kk, _) in self.inflight.items() if kk == k]
        print(f"demo: replica {k} is down (its worlds broke); re-sending its {len(again)} requests in flight "
              "through the others", flush=True)
        for r in again:
            self.resend(r)

    def on_message(self, m):
        kind, req_id, k = header(m)
        if kind == RESULT:
            if req_id in self.done:
                self.duplicates += 1
                return
            want = stage3(stage2(stage1(input_tensor(req_id))))
            if not torch.equal(m[HEADER:], want):
                self.bad += 1
                print(f"demo: request {req_id} came back wrong", file=sys.stderr)
            self.done.add(req_id)
            self.served[k] = self.served.get(k, 0) + 1
            self.second[k] = self.second.get(k, 0) + 1
            if req_id in self.inflight:
                kk, sent = self.inflight.pop(req_id)
                self.per_replica[kk] -= 1
                ms = (time.monotonic() - sent) * 1000
                self.latencies.append(ms)
                self.second_lat.append(ms)
            elif req_id in self.retry:
                self.retry.remove(req_id)  # came back while queued for a retry
        elif kind == NACK:
            self.resend(req_id)
        elif kind == REPLICA_DOWN:
            if not (self.stopping and not self.inflight and not self.retry):
                self.replica_down(k)
        elif kind == REPLICA_READY:
            self.ready[k] = self.ready.get(k, 0) + 1
            if self.ready[k] == 2:
                self.live.add(k)
                if k >= self.args.replicas and self.rejoin_ms < 0:
                    self.rejoin_ms = (time.monotonic() - self.spawned_at[k]) * 1000
                    print(f"demo: replica {k} joined after {self.rejoin_ms:.0f} ms and takes traffic", flush=True)
        self.wake.set()

    async def listen(self, link):
        async for m in link.messages():
            self.on_message(m)
        if not self.stopping:
            raise RuntimeError(f"the leader lost world {link.world.name}")

    def progress(self, t):
        total = sum(self.second.values())
        per = " ".join(f"r{k}={self.second.get(k, 0)}" for k in sorted(self.procs))
        lat = sorted(self.second_lat)
        p = (lambda q: lat[min(len(lat) - 1, int(q * (len(lat) - 1) + 0.5))] if lat else 0.0)  # noqa: E731
        print(f"t={t:4.0f}s  req/s={total:4d} [ {per} ]  replicas live={len(self.live)}  "
              f"p50={p(0.5):.1f}ms p99={p(0.99):.1f}ms", flush=True)
        self.second.clear()
        self.second_lat.clear()

    async def run(self, ctx):
        a = self.args
        first = list(range(a.replicas))
        ids = ",".join(map(str, first))
        start = time.monotonic()
        stages = [self.spawn("--role", "s1", "--ids", ids), self.spawn("--role", "s3", "--ids", ids)]
        for k in first:
            self.procs[k] = self.spawn("--role", "replica", "--replica", str(k))
            self.spawned_at[k] = start
        try:
            self.to_s1 = await connect(ctx, "demo.L-S1", 0, a.backend)
            self.to_s3 = await connect(ctx, "demo.S3-L", 1, a.backend)
            self.live.update(first)
            print(f"demo: pipeline up in {(time.monotonic() - start) * 1000:.0f} ms on {a.backend}: leader -> "
                  f"stage1 -> {a.replicas} replicas -> stage3 -> leader, 256 KiB torch tensors", flush=True)
            listeners = [asyncio.ensure_future(self.listen(link)) for link in (self.to_s1, self.to_s3)]
            for task in listeners:
                task.add_done_callback(lambda _: self.wake.set())
            t0 = time.monotonic()
            next_report, killed, scaled = 1.0, False, False
            while True:
                t = time.monotonic() - t0
                if not killed and 0 <= a.kill_after <= t:
                    killed = True
                    self.killed, self.killed_at = 0, time.monotonic()
                    os.kill(self.procs[0].pid, signal.SIGKILL)
                    print(f"demo: kill -9 replica 0 (pid {self.procs[0].pid})", flush=True)
                if not scaled and 0 <= a.scale_out_after <= t:
                    scaled = True
                    k = max(self.procs) + 1
                    self.spawned_at[k] = time.monotonic()
                    self.procs[k] = self.spawn("--role", "replica", "--replica", str(k))
                    for link in (self.to_s1, self.to_s3):
                        link.send(message(ADD_REPLICA, 0, k))
                    print(f"demo: scale-out: starting replica {k}", flush=True)
                if t >= next_report:
                    self.progress(next_report)
                    next_report += 1
                if not self.stopping and t >= a.duration:
                    self.stopping = True
                    print(f"demo: stop sending; draining {len(self.inflight) + len(self.retry)} requests in flight",
                          flush=True)
                if self.stopping and ((not self.inflight and not self.retry) or t >= a.duration + 20):
                    break
                for task in listeners:
                    if task.done() and task.exception():
                        raise task.exception()
                self.issue()
                # Sleep until a message arrives or the next scheduled step.
                steps = [next_report, a.duration + (20 if self.stopping else 0)]
                steps += [s for s, done in ((a.kill_after, killed), (a.scale_out_after, scaled))
                          if s >= 0 and not done]
                self.wake.clear()
                try:
                    await asyncio.wait_for(self.wake.wait(), max(0.0, min(steps) - (time.monotonic() - t0)))
                except asyncio.TimeoutError:
                    pass
            for link in (self.to_s1, self.to_s3):
                link.send(message(STOP))
            await asyncio.sleep(0.2)
            for task in listeners:
                task.cancel()
            rc = 0
        except Exception as e:  # reported, then the processes are cleaned up
            print(f"demo: {e}", file=sys.stderr)
            rc = 1
        return rc, stages

    def finish(self, rc, stages):
        deadline = time.monotonic() + 5
        for p in stages + [p for k, p in self.procs.items() if k != self.killed]:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.killed is not None:
            self.procs[self.killed].wait()
        sent, completed = self.next_id, len(self.done)
        lost = sent - completed
        print(f"\n{'replica':<10} {'served':>10} {'state':>8}")
        for k in sorted(self.procs):
            state = "killed" if k == self.killed else ("live" if k in self.live else "gone")
            print(f"{k:<10} {self.served.get(k, 0):>10} {state:>8}")
        lat = sorted(self.latencies)
        p = (lambda q: lat[min(len(lat) - 1, int(q * (len(lat) - 1) + 0.5))] if lat else 0.0)  # noqa: E731
        print(f"{'total':<10} {completed:>10}")
        print(f"latency    p50={p(0.5):.1f}ms p99={p(0.99):.1f}ms  wrong results={self.bad}  "
              f"duplicate results={self.duplicates}")
        print(f"demo: sent={sent} completed={completed} lost={lost} retried={self.retried} "
              f"detect_ms={self.detect_ms:.0f} rejoin_ms={self.rejoin_ms:.0f}", flush=True)
        return 0 if rc == 0 and lost == 0 and self.bad == 0 else 1


def private_redis(tmp):
    sock = os.path.join(tmp, "redis.sock")
    proc = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return proc, f"unix://{sock}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--kill-after", type=float, default=None, help="seconds; < 0: no kill (default: duration/3)")
    ap.add_argument("--scale-out-after", type=float, default=None,
                    help="seconds; < 0: no scale-out (default: halfway from the kill to the end)")
    ap.add_argument("--backend", choices=["ucx", "gloo"],
                    default="ucx" if mw.backend_available("ucx") else "gloo")
    ap.add_argument("--redis", default=None)
    ap.add_argument("--role", choices=["s1", "s3", "replica"], help=argparse.SUPPRESS)
    ap.add_argument("--replica", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ids", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.kill_after is None:
        args.kill_after = args.duration / 3
    if args.scale_out_after is None:
        args.scale_out_after = (args.kill_after + args.duration) / 2 if args.kill_after >= 0 else args.duration / 2
    os.environ.setdefault("MW_BIND_ADDRESS", "127.0.0.1")

    if args.role:
        ids = [int(k) for k in args.ids.split(",") if k]
        with mw.Context() as ctx:
            if args.role == "s1":
                asyncio.run(run_stage1(ctx, args.backend, ids))
            elif args.role == "s3":
                asyncio.run(run_stage3(ctx, args.backend, ids))
            else:
                asyncio.run(run_replica(ctx, args.backend, args.replica))
        return 0

    with tempfile.TemporaryDirectory(prefix="mw-demo-") as tmp:
        redis = None
        url = args.redis or os.environ.get("MW_REDIS_URL")
        if not url:
            redis, url = private_redis(tmp)
            print(f"demo: started a private redis-server at {url}", flush=True)
        os.environ["MW_REDIS_URL"] = url
        try:
            leader = Leader(args)
            with mw.Context() as ctx:
                rc, stages = asyncio.run(leader.run(ctx))
            return leader.finish(rc, stages)
        finally:
            if redis:
                redis.terminate()
                redis.wait()


if __name__ == "__main__":
    sys.exit(main())
