package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_metric_info_t;
import io.multiworld.swig.mw_status_t;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A snapshot of a context's metrics (the library's README, "Metrics"), from
 * {@link Context#metrics()}: its series as plain objects, and the same as Prometheus' text
 * exposition format 0.0.4, ready to serve at {@code /metrics}.
 */
public final class Metrics {
  private final List<Metric> series;
  private final String text;

  private Metrics(List<Metric> series, String text) {
    this.series = Collections.unmodifiableList(series);
    this.text = text;
  }

  public List<Metric> series() {
    return series;
  }

  /** Prometheus' text exposition format, version 0.0.4. */
  public String text() {
    return text;
  }

  /** The series named {@code name}. */
  public List<Metric> named(String name) {
    List<Metric> out = new ArrayList<>();
    for (Metric m : series) {
      if (m.name().equals(name)) out.add(m);
    }
    return out;
  }

  /** {@code mw_metrics_snapshot} of the context {@code ctx}, read whole. */
  static Metrics snapshot(long ctx) {
    long[] out = new long[1];
    int st = Multiworld.mw_metrics_snapshot(ctx, out);
    if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
    long m = out[0];
    mw_metric_info_t info = new mw_metric_info_t();
    try {
      long n = Multiworld.mw_metrics_count(m);
      List<Metric> series = new ArrayList<>();
      for (long i = 0; i < n; ++i) {
        st = Multiworld.mwj_metrics_get(m, i, info);
        if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
        List<String> names = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (long j = 0; j < info.getLabel_count(); ++j) {
          names.add(Multiworld.mwj_metric_label_name(info, j));
          values.add(Multiworld.mwj_metric_label_value(info, j));
        }
        int buckets = (int) info.getBucket_count();
        double[] bounds = new double[buckets];
        long[] counts = new long[buckets];
        for (int j = 0; j < buckets; ++j) {
          bounds[j] = Multiworld.mwj_metric_bucket_bound(info, j);
          counts[j] = Multiworld.mwj_metric_bucket_count(info, j);
        }
        series.add(new Metric(info.getName(), info.getHelp(), Metric.Kind.values()[info.getKind() - 1], names, values,
            info.getValue(), info.getCount(), bounds, counts));
      }
      String text = Multiworld.mwj_metrics_text(m);
      if (text == null) throw MultiWorldException.of(mw_status_t.MW_ERR_INTERNAL, Multiworld.mw_last_error());
      return new Metrics(series, text);
    } finally {
      info.delete();
      Multiworld.mw_metrics_free(m);
    }
  }
}
