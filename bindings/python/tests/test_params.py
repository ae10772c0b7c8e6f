"""World settings through mw_world_params_t (create_world's op_timeout and
path_failover) and events through mw_event_info_t: a path event's facts
reach Python as typed fields, not text."""

import ctypes
import math
import time

import pytest
import torch

import multiworld as mw
from multiworld import _capi, events


def test_world_op_timeout_breaks_the_world_where_the_context_has_none(redis, backend):
    with mw.Context(redis.url) as ctx:
        with ctx.create_world("own-limit", 0, 1, backend=backend, timeout=10, op_timeout=0.3) as w:
            buf = torch.zeros(4, dtype=torch.int32)
            t0 = time.monotonic()
            with pytest.raises(mw.WorldBrokenError, match="op_timeout_ms=300"):
                w.recv(buf, 0).wait(10)
            assert time.monotonic() - t0 >= 0.25
            ev = next(iter(ctx.events(10)))
            assert ev.type == mw.EventType.WORLD_BROKEN and ev.world is w
            assert ev.world_epoch >= 1 and ev.path is None


def test_world_without_limit_outlives_the_contexts_op_timeout(redis, backend):
    with mw.Context(redis.url, op_timeout_ms=200) as ctx:
        with ctx.create_world("no-limit", 0, 1, backend=backend, timeout=10, op_timeout=math.inf) as w:
            buf = torch.zeros(4, dtype=torch.int32)
            r = w.recv(buf, 0)
            time.sleep(0.6)
            assert w.state == mw.WorldState.READY
            w.send(torch.full((4,), 7, dtype=torch.int32), 0).wait(10)
            r.wait(10)
            assert buf.tolist() == [7] * 4


def test_bad_world_settings_are_refused_by_name(redis, backend):
    with mw.Context(redis.url, path_failover="off") as ctx:
        with pytest.raises(mw.InvalidArgumentError, match="MW_PATH_FAILOVER_ON"):
            ctx.create_world("failover", 0, 1, backend=backend, timeout=10, path_failover=True)
        with pytest.raises(mw.InvalidArgumentError, match="op_timeout"):
            ctx.create_world("negative", 0, 1, backend=backend, timeout=10, op_timeout=-1)
        with pytest.raises(mw.InvalidArgumentError, match="path_failover"):
            ctx.create_world("not-bool", 0, 1, backend=backend, timeout=10, path_failover="yes")
        with ctx.create_world("one-path", 0, 1, backend=backend, timeout=10, path_failover=False) as w:
            assert w.state == mw.WorldState.READY


def test_path_event_fields_are_typed():
    raw = _capi.EventInfo(size=ctypes.sizeof(_capi.EventInfo), type=_capi.EVENT_PATH_DOWN, world_epoch=3,
                          world_name=b"w", peer_rank=1, reason=_capi.OK, detail=b"path 1 ... is down",
                          path_index=1, local_address=b"10.71.2.1", remote_address=b"10.71.2.2",
                          outstanding_messages=4, outstanding_bytes=262144)
    ev = events.convert(raw, None)
    assert ev.type == mw.EventType.PATH_DOWN and ev.peer_rank == 1 and ev.world_epoch == 3
    assert ev.path == mw.Path(1, "10.71.2.1", "10.71.2.2", 4, 262144)
    assert ev.path.remote_address == "10.71.2.2" and ev.path.outstanding_bytes == 262144
    raw = _capi.EventInfo(size=ctypes.sizeof(_capi.EventInfo), type=_capi.EVENT_STORE_DOWN, path_index=-1)
    assert events.convert(raw, None).path is None
