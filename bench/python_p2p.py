#!/usr/bin/env python3
"""Point-to-point through the Python package against the C benchmark, in one
run, on the same backend and sizes.

For each size it runs `mw_bench p2p` (the C API's numbers, "ours" in its
table) and then the same two measurements with torch tensors through
`multiworld`, between two processes of this machine:
  bandwidth  `iters` messages streamed with 8 sends outstanding, the receiver
             keeping 8 receives posted, timed up to its acknowledgement
             (Gbit/s one way);
  latency    half a ping-pong round trip (µs).
Both take the median of `rounds` rounds. Targets: Python >= 0.95 of C's
bandwidth at >= 256 KiB, and <= +10 µs of latency at 64 B.

`--overhead N` measures instead what the package itself adds, in one
process (a one-rank world, 64-byte send and receive to itself, waited):
N iterations through `multiworld` against the same calls made straight
through ctypes (mw_submit, mw_wait, mw_request_free), alternating, median of
`rounds`. It is less sensitive to a busy machine than the two-process run.

    python3 bench/python_p2p.py [--mw-bench build/bench/mw_bench] [--backend ucx|gloo]
        [--min-bytes 64] [--max-bytes 64M] [--rounds 5] [--iters N] [--json FILE]
    python3 bench/python_p2p.py --overhead 20000 [--backend ucx|gloo] [--rounds 5]

The library comes from MW_LIB or the system (see the package's README).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import multiworld as mw  # noqa: E402

# torch's intra-op threads spin for a while after each parallel fill or
# compare, taking cores from the transfer being timed; the C side has none.
torch.set_num_threads(1)

WINDOW = 8
# A busy machine must not break the benchmark's world between measurements.
CONFIG = {"heartbeat_timeout_ms": 10000}
BANDWIDTH_ROUND_S, LATENCY_ROUND_S, PROBE_S = 0.12, 0.06, 0.02
QUIT, BANDWIDTH, LATENCY = 0, 1, 2


def size_arg(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a byte count: {text}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


class Peer:
    """One rank's side. Rank 0 drives: each measurement is first sent to
    rank 1 as a command over the same world."""

    def __init__(self, world):
        self.w = world
        self.other = 1 - world.rank
        self.cmd = torch.zeros(4, dtype=torch.int64)
        self.ack = torch.zeros(1, dtype=torch.uint8)

    def buffers(self, nbytes):
        """tx, WINDOW receive buffers, the final tx and rx: allocated and
        touched once per size, as the C side does, so no page fault lands
        in a timed loop."""
        if getattr(self, "_size", None) != nbytes:
            self._bufs = None  # free the previous size's first
            self._bufs = (torch.full((nbytes,), 7, dtype=torch.uint8),
                          [torch.zeros(nbytes, dtype=torch.uint8) for _ in range(WINDOW)],
                          torch.zeros(nbytes, dtype=torch.uint8), torch.zeros(nbytes, dtype=torch.uint8))
            self._size = nbytes
        return self._bufs

    def run(self, kind, nbytes, iters, seed):
        """Rank 0: runs one measurement with rank 1; returns seconds."""
        self.cmd[:] = torch.tensor([kind, nbytes, iters, seed])
        self.w.send(self.cmd, self.other).wait()
        if kind == QUIT:
            return 0.0
        return self.bandwidth(nbytes, iters, seed) if kind == BANDWIDTH else self.latency(nbytes, iters, seed)

    def serve(self):
        """Rank 1: runs rank 0's commands until QUIT."""
        while True:
            self.w.recv(self.cmd, self.other).wait()
            kind, nbytes, iters, seed = self.cmd.tolist()
            if kind == QUIT:
                return
            (self.bandwidth if kind == BANDWIDTH else self.latency)(nbytes, iters, seed)

    def bandwidth(self, nbytes, n, seed):
        w, other = self.w, self.other
        tx, rx, final, last = self.buffers(nbytes)
        final.fill_(seed % 251)
        if w.rank == 0:
            w.recv(self.ack, other).wait()  # rank 1 has its receives posted
            t0 = time.perf_counter()
            inflight = []
            for i in range(n):
                if len(inflight) >= WINDOW:
                    inflight.pop(0).wait()
                inflight.append(w.send(final if i + 1 == n else tx, other))
            for r in inflight:
                r.wait()
            w.recv(self.ack, other).wait()  # everything arrived
            return time.perf_counter() - t0
        last.zero_()
        posted = [w.recv(last if i + 1 == n else rx[i % WINDOW], other) for i in range(min(WINDOW, n))]
        w.send(self.ack, other).wait()
        for i in range(n):
            posted[i % WINDOW].wait()
            if i + WINDOW < n:
                j = i + WINDOW
                posted[j % WINDOW] = w.recv(last if j + 1 == n else rx[j % WINDOW], other)
        w.send(self.ack, other).wait()
        if nbytes and not torch.equal(last, final):
            raise RuntimeError(f"bandwidth: the last {nbytes}-byte payload arrived wrong")
        return 0.0

    def latency(self, nbytes, iters, seed):
        w, other = self.w, self.other
        tx, rx, _, _ = self.buffers(nbytes)
        total = iters + 1  # the first round trip is untimed
        if w.rank == 0:
            t0 = time.perf_counter()
            for j in range(total):
                if j == 1:
                    t0 = time.perf_counter()
                s = w.send(tx, other)
                w.recv(rx[0], other).wait()
                s.wait()
            return time.perf_counter() - t0
        r = w.recv(rx[0], other)
        for j in range(total):
            r.wait()
            s = w.send(tx, other)
            if j + 1 < total:
                r = w.recv(rx[1 + j % 2], other)
            s.wait()
        return 0.0


def calibrate(peer, kind, nbytes, target, floor):
    n = floor
    while True:
        t = peer.run(kind, nbytes, n, 0)
        if t >= PROBE_S or n >= 2_000_000:
            return max(floor, min(2_000_000, round(target / (t / n))))
        n = min(2_000_000, int(n * min(16, max(2, 1.5 * PROBE_S / max(t, 1e-9)))))


def measure_python(peer, nbytes, rounds, iters):
    bw_iters = iters or calibrate(peer, BANDWIDTH, nbytes, BANDWIDTH_ROUND_S, WINDOW)
    lat_iters = iters or calibrate(peer, LATENCY, nbytes, LATENCY_ROUND_S, 3)
    gbps, lat = [], []
    for k in range(rounds):
        t = peer.run(BANDWIDTH, nbytes, bw_iters, k + 1)
        gbps.append(nbytes * bw_iters * 8 / t / 1e9)
        t = peer.run(LATENCY, nbytes, lat_iters, k + 1)
        lat.append(t / lat_iters / 2 * 1e6)
    return statistics.median(gbps), statistics.median(lat)


def measure_c(args, url, nbytes, tmp):
    out = os.path.join(tmp, f"c-{nbytes}.json")
    cmd = [args.mw_bench, "p2p", "--json", out, "--rounds", str(args.rounds), "--min-bytes", str(nbytes),
           "--max-bytes", str(nbytes), "--redis", url]
    if args.iters:
        cmd += ["--iters", str(args.iters)]
    if args.backend != "gloo":
        cmd += ["--backend", args.backend]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        row = json.load(f)["rows"][0]
    return row["ours_gbps"], row["ours_lat_us"]


def overhead(url, backend, iters, rounds):
    """Microseconds per (recv + send + 2 waits) to self: package, raw ctypes."""
    import ctypes

    from multiworld import _capi

    lib = _capi.lib
    tx, rx = torch.zeros(64, dtype=torch.uint8), torch.zeros(64, dtype=torch.uint8)
    with mw.Context(url, **CONFIG) as ctx, ctx.create_world("overhead", 0, 1, backend=backend, timeout=30) as w:
        pack, size = _capi.OP_STRUCT.pack_into, _capi.OP_STRUCT.size
        op = ctypes.create_string_buffer(size)
        out = ctypes.c_void_p()
        op_addr, out_addr, h = ctypes.addressof(op), ctypes.addressof(out), w._h

        def raw():
            for _ in range(iters):
                pack(op, 0, size, _capi.OP_RECV, 0, rx.data_ptr(), 64, _capi.UINT8, 0, 0, 1)
                lib.submit(h, op_addr, out_addr)
                a = out.value
                pack(op, 0, size, _capi.OP_SEND, tx.data_ptr(), 0, 64, _capi.UINT8, 0, 0, 2)
                lib.submit(h, op_addr, out_addr)
                b = out.value
                if lib.wait(a, -1) or lib.wait(b, -1):
                    raise RuntimeError(lib.error_message())
                lib.request_free(a)
                lib.request_free(b)

        def package():
            for _ in range(iters):
                r = w.recv(rx, 0)
                w.send(tx, 0).wait()
                r.wait()

        times = {raw: [], package: []}
        for _ in range(rounds):
            for f in (raw, package):
                t0 = time.perf_counter()
                f()
                times[f].append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(times[package]), statistics.median(times[raw])


def start_redis(tmp):
    sock = os.path.join(tmp, "redis.sock")
    proc = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(sock):
        if time.monotonic() > deadline:
            raise RuntimeError("redis-server did not start")
        time.sleep(0.02)
    return proc, f"unix://{sock}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mw-bench", default=os.path.join(here, "..", "build", "bench", "mw_bench"))
    ap.add_argument("--backend", choices=["ucx", "gloo"], default="ucx" if mw.backend_available("ucx") else "gloo")
    ap.add_argument("--min-bytes", type=size_arg, default=64)
    ap.add_argument("--max-bytes", type=size_arg, default=64 << 20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=0, help="fixed iterations (default: calibrated per size)")
    ap.add_argument("--json", help="also write the rows as JSON")
    ap.add_argument("--overhead", type=int, default=0, metavar="N",
                    help="measure the package's own cost per operation pair in one process instead")
    ap.add_argument("--serve", help=argparse.SUPPRESS)  # rank 1: the Redis URL
    ap.add_argument("--namespace", default=f"pybench.{os.getpid()}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("MW_BIND_ADDRESS", "127.0.0.1")

    if args.serve:
        with mw.Context(args.serve, namespace=args.namespace, **CONFIG) as ctx:
            Peer(ctx.create_world("pyp2p", 1, 2, backend=args.backend, timeout=60)).serve()
        return 0

    if args.overhead:
        with tempfile.TemporaryDirectory(prefix="mw-pybench-") as tmp:
            redis, url = start_redis(tmp)
            try:
                ours, raw = overhead(url, args.backend, args.overhead, args.rounds)
            finally:
                redis.terminate()
                redis.wait()
        print(f"# python_p2p --overhead on {args.backend}: 64-byte recv + send to self, both waited, "
              f"{args.overhead} iterations, median of {args.rounds}")
        print(f"package {ours:.2f} us, raw ctypes {raw:.2f} us: the package adds {ours - raw:.2f} us per pair")
        return 0

    sizes, s = [], args.min_bytes
    while s <= args.max_bytes:
        sizes.append(s)
        s *= 4
    rows = []
    with tempfile.TemporaryDirectory(prefix="mw-pybench-") as tmp:
        redis, url = start_redis(tmp)
        server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", url, "--namespace",
                                   args.namespace, "--backend", args.backend])
        try:
            with mw.Context(url, namespace=args.namespace, **CONFIG) as ctx:
                peer = Peer(ctx.create_world("pyp2p", 0, 2, backend=args.backend, timeout=60))
                print(f"# python_p2p on {args.backend}: torch uint8 tensors through multiworld (python) against "
                      f"mw_bench p2p's C API side (c), same sizes, alternating per size; median of {args.rounds}")
                print(f"{'bytes':>10} {'py_gbps':>9} {'c_gbps':>9} {'ratio':>6} {'py_lat_us':>10} {'c_lat_us':>9} "
                      f"{'added_us':>9}", flush=True)
                for nbytes in sizes:
                    c_gbps, c_lat = measure_c(args, url, nbytes, tmp)
                    py_gbps, py_lat = measure_python(peer, nbytes, args.rounds, args.iters)
                    row = {"bytes": nbytes, "py_gbps": py_gbps, "c_gbps": c_gbps, "ratio": py_gbps / c_gbps,
                           "py_lat_us": py_lat, "c_lat_us": c_lat, "added_lat_us": py_lat - c_lat}
                    rows.append(row)
                    print(f"{nbytes:>10} {py_gbps:>9.3f} {c_gbps:>9.3f} {row['ratio']:>6.3f} {py_lat:>10.2f} "
                          f"{c_lat:>9.2f} {row['added_lat_us']:>9.2f}", flush=True)
                peer.run(QUIT, 0, 0, 0)
            server.wait(30)
        finally:
            if server.poll() is None:
                server.kill()
            redis.terminate()
            redis.wait()
    big = [r["ratio"] for r in rows if r["bytes"] >= 256 << 10]
    small = [r["added_lat_us"] for r in rows if r["bytes"] == 64]
    if big:
        print(f"bandwidth >= 256 KiB: worst ratio {min(big):.3f} (target >= 0.95)")
    if small:
        print(f"latency at 64 B: {small[0]:+.2f} us over C (target <= +10)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "python_p2p", "backend": args.backend, "command": " ".join(sys.argv),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
