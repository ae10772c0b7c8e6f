"""multiworld.compat: pymultiworld's WorldManager and WorldCommunicator calls
between 3 processes (workers.compat_calls); its ported examples run in
test_examples.py."""

import workers


def test_compat_calls(redis, backend, group):
    for rank in range(3):
        group.start(workers.compat_calls, redis.url, rank, backend)
    group.join(timeout=120)
