package io.multiworld.tests;

import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.multiworld.Config;
import io.multiworld.Context;
import io.multiworld.Metric;
import io.multiworld.Metrics;
import io.multiworld.World;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/** A context's metrics as plain objects and text, in one process against a real redis-server. */
public class MetricsTest {
  private static final int ROUNDS = 4;

  @Test
  public void snapshotCountsTheOperations() throws Exception {
    String backend = Workers.backend().name().toLowerCase(Locale.ROOT);
    try (Context ctx = new Context(); World w = Workers.world(ctx, uniqueName("metered"), 0, 1)) {
      for (int i = 0; i < ROUNDS; ++i) w.barrier().get(30, TimeUnit.SECONDS);
      Metrics m = ctx.metrics();
      Metric ops = null;
      Metric seconds = null;
      for (Metric s : m.series()) {
        if (!backend.equals(s.label("backend")) || !"barrier".equals(s.label("op"))) continue;
        if (s.name().equals("mw_ops_total")) ops = s;
        if (s.name().equals("mw_op_seconds")) seconds = s;
      }
      assertTrue("mw_ops_total of barrier in " + m.series(), ops != null);
      assertEquals(Metric.Kind.COUNTER, ops.kind());
      assertEquals(ROUNDS, ops.value(), 0);
      assertEquals("backend", ops.labelNames().get(0));
      assertTrue("mw_op_seconds of barrier", seconds != null);
      assertEquals(Metric.Kind.HISTOGRAM, seconds.kind());
      assertEquals(ROUNDS, seconds.count());
      long[] counts = seconds.bucketCounts();
      double[] bounds = seconds.bucketBounds();
      assertEquals(bounds.length, counts.length);
      for (int i = 1; i < counts.length; ++i) {
        assertTrue(bounds[i] > bounds[i - 1] && counts[i] >= counts[i - 1]);
      }
      String line = "mw_ops_total{backend=\"" + backend + "\",op=\"barrier\"} " + ROUNDS + "\n";
      assertTrue(m.text() + " lacks " + line, m.text().contains(line));
      assertEquals(1.0, m.named("mw_store_up").get(0).value(), 0);
    }
  }

  @Test
  public void metricsOffIsEmptyAndAClosedContextRefuses() {
    Context ctx = new Context(Config.builder().set("metrics", "off").build());
    Metrics m = ctx.metrics();
    assertTrue(m.series().isEmpty());
    assertEquals("", m.text());
    ctx.close();
    try {
      ctx.metrics();
      fail("a closed context's metrics");
    } catch (IllegalStateException expected) {
      // as every call on a closed context
    }
  }
}
