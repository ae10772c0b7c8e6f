"""The examples run to completion as programs of their own:
examples/python/pipeline.py (with its kill and scale-out) and pymultiworld's
examples in examples/python/pymultiworld/, changed in their import line only.

pymultiworld's collective examples run 100 steps a second apart (reduce: 2 s),
on two worlds of 3 ranks with a shared leader, as its READMEs describe. They
run side by side, each on its own redis-server, started one after the other
so that their processes do not all import torch at once."""

import os
import signal
import subprocess
import sys
import time

from conftest import HERE, Redis

EXAMPLES = os.environ.get("MW_PY_EXAMPLES", os.path.join(HERE, "..", "..", "..", "examples", "python"))
PYMW = os.path.join(EXAMPLES, "pymultiworld")


def env(url):
    e = dict(os.environ, MW_REDIS_URL=url, PYTHONUNBUFFERED="1")
    e["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), e.get("PYTHONPATH")) if p)
    return e


class Program:
    def __init__(self, tmp_path, url, label, script, *args):
        self.log_path = tmp_path / f"{label}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, script, *args], env=env(url), stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=tmp_path)

    def output(self):
        return self.log_path.read_text()

    def wait_for(self, text, timeout):
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.proc.poll() is None, f"exited with {self.proc.returncode} before '{text}':\n{self.output()}"
            assert time.monotonic() < deadline, f"no '{text}' after {timeout} s:\n{self.output()}"
            time.sleep(0.1)

    def finish(self, timeout):
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


def test_pipeline(redis, backend, tmp_path):
    p = Program(tmp_path, redis.url, "pipeline", os.path.join(EXAMPLES, "pipeline.py"), "--duration", "10",
                "--kill-after", "3", "--scale-out-after", "6", "--backend", backend)
    rc = p.finish(120)
    out = p.output()
    assert rc == 0, out
    assert "demo: kill -9 replica 0" in out and "replica 0 is down" in out, out
    assert "replica 2 joined after" in out, out
    assert " lost=0 " in out and "wrong results=0" in out, out


def test_pymultiworld_send_recv(redis, tmp_path):
    script = os.path.join(PYMW, "send_recv.py")
    leader = Program(tmp_path, redis.url, "leader", script, "--worldinfo", "1,0", "--worldinfo", "2,0")
    w1 = Program(tmp_path, redis.url, "w1", script, "--worldinfo", "1,1")
    w2 = Program(tmp_path, redis.url, "w2", script, "--worldinfo", "2,1")
    try:
        leader.wait_for("in world1", 60)
        leader.wait_for("in world2", 60)
        # The leader goes on with world1 when world2's worker dies...
        os.kill(w2.proc.pid, signal.SIGKILL)
        leader.wait_for("caught an exception", 30)
        seen = leader.output().count("in world1")
        deadline = time.monotonic() + 30
        while leader.output().count("in world1") < seen + 2:
            assert time.monotonic() < deadline, leader.output()
            time.sleep(0.1)
        # ...and ends, as the example does, once its last world is gone.
        os.kill(w1.proc.pid, signal.SIGKILL)
        assert leader.finish(60) == 0, leader.output()
    finally:
        for p in (leader, w1, w2):
            p.finish(10)
    assert leader.output().count("caught an exception") == 2, leader.output()


COLLECTIVES = {"reduce": 2, "all_reduce": 1, "broadcast": 1, "all_gather": 1, "gather": 1, "scatter": 1}


def test_pymultiworld_collectives(tmp_path):
    runs = []
    try:
        for name in COLLECTIVES:
            redis = Redis()
            script = os.path.join(PYMW, f"{name}.py")
            ranks = [("0", ("1,0", "2,0"))] + [(f"{w}{r}", (f"{w},{r}",)) for w in (1, 2) for r in (1, 2)]
            procs = [Program(tmp_path, redis.url, f"{name}-{label}", script,
                             *[a for info in infos for a in ("--worldinfo", info)]) for label, infos in ranks]
            runs.append((name, redis, procs))
            procs[0].wait_for("done with step: 1\n", 120)  # formed and running: start the next
        for name, redis, procs in runs:
            deadline = time.monotonic() + 100 * COLLECTIVES[name] + 120
            for p in procs:
                rc = p.finish(max(1, deadline - time.monotonic()))
                assert rc == 0, f"{name}: {p.log_path.name} exited with {rc}:\n{p.output()}"
            for p in procs:
                out = p.output()
                assert "caught an exception" not in out, f"{name}: {p.log_path.name}:\n{out}"
                # the leader takes part in both worlds
                assert out.count("done with step: 100\n") == (2 if p is procs[0] else 1), f"{name}:\n{out}"
    finally:
        for _, redis, procs in runs:
            for p in procs:
                p.finish(1)
            redis.close()
