"""16 worlds driven concurrently from one asyncio loop: every request is
awaited on the context's fd, so no thread is added per world, nor by the
package at all (workers.many_worlds)."""

import workers
from conftest import mp

WORLDS = 16


def test_sixteen_worlds_one_loop(redis, backend, group):
    out = mp().Queue()
    for rank in (0, 1):
        group.start(workers.many_worlds, redis.url, backend, rank, WORLDS, 50, out)
    report = out.get(timeout=180)
    group.join(timeout=60)
    (py_before, _), (py_one, os_one), (py_warm, os_warm) = report["before"], report["one_world"], report["warm"]
    samples = report["samples"]
    assert samples, "no sample taken while traffic ran"
    # Python threads: none added by the context, the worlds or the loop.
    assert py_one == py_before and py_warm == py_before
    assert all(py == py_before for py, _ in samples), samples
    # Process threads: the loop's traffic adds none to what the library runs.
    assert all(n == os_warm for _, n in samples), (os_warm, samples)
    if backend == "ucx":
        # One progress engine per context, whatever the number of worlds.
        assert os_warm == os_one, (os_one, os_warm)
