package io.multiworld.tests;

import static io.multiworld.tests.Workers.get;
import static org.junit.Assert.assertTrue;

import io.multiworld.Backend;
import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.ReduceOp;
import io.multiworld.World;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.Test;

/**
 * 200 cycles of: two contexts, a two-member world between them (real Gloo connections), a few
 * operations with pending ones left behind, close. File descriptors, threads and resident memory
 * must come back to where they were after warm-up: no native leaks.
 */
public class LifecycleTest {
  private static final int WARMUP = 20;
  private static final int CYCLES = 200;

  @Test
  public void twoHundredOpenCloseCyclesLeakNothing() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      for (int i = 0; i < WARMUP; ++i) cycle(pool, "warm-" + i);
      settle();
      long fds0 = fds(), threads0 = nativeThreads(), rss0 = rssKb();
      long t0 = System.nanoTime();
      for (int i = 0; i < CYCLES / 2; ++i) cycle(pool, "cycle-" + i);
      settle();
      long rssHalf = rssKb();
      for (int i = CYCLES / 2; i < CYCLES; ++i) cycle(pool, "cycle-" + i);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      settle();
      long fds1 = fds(), threads1 = nativeThreads(), rss1 = rssKb();
      System.out.printf(
          "LifecycleTest: %d cycles in %d ms; fds %d -> %d, threads %d -> %d, rss %d -> %d -> %d KiB%n", CYCLES, ms,
          fds0, fds1, threads0, threads1, rss0, rssHalf, rss1);
      assertTrue("file descriptors leak: " + fds0 + " -> " + fds1, fds1 <= fds0 + 2);
      assertTrue("threads leak: " + threads0 + " -> " + threads1, threads1 <= threads0 + 2);
      // Each UCX context has a UCX engine of its own, and the JVM's resident
      // memory grows 17-27 MiB over these 400 of them, slowing down (14-17
      // MiB in the first half, 8-10 in the second); a C process that creates
      // and frees 400 UCX contexts with a world each stays flat after its
      // first 100. Gloo grows about 7 MiB.
      long limitKb = (Workers.backend() == Backend.UCX ? 48 : 24) * 1024;
      assertTrue("resident memory grew " + (rss1 - rss0) + " KiB (limit " + limitKb + ")", rss1 - rss0 < limitKb);
    } finally {
      pool.shutdownNow();
    }
  }

  private static void cycle(ExecutorService pool, String tag) throws Exception {
    String name = Workers.uniqueName("life-" + tag);
    try (Context a = new Context(); Context b = new Context()) {
      Future<World> other = pool.submit(() -> Workers.world(b, name, 1, 2));
      World w0 = Workers.world(a, name, 0, 2);
      World w1 = other.get();
      ByteBuffer x0 = Buffers.allocate(256, DataType.FLOAT32);
      ByteBuffer x1 = Buffers.allocate(256, DataType.FLOAT32);
      x0.asFloatBuffer().put(0, 1f);
      x1.asFloatBuffer().put(0, 2f);
      CompletableFuture<Void> r0 = w0.allreduce(x0, x0, 256, DataType.FLOAT32, ReduceOp.SUM);
      CompletableFuture<Void> r1 = w1.allreduce(x1, x1, 256, DataType.FLOAT32, ReduceOp.SUM);
      get(r0);
      get(r1);
      if (x0.asFloatBuffer().get(0) != 3f) throw new AssertionError("allreduce gave " + x0.asFloatBuffer().get(0));
      float[] y = new float[64];
      CompletableFuture<Void> recv = w1.recv(y, 0);
      get(w0.send(new float[64], 1));
      get(recv);
      // Left pending on purpose: closing must cancel it and release its buffer.
      w0.recv(Buffers.allocate(8, DataType.FLOAT32), 8, DataType.FLOAT32, 1);
      if (tag.hashCode() % 2 == 0) w1.close();  // sometimes a world first, sometimes only the contexts
    }
  }

  private static void settle() throws InterruptedException {
    for (int i = 0; i < 3; ++i) {
      System.gc();
      Thread.sleep(200);
    }
  }

  private static long fds() {
    String[] list = new File("/proc/self/fd").list();
    return list == null ? -1 : list.length;
  }

  private static long nativeThreads() throws Exception {
    return statusField("Threads:");
  }

  private static long rssKb() throws Exception {
    return statusField("VmRSS:");
  }

  private static long statusField(String key) throws Exception {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(key)) return Long.parseLong(line.substring(key.length()).trim().split("\\s+")[0]);
    }
    throw new IllegalStateException(key + " not in /proc/self/status");
  }
}
