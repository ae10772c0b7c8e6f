"""A context's metrics (README.md, "Metrics"): a snapshot as plain Python
objects and as Prometheus text, and a collector for the prometheus_client
package, which imports it only when the collector is made.

    snap = ctx.metrics()                  # Metrics: list of Metric, .text
    from multiworld.metrics import Collector
    prometheus_client.REGISTRY.register(Collector(ctx))
"""

import collections
import ctypes
import enum

from . import _capi
from .errors import check

_lib = _capi.lib


class MetricKind(enum.IntEnum):
    COUNTER = _capi.METRIC_COUNTER
    GAUGE = _capi.METRIC_GAUGE
    HISTOGRAM = _capi.METRIC_HISTOGRAM


class Metric(collections.namedtuple("Metric", "name help kind labels value count buckets")):
    """One series: its family's `name`, `help` and `kind`, its `labels`
    (dict, in the family's order), and `value` (a histogram's sum); a
    histogram's observation `count` and `buckets`, (upper bound, cumulative
    count) pairs, the +Inf bucket being `count` (0 and () otherwise)."""

    __slots__ = ()


class Metrics(list):
    """A snapshot: the series (Metric) in the text's order, and `text`,
    Prometheus' text exposition format 0.0.4."""

    def __init__(self, series, text):
        super().__init__(series)
        self.text = text


def snapshot(handle):
    """mw_metrics_snapshot of the context `handle`, read whole."""
    m = ctypes.c_void_p()
    check(_lib.metrics_snapshot(handle, ctypes.byref(m)))
    try:
        series = []
        for i in range(_lib.metrics_count(m)):
            info = _capi.MetricInfo()
            info.size = ctypes.sizeof(info)
            check(_lib.metrics_get(m, i, ctypes.byref(info)))
            labels = {info.label_names[j].decode(): info.label_values[j].decode() for j in range(info.label_count)}
            buckets = tuple((info.bucket_bounds[j], info.bucket_counts[j]) for j in range(info.bucket_count))
            series.append(Metric(info.name.decode(), info.help.decode(), MetricKind(info.kind), labels, info.value,
                                 info.count, buckets))
        needed = ctypes.c_size_t()
        check(_lib.metrics_text(m, None, 0, ctypes.byref(needed)))
        buf = ctypes.create_string_buffer(needed.value)
        check(_lib.metrics_text(m, buf, needed.value, None))
        return Metrics(series, buf.value.decode())
    finally:
        _lib.metrics_free(m)


class Collector:
    """A prometheus_client collector of a context's metrics: every collect()
    (a scrape) takes a snapshot. Register it with a registry; unregister it
    before the context closes."""

    def __init__(self, context):
        import prometheus_client.core  # noqa: F401  (fails here, not at a scrape, when it is missing)
        self._context = context

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
        from prometheus_client.utils import floatToGoString
        families = {}
        for m in self._context.metrics():
            family = families.get(m.name)
            if family is None:
                names = list(m.labels)
                if m.kind == MetricKind.COUNTER:
                    family = CounterMetricFamily(m.name, m.help, labels=names)
                elif m.kind == MetricKind.GAUGE:
                    family = GaugeMetricFamily(m.name, m.help, labels=names)
                else:
                    family = HistogramMetricFamily(m.name, m.help, labels=names)
                families[m.name] = family
            values = list(m.labels.values())
            if m.kind == MetricKind.HISTOGRAM:
                buckets = [(floatToGoString(bound), count) for bound, count in m.buckets] + [("+Inf", m.count)]
                family.add_metric(values, buckets, m.value)
            else:
                family.add_metric(values, m.value)
        return list(families.values())
