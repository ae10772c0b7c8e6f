package io.multiworld;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * One series of a {@link Metrics} snapshot: its family's name, help text and kind, its labels (names
 * and values in the family's order), and its value (a histogram's sum). A histogram also has its
 * observation count and its buckets: upper bounds and the cumulative counts of observations at most
 * each; the +Inf bucket is {@link #count()}.
 */
public final class Metric {
  /** A family's kind ({@code mw_metric_kind_t}). */
  public enum Kind {
    COUNTER,
    GAUGE,
    HISTOGRAM
  }

  private final String name;
  private final String help;
  private final Kind kind;
  private final List<String> labelNames;
  private final List<String> labelValues;
  private final double value;
  private final long count;
  private final double[] bucketBounds;
  private final long[] bucketCounts;

  Metric(String name, String help, Kind kind, List<String> labelNames, List<String> labelValues, double value,
         long count, double[] bucketBounds, long[] bucketCounts) {
    this.name = name;
    this.help = help;
    this.kind = kind;
    this.labelNames = Collections.unmodifiableList(labelNames);
    this.labelValues = Collections.unmodifiableList(labelValues);
    this.value = value;
    this.count = count;
    this.bucketBounds = bucketBounds;
    this.bucketCounts = bucketCounts;
  }

  public String name() {
    return name;
  }

  public String help() {
    return help;
  }

  public Kind kind() {
    return kind;
  }

  public List<String> labelNames() {
    return labelNames;
  }

  public List<String> labelValues() {
    return labelValues;
  }

  /** The value of label {@code name}, or null when the series has none. */
  public String label(String name) {
    int i = labelNames.indexOf(name);
    return i < 0 ? null : labelValues.get(i);
  }

  /** A counter's or gauge's value; a histogram's sum of observations. */
  public double value() {
    return value;
  }

  /** A histogram's observations; 0 otherwise. */
  public long count() {
    return count;
  }

  /** A histogram's bucket upper bounds, increasing; empty otherwise. */
  public double[] bucketBounds() {
    return bucketBounds.clone();
  }

  /** A histogram's cumulative bucket counts, one per bound; empty otherwise. */
  public long[] bucketCounts() {
    return bucketCounts.clone();
  }

  @Override
  public String toString() {
    return name + labelValues + "=" + value + (kind == Kind.HISTOGRAM
        ? " count=" + count + " buckets=" + Arrays.toString(bucketCounts) : "");
  }
}
