"""pymultiworld programs run unchanged (issue 30): programs of our own
written as pymultiworld's examples are (tests/m8d/, with the import lines
`from multiworld.manager import WorldManager` and `from
multiworld.communicator import BrokenWorldException`) in pymultiworld's
layouts on gloo, a pymultiworld backend, with a kill -9 of a worker; and the
API those modules offer, checked against pymultiworld 0.2.3's."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

import multiworld as mw
import pymw_workers
from conftest import HERE, mp

M8D = os.path.join(HERE, "m8d")
BACKEND = "gloo"  # pymultiworld's backends are gloo and nccl

pytestmark = pytest.mark.skipif(not mw.backend_available(BACKEND), reason="the library has no gloo backend")


def env(url, **extra):
    e = dict(os.environ, MW_REDIS_URL=url, PYTHONUNBUFFERED="1", **extra)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), HERE, e.get("PYTHONPATH")) if p)
    return e


class Program:
    """One process of a program in tests/m8d, its output in a file."""

    def __init__(self, tmp_path, url, label, script, *args):
        self.label = label
        self.log_path = tmp_path / f"{label}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, os.path.join(M8D, script), *args], env=env(url),
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=tmp_path)

    def output(self):
        return self.log_path.read_text()

    def wait_for(self, pattern, timeout):
        """Until a line of the output matches `pattern` (a regex)."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.output(), re.M):
            assert self.proc.poll() is None, f"{self.label} exited with {self.proc.returncode} before " \
                                             f"/{pattern}/:\n{self.output()}"
            assert time.monotonic() < deadline, f"{self.label}: no /{pattern}/ after {timeout} s:\n{self.output()}"
            time.sleep(0.05)

    def finish(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()

    def kill(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def received(out, world):
    return len(re.findall(rf"^received step \d+ from rank 1 in {world}$", out, re.M))


def test_send_recv(redis, tmp_path):
    """The leader receives from a worker in world1 and one in world2; kill -9
    of world2's worker breaks world2 only (the exception names the world and
    the member), world1 goes on, and the leader ends with status 0 once
    world1's worker is killed too."""
    opts = ("--backend", BACKEND, "--pause", "0.02")
    leader = Program(tmp_path, redis.url, "leader", "send_recv.py", "--worldinfo", "1,0", "--worldinfo", "2,0",
                     *opts)
    w1 = Program(tmp_path, redis.url, "world1", "send_recv.py", "--worldinfo", "1,1", *opts)
    w2 = Program(tmp_path, redis.url, "world2", "send_recv.py", "--worldinfo", "2,1", *opts)
    try:
        leader.wait_for(r"^received step 3 from rank 1 in world2$", 60)
        w2.kill()
        leader.wait_for(r"^caught an exception: world2 broken: rank 1 ", 30)
        leader.wait_for(r"^is_broken\(world2\) = True$", 5)
        after = received(leader.output(), "world1")
        deadline = time.monotonic() + 30
        while received(leader.output(), "world1") < after + 5:
            assert time.monotonic() < deadline, leader.output()
            time.sleep(0.05)
        w1.kill()
        assert leader.finish(60) == 0, leader.output()
    finally:
        for p in (leader, w1, w2):
            p.finish(10)
    out = leader.output()
    assert re.search(r"^caught an exception: world1 broken: rank 1 ", out, re.M), out
    assert out.rstrip().endswith("no world left"), out
    assert "Traceback" not in out, out


STEPS = 20


@pytest.mark.parametrize("op", ["all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter"])
def test_collective(op, redis, tmp_path):
    """pymultiworld's five-process layout: the leader in world1 and world2,
    two workers in each. kill -9 of world2's rank 1 after step 3: world2's
    other members catch BrokenWorldException naming world2 (and rank 1, where
    the library tells) and leave it, world1 runs all its steps (values
    checked), and every process but the killed one ends with status 0."""
    opts = ("--op", op, "--backend", BACKEND, "--steps", str(STEPS), "--pause", "0.1")
    members = {"leader": ["1,0", "2,0"], "w1r1": ["1,1"], "w1r2": ["1,2"], "w2r1": ["2,1"], "w2r2": ["2,2"]}
    procs = {label: Program(tmp_path, redis.url, label, "collective.py", *opts,
                            *[a for info in infos for a in ("--worldinfo", info)])
             for label, infos in members.items()}
    try:
        procs["leader"].wait_for(r"^rank: 0 from world2 done with step: 3$", 90)
        procs["w2r1"].kill()
        rcs = {label: p.finish(120) for label, p in procs.items() if label != "w2r1"}
    finally:
        for p in procs.values():
            p.finish(1)
    outs = {label: p.output() for label, p in procs.items()}
    for label, rc in rcs.items():
        assert rc == 0, f"{label} exited with {rc}:\n{outs[label]}"
    # Worlds of three on gloo: the library names the member unless the error's
    # address is this side's of the connection (then peer_rank is -1).
    for label in ("leader", "w2r2"):
        assert re.search(r"^caught an exception: world2 broken: (rank 1 |a member failed \(the library could not "
                         r"tell which\))", outs[label], re.M), outs[label]
    for label, rank in (("leader", 0), ("w1r1", 1), ("w1r2", 2)):
        assert f"rank: {rank} from world1 done with step: {STEPS}\n" in outs[label], outs[label]
        assert "world1 broken" not in outs[label], outs[label]
    assert f"from world2 done with step: {STEPS}\n" not in outs["leader"], outs["leader"]


def test_break_while_idle(redis, group):
    """A world whose member dies while nothing is pending on it: is_broken
    turns True, and the next call raises BrokenWorldException naming the
    world and the member, not the caller (pymw_workers.m8d_idle_break)."""
    to_parent = mp().Queue()
    survivor = group.start(pymw_workers.m8d_idle_break, redis.url, BACKEND, 0, to_parent)
    victim = group.start(pymw_workers.m8d_idle_break, redis.url, BACKEND, 1, to_parent)
    assert to_parent.get(timeout=60) == "formed"
    assert to_parent.get(timeout=60) == "formed"
    os.kill(victim.pid, signal.SIGKILL)
    group.join(timeout=60, expect_killed=(victim,))
    assert survivor.exitcode == 0


def run_check(code, **extra):
    """Runs `code` in a fresh interpreter (imports configure logging there,
    as pymultiworld's do, not in pytest's process)."""
    r = subprocess.run([sys.executable, "-c", code], env=env("unix:///nonexistent", **extra), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout, r.stderr


def test_api():
    """Names, signatures and exception types of pymultiworld 0.2.3's modules
    (pymw_workers.api_check)."""
    run_check("import pymw_workers; pymw_workers.api_check()")


def test_formation_timeout(redis, group):
    """initialize_world's timeout is a RuntimeError too, as pymultiworld's
    store timeout is (pymw_workers.m8d_formation_timeout)."""
    group.start(pymw_workers.m8d_formation_timeout, redis.url, BACKEND)
    group.join(timeout=60)


def test_log_level():
    """M8D_LOG_LEVEL sets the root logger (to stdout) as pymultiworld does,
    and the library's log_level; an unknown name warns instead of failing."""
    code = ("import logging, multiworld.manager as m, multiworld._m8d as k\n"
            "print(logging.getLevelName(logging.getLogger().level), k.library_config({}).get('log_level'))\n"
            "logging.getLogger('app').debug('visible')\n")
    out, _ = run_check(code, M8D_LOG_LEVEL="DEBUG")
    assert out.startswith("DEBUG debug\n") and "| DEBUG |" in out and "visible" in out, out
    out, _ = run_check(code)
    assert out == "WARNING None\n", out
    out, err = run_check(code, M8D_LOG_LEVEL="chatty")
    assert out == "WARNING None\n" and "M8D_LOG_LEVEL='chatty' is not a logging level" in err, (out, err)
