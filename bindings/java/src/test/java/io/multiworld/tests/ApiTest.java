package io.multiworld.tests;

import static io.multiworld.tests.Workers.failure;
import static io.multiworld.tests.Workers.get;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.multiworld.AlreadyExistsException;
import io.multiworld.Backend;
import io.multiworld.Buffers;
import io.multiworld.Config;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.DeviceBuffer;
import io.multiworld.InvalidArgumentException;
import io.multiworld.MultiWorld;
import io.multiworld.MultiWorldException;
import io.multiworld.OperationCancelledException;
import io.multiworld.ReduceOp;
import io.multiworld.Status;
import io.multiworld.StoreException;
import io.multiworld.TimeoutException;
import io.multiworld.World;
import io.multiworld.WorldState;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.Test;

/** The API in one process: configuration, errors, buffers, single-member worlds, close. */
public class ApiTest {
  @Test
  public void versionAndStatusStrings() {
    String v = MultiWorld.version();
    int[] n = MultiWorld.versionNumbers();
    assertEquals(n[0] + "." + n[1] + "." + n[2], v);
    assertNotNull(MultiWorld.statusString(Status.WORLD_BROKEN));
    assertTrue(MultiWorld.backendAvailable(Backend.GLOO));
    assertEquals(MultiWorld.backendAvailable(Backend.UCX) ? Backend.UCX : Backend.GLOO, Backend.host());
    assertEquals(Status.TIMEOUT, Status.fromCode(-4));
    assertEquals(Status.UNKNOWN, Status.fromCode(12345));
  }

  @Test
  public void badConfigIsRejectedWithItsStatus() {
    try {
      Config.builder().set("no_such_key", "1").build();
      fail("unknown key accepted");
    } catch (InvalidArgumentException e) {
      assertEquals(Status.INVALID_ARGUMENT, e.status());
      assertEquals(-1, e.code());
      assertTrue(e.getMessage(), e.detail().contains("no_such_key"));
    }
    try {
      Config.builder().set("heartbeat_interval_ms", "soon").build();
      fail("bad value accepted");
    } catch (MultiWorldException e) {
      assertEquals(Status.INVALID_ARGUMENT, e.status());
    }
    Config c = Config.builder().namespace("javatest").logLevel("error")
        .heartbeatTimeout(Duration.ofMillis(1500)).build();
    assertEquals("1500", c.get("heartbeat_timeout_ms"));
  }

  @Test
  public void unreachableRedisIsAStoreException() {
    Config c = Config.builder().redisUrl("redis://127.0.0.1:1").storeTimeout(Duration.ofMillis(300))
        .logLevel("off").build();
    try {
      new Context(c).close();
      fail("context without redis");
    } catch (StoreException e) {
      assertEquals(Status.STORE, e.status());
    }
  }

  @Test
  public void worldCreationTimesOut() {
    try (Context ctx = new Context()) {
      long t0 = System.nanoTime();
      try {
        Workers.world(ctx, uniqueName("lonely"), 0, 2, Duration.ofMillis(300));
        fail("a world of two formed with one member");
      } catch (TimeoutException e) {
        assertEquals(Status.TIMEOUT, e.status());
      }
      assertTrue((System.nanoTime() - t0) / 1_000_000 < 10_000);
    }
  }

  @Test
  public void aRankClaimedTwiceIsAlreadyExists() throws Exception {
    String name = uniqueName("twice");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (Context a = new Context(); Context b = new Context()) {
      Future<World> first = pool.submit(() -> Workers.world(a, name, 0, 2, Duration.ofSeconds(5)));
      Thread.sleep(300);  // rank 0 is claimed and waiting for rank 1
      try {
        Workers.world(b, name, 0, 2, Duration.ofSeconds(2));
        fail("rank 0 claimed twice");
      } catch (AlreadyExistsException e) {
        assertEquals(Status.ALREADY_EXISTS, e.status());
      }
      try {
        first.get();
      } catch (Exception expected) {
        // times out: nobody took rank 1
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  public void everyOperationOnASingleMemberWorld() throws Exception {
    try (Context ctx = new Context(); World w = Workers.world(ctx, uniqueName("solo"), 0, 1)) {
      assertEquals(0, w.rank());
      assertEquals(1, w.size());
      assertTrue(w.epoch() >= 1);
      assertEquals(WorldState.READY, w.state());
      Scenarios.collectives(w);
    }
  }

  @Test
  public void manyThreadsIssueAtOnce() throws Exception {
    // Operations on a one-member world finish at once, often before the issuing thread has put
    // them in the pending table: every future must still complete exactly once.
    try (Context ctx = new Context(); World w = Workers.world(ctx, uniqueName("busy"), 0, 1)) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        java.util.List<Future<Void>> jobs = new java.util.ArrayList<>();
        for (int t = 0; t < 4; ++t) {
          final int seed = t;
          jobs.add(pool.submit(() -> {
            java.util.List<CompletableFuture<Void>> all = new java.util.ArrayList<>();
            long[] sums = new long[300];
            for (int i = 0; i < 300; ++i) {
              long[] x = {seed * 1000L + i};
              final int k = i;
              all.add(w.allreduce(x, x, ReduceOp.SUM).thenRun(() -> sums[k] = x[0]));
              all.add(w.barrier());
            }
            get(CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])));
            for (int i = 0; i < 300; ++i) assertEquals(seed * 1000L + i, sums[i]);
            return null;
          }));
        }
        for (Future<Void> j : jobs) get(j);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  public void twoContextsInOneProcess() throws Exception {
    String name = uniqueName("pair");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (Context a = new Context(); Context b = new Context()) {
      Future<World> other = pool.submit(() -> Workers.world(b, name, 1, 2));
      try (World w0 = Workers.world(a, name, 0, 2); World w1 = other.get()) {
        float[] x = {1, 2, 3};
        float[] y = new float[3];
        CompletableFuture<Void> r = w1.recv(y, 0);
        get(w0.send(x, 1));
        get(r);
        assertArrayEquals(x, y, 0f);
        // peer out of range: the library refuses it, the future carries the status
        Throwable t = failure(w0.send(x, 5), 10);
        assertTrue(String.valueOf(t), t instanceof InvalidArgumentException);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  public void bufferChecks() throws Exception {
    try (Context ctx = new Context(); World w = Workers.world(ctx, uniqueName("bufs"), 0, 1)) {
      ByteBuffer small = Buffers.allocate(2, DataType.FLOAT32);
      try {
        w.allreduce(small, small, 3, DataType.FLOAT32, ReduceOp.SUM);
        fail("buffer too small");
      } catch (IllegalArgumentException expected) {
      }
      try {
        w.allreduce(small, small.asReadOnlyBuffer(), 2, DataType.FLOAT32, ReduceOp.SUM);
        fail("wrote into a read-only buffer");
      } catch (ReadOnlyBufferException expected) {
      }
      FloatBuffer bigEndian = ByteBuffer.allocateDirect(8).order(ByteOrder.BIG_ENDIAN).asFloatBuffer();
      if (ByteOrder.nativeOrder() != ByteOrder.BIG_ENDIAN) {
        try {
          w.allreduce(bigEndian, bigEndian, 2, DataType.FLOAT32, ReduceOp.SUM);
          fail("direct view in foreign byte order");
        } catch (IllegalArgumentException expected) {
        }
      }
      try {
        w.allreduce(null, small, 2, DataType.FLOAT32, ReduceOp.SUM);
        fail("null send buffer");
      } catch (NullPointerException expected) {
      }
      // A heap ByteBuffer wrapping a big-endian view is converted element by element.
      FloatBuffer heapView = ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).asFloatBuffer();
      heapView.put(0, 1.5f).put(1, -2f);
      FloatBuffer out = FloatBuffer.allocate(2);
      get(w.allreduce(heapView, out, 2, DataType.FLOAT32, ReduceOp.SUM));
      assertEquals(1.5f, out.get(0), 0f);
      assertEquals(-2f, out.get(1), 0f);
      assertEquals(0, out.position());
    }
  }

  @Test
  public void closedWorldAndContextRefuseOperations() throws Exception {
    Context ctx = new Context();
    World w = Workers.world(ctx, uniqueName("closed"), 0, 1);
    w.close();
    w.close();  // idempotent
    assertEquals(WorldState.CLOSED, w.state());
    try {
      w.barrier();
      fail("operation on a closed world");
    } catch (IllegalStateException expected) {
    }
    ctx.close();
    ctx.close();
    try {
      ctx.createWorld("x", 0, 1);
      fail("createWorld on a closed context");
    } catch (IllegalStateException expected) {
    }
  }

  @Test
  public void closingCancelsPendingOperations() throws Exception {
    String name = uniqueName("pending");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    Context a = new Context();
    try (Context b = new Context()) {
      Future<World> other = pool.submit(() -> Workers.world(b, name, 1, 2));
      World w0 = Workers.world(a, name, 0, 2);
      other.get();
      ByteBuffer buf = Buffers.allocate(4, DataType.FLOAT32);
      CompletableFuture<Void> recv = w0.recv(buf, 4, DataType.FLOAT32, 1);  // rank 1 never sends
      CompletableFuture<Void> heap = w0.recv(new float[4], 1);
      Thread.sleep(100);
      assertTrue(!recv.isDone() && !heap.isDone());
      a.close();  // destroys w0
      Throwable t = failure(recv, 10);
      assertTrue(String.valueOf(t), t instanceof OperationCancelledException);
      assertEquals(Status.CANCELLED, ((MultiWorldException) t).status());
      assertTrue(failure(heap, 10) instanceof OperationCancelledException);
      assertEquals(WorldState.CLOSED, w0.state());
    } finally {
      a.close();
      pool.shutdownNow();
    }
  }
  @Test
  public void deviceMemoryOnAHostWorldIsRefusedSayingSo() throws Exception {
    try (Context ctx = new Context(); World w = Workers.world(ctx, uniqueName("hostdev"), 0, 1);
         DeviceBuffer dev = DeviceBuffer.wrap(0x10000L, 64, 0)) {
      try {
        w.allreduce(dev, dev, 4, DataType.FLOAT32, ReduceOp.SUM);
        fail("device memory accepted by a host world");
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("device memory") && e.getMessage().contains("host memory"));
      }
      try {
        w.recv(dev, 4, DataType.FLOAT32, 0);
        fail("device memory accepted by a host world");
      } catch (IllegalArgumentException expected) {
      }
      get(w.barrier());  // nothing was issued: the world is fine
    }
  }

  @Test
  public void deviceBuffersWithoutAGpu() {
    // Wrapped memory belongs to the caller: closing only stops its use; slices stay inside.
    DeviceBuffer wrapped = DeviceBuffer.wrap(0x10000L, 64, 0);
    assertFalse(wrapped.ownsMemory());
    DeviceBuffer slice = wrapped.slice(16, 32);
    assertEquals(0x10010L, slice.address());
    assertEquals(32, slice.byteSize());
    try {
      wrapped.slice(40, 32);
      fail("slice past the end");
    } catch (IndexOutOfBoundsException expected) {
    }
    try {
      DeviceBuffer.wrap(0, 8, 0);
      fail("null device address");
    } catch (IllegalArgumentException expected) {
    }
    wrapped.close();
    assertTrue(wrapped.isClosed());
    try {
      wrapped.copyToHost(ByteBuffer.allocateDirect(4));
      fail("a closed buffer was used");
    } catch (IllegalStateException expected) {
    }
    DeviceBuffer empty = DeviceBuffer.allocate(0, 0);  // nothing to allocate: works anywhere
    assertEquals(0, empty.byteSize());
    empty.close();
    if (DeviceBuffer.deviceCount() == 0) {
      String why = DeviceBuffer.unavailableReason();
      assertNotNull(why);
      System.out.println("ApiTest: no CUDA device here: " + why);
      try {
        DeviceBuffer.allocate(0, 16);
        fail("device memory without a device");
      } catch (MultiWorldException e) {
        assertEquals(Status.UNSUPPORTED, e.status());
        assertEquals(why, e.detail());
      }
    } else {
      try (DeviceBuffer d = DeviceBuffer.allocate(0, 4, DataType.INT32)) {
        assertTrue(d.ownsMemory());
        ByteBuffer in = ByteBuffer.allocate(16).putInt(1).putInt(2).putInt(3).putInt(4).flip();
        d.copyFromHost(in);
        ByteBuffer back = ByteBuffer.allocate(16);
        d.copyToHost(back);
        assertEquals(in, back);
      }
    }
  }
}
