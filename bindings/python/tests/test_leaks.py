"""No leaks: 200 create/destroy cycles (each with blocking and awaited
requests) leave open fds, threads and resident memory where they were after
the first cycles (workers.cycles)."""

import workers
from conftest import mp

CYCLES = 200
WARMUP = 20
RSS_SLACK_KIB = 4096


def test_create_destroy_cycles(redis, backend, group):
    out = mp().Queue()
    for rank in (0, 1):
        group.start(workers.cycles, redis.url, backend, rank, CYCLES, WARMUP, out)
    warm, end = out.get(timeout=300)
    group.join(timeout=60)
    (fds0, threads0, rss0), (fds1, threads1, rss1) = warm, end
    print(f"after {WARMUP} cycles: fds={fds0} threads={threads0} rss={rss0} KiB; "
          f"after {CYCLES}: fds={fds1} threads={threads1} rss={rss1} KiB")
    # UCX closes a force-closed TCP endpoint's socket from its progress
    # thread a moment later, so the last world's few sockets may still be
    # open at either sample; a leak of one per cycle would show as ~180.
    assert fds1 <= fds0 + 4, (warm, end)
    assert threads1 == threads0, (warm, end)
    assert rss1 - rss0 < RSS_SLACK_KIB, (warm, end)
