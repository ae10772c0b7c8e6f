"""The examples run to completion as programs of their own:
examples/python/pipeline.py (with its kill and scale-out) and the
pymultiworld-style programs in examples/python/pymultiworld/ (multiworld.compat:
a leader in two worlds, workers in one each), on the backend under test."""

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import HERE

EXAMPLES = os.environ.get("MW_PY_EXAMPLES", os.path.join(HERE, "..", "..", "..", "examples", "python"))
COMPAT = os.path.join(EXAMPLES, "pymultiworld")


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

    def wait_for(self, text, timeout, count=1):
        """Until the output holds `text` `count` times."""
        deadline = time.monotonic() + timeout
        while self.output().count(text) < count:
            assert self.proc.poll() is None, f"exited with {self.proc.returncode} before '{text}':\n{self.output()}"
            assert time.monotonic() < deadline, f"no {count} x '{text}' after {timeout} s:\n{self.output()}"
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


def world_args(worlds):
    return [a for name, rank in worlds for a in ("--world", name, str(rank))]


def test_compat_send_recv(redis, backend, tmp_path):
    """The leader receives from a worker in each of two worlds; kill -9 of
    one worker breaks its world only, and the leader ends, with status 0,
    once both are gone."""
    script = os.path.join(COMPAT, "send_recv.py")
    opts = ("--backend", backend, "--pause", "0.05")
    leader = Program(tmp_path, redis.url, "leader", script, *world_args([("left", 0), ("right", 0)]), *opts)
    left = Program(tmp_path, redis.url, "left", script, *world_args([("left", 1)]), *opts)
    right = Program(tmp_path, redis.url, "right", script, *world_args([("right", 1)]), *opts)
    try:
        leader.wait_for("left: step 3 received", 60)
        leader.wait_for("right: step 3 received", 60)
        os.kill(right.proc.pid, signal.SIGKILL)
        leader.wait_for("right is gone", 30)
        leader.wait_for("left: step", 30, count=leader.output().count("left: step") + 3)
        os.kill(left.proc.pid, signal.SIGKILL)
        assert leader.finish(60) == 0, leader.output()
    finally:
        for p in (leader, left, right):
            p.finish(10)
    out = leader.output()
    assert "still in: left\n" in out and "left is gone" in out and "still in: none\n" in out, out


STEPS = 10


@pytest.mark.parametrize("name", ["all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter"])
def test_compat_collective(name, redis, backend, tmp_path):
    """Two worlds of three, the leader in both: every process ends with status
    0 (the examples check every value they get) after the last step of each
    world it joined, and no world broke."""
    script = os.path.join(COMPAT, f"{name}.py")
    members = {"leader": [("left", 0), ("right", 0)]}
    members.update({f"{w}{r}": [(w, r)] for w in ("left", "right") for r in (1, 2)})
    procs = {label: Program(tmp_path, redis.url, label, script, *world_args(worlds), "--backend", backend,
                            "--steps", str(STEPS), "--pause", "0.05")
             for label, worlds in members.items()}
    try:
        for label, p in procs.items():
            assert p.finish(120) == 0, f"{label} exited with {p.proc.returncode}:\n{p.output()}"
    finally:
        for p in procs.values():
            p.finish(1)
    for label, p in procs.items():
        out = p.output()
        assert "broken" not in out, f"{label}:\n{out}"
        for world, rank in members[label]:
            assert f"{world} rank {rank}: step {STEPS} ok\n" in out, f"{label}:\n{out}"


def test_elastic_group(redis, backend, tmp_path):
    p = Program(tmp_path, redis.url, "elastic", os.path.join(EXAMPLES, "elastic_group.py"), "--backend", backend,
                "--steps", "100")
    rc = p.finish(180)
    out = p.output()
    assert rc == 0, out
    assert out.count("shrank to 3 members") == 3 and out.count("grew to 4 members") == 3, out
    assert "elastic_group: OK" in out, out
