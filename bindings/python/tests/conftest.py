"""Fixtures: a private redis-server per test, the backend under test, and
worker processes (forked from a forkserver that imported torch, numpy and
multiworld once, so a worker starts in milliseconds and shares no library
state with pytest's process).

Environment: MW_LIB (the library), MW_TEST_BACKEND (ucx | gloo; default ucx
when the library has it, else gloo)."""

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # the package, when not installed

import multiworld as mw  # noqa: E402

os.environ.setdefault("MW_BIND_ADDRESS", "127.0.0.1")


def host_backend():
    name = os.environ.get("MW_TEST_BACKEND")
    if name:
        if name not in ("ucx", "gloo"):
            raise RuntimeError(f"MW_TEST_BACKEND={name!r}: use ucx or gloo")
        return name
    return "ucx" if mw.backend_available("ucx") else "gloo"


class Redis:
    """redis-server on a unix socket in a temp dir, stopped at close()."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mw-py-redis-")
        self.sock = os.path.join(self.dir, "redis.sock")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)
        self.url = f"unix://{self.sock}"

    def _answers(self):
        if not os.path.exists(self.sock):
            return False
        ping = ["redis-cli", "-s", self.sock, "ping"]
        return subprocess.run(ping, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.close()


@pytest.fixture
def backend():
    return host_backend()


_mp = None


def mp():
    """The forkserver context workers come from."""
    global _mp
    if _mp is None:
        _mp = multiprocessing.get_context("forkserver")
        _mp.set_forkserver_preload(["numpy", "torch", "multiworld", "workers"])
    return _mp


class Group:
    """Worker processes running functions of workers.py."""

    def __init__(self):
        self.procs = []

    def start(self, target, *args):
        p = mp().Process(target=target, args=args)
        p.start()
        self.procs.append(p)
        return p

    def join(self, timeout=120, expect_killed=()):
        """Waits for every process; each must exit with 0 unless it is in
        expect_killed."""
        deadline = time.monotonic() + timeout
        for p in self.procs:
            p.join(max(0.1, deadline - time.monotonic()))
        hung = [p for p in self.procs if p.is_alive()]
        for p in hung:
            os.kill(p.pid, signal.SIGKILL)
            p.join()
        assert not hung, f"workers still running after {timeout} s: {[p.pid for p in hung]}"
        failed = [(p.pid, p.exitcode) for p in self.procs if p.exitcode != 0 and p not in expect_killed]
        assert not failed, f"workers failed (pid, exit code): {failed}"

    def kill_all(self):
        for p in self.procs:
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
            p.join()


@pytest.fixture
def group():
    g = Group()
    yield g
    g.kill_all()
