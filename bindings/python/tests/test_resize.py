"""World.shrink and World.grow through a real Redis: a member is killed,
the survivors shrink with no list (the break's), a newcomer grows the
world back (workers.elastic, workers.newcomer)."""

import os
import signal

import workers
from conftest import mp


def test_shrink_after_a_kill_then_grow(redis, backend, group):
    to_parent, from_parent = mp().Queue(), mp().Queue()
    # The victim talks over a queue of its own: killed while its feeder
    # thread holds a queue's lock, it would leave that queue stuck.
    from_victim = mp().Queue()
    for rank in (0, 1):
        group.start(workers.elastic, redis.url, backend, rank, to_parent, from_parent)
    victim = group.start(workers.elastic, redis.url, backend, 2, from_victim, from_parent)
    assert [to_parent.get(timeout=60) for _ in range(2)] == ["formed"] * 2
    assert from_victim.get(timeout=60) == "formed"
    os.kill(victim.pid, signal.SIGKILL)
    assert [to_parent.get(timeout=60) for _ in range(2)] == ["shrunk"] * 2
    group.start(workers.newcomer, redis.url, backend, to_parent, from_parent)
    assert to_parent.get(timeout=60) == "joined"
    for _ in range(3):
        from_parent.put("done")
    group.join(timeout=120, expect_killed=(victim,))
