"""kill -9 of a peer: its world raises WorldBrokenError (with the peer's
rank) on pending requests, another world keeps working, and the world
re-forms under the same name (workers.survivor)."""

import os
import signal

import pytest

import workers
from conftest import mp


@pytest.mark.parametrize("mode", ["blocking", "asyncio"])
def test_kill_peer(redis, backend, group, mode):
    to_parent, from_parent = mp().Queue(), mp().Queue()
    leader = group.start(workers.survivor, redis.url, backend, mode, to_parent, from_parent)
    victim = group.start(workers.echo, redis.url, backend, "victim", 1, None)
    group.start(workers.echo, redis.url, backend, "steady", 1, 1 + 20 + 1)
    assert to_parent.get(timeout=60) == "pending"
    os.kill(victim.pid, signal.SIGKILL)
    assert to_parent.get(timeout=60) == "destroyed"
    group.start(workers.echo, redis.url, backend, "victim", 1, 1)
    from_parent.put("respawned")
    group.join(timeout=120, expect_killed=(victim,))
    assert leader.exitcode == 0
