"""A context's metrics from Python: the snapshot as objects and text, and
the prometheus_client collector scraped through a registry of its own."""

import pytest
import torch

import multiworld as mw
from multiworld.metrics import Collector, MetricKind

ROUNDS = 7


def find(snapshot, name, **labels):
    for m in snapshot:
        if m.name == name and all(m.labels.get(k) == v for k, v in labels.items()):
            return m
    return None


@pytest.fixture
def counted(redis, backend):
    """A context whose one-member world ran ROUNDS allreduces."""
    with mw.Context(redis.url) as ctx:
        with ctx.create_world("metered", 0, 1, backend=backend) as w:
            t = torch.ones(64)
            for _ in range(ROUNDS):
                w.all_reduce(t).wait(timeout=30)
            yield ctx, backend


def test_snapshot_counts_the_operations(counted):
    ctx, backend = counted
    snap = ctx.metrics()
    ops = find(snap, "mw_ops_total", backend=backend, op="allreduce")
    assert ops is not None and ops.kind == MetricKind.COUNTER and ops.value == ROUNDS
    assert list(ops.labels) == ["backend", "op"]
    seconds = find(snap, "mw_op_seconds", backend=backend, op="allreduce")
    assert seconds.kind == MetricKind.HISTOGRAM and seconds.count == ROUNDS and seconds.value > 0
    counts = [c for _, c in seconds.buckets]
    assert counts == sorted(counts) and counts[-1] <= ROUNDS
    assert find(snap, "mw_worlds", backend=backend, state="ready").value == 1
    assert find(snap, "mw_store_up").value == 1
    assert f'mw_ops_total{{backend="{backend}",op="allreduce"}} {ROUNDS}\n' in snap.text


def test_collector_serves_them_to_prometheus_client(counted):
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families
    ctx, backend = counted
    registry = prometheus_client.CollectorRegistry()
    registry.register(Collector(ctx))
    families = {f.name: f for f in text_string_to_metric_families(prometheus_client.generate_latest(registry).decode())}
    ops = families["mw_ops"]  # the client names a counter's family without _total
    assert ops.type == "counter"
    sample = [s for s in ops.samples if s.name == "mw_ops_total" and s.labels["op"] == "allreduce"]
    assert sample and sample[0].value == ROUNDS and sample[0].labels["backend"] == backend
    hist = families["mw_op_seconds"]
    assert hist.type == "histogram"
    inf = [s for s in hist.samples if s.name == "mw_op_seconds_bucket" and s.labels["le"] == "+Inf"
           and s.labels["op"] == "allreduce"]
    assert inf and inf[0].value == ROUNDS
    assert registry.get_sample_value("mw_store_up") == 1


def test_metrics_off_is_empty(redis):
    with mw.Context(redis.url, metrics="off") as ctx:
        snap = ctx.metrics()
        assert list(snap) == [] and snap.text == ""


def test_closed_context_refuses(redis):
    ctx = mw.Context(redis.url)
    ctx.close()
    with pytest.raises(mw.ClosedError):
        ctx.metrics()
