"""Every operation and dtype between 2 and 3 processes, torch tensors and
numpy arrays, values checked (workers.all_ops)."""

import pytest

import workers


@pytest.mark.parametrize("lib", ["torch", "numpy"])
@pytest.mark.parametrize("size", [2, 3])
def test_every_op_and_dtype(redis, backend, group, size, lib):
    for rank in range(size):
        group.start(workers.all_ops, rank, size, lib, redis.url, backend)
    group.join(timeout=240)
