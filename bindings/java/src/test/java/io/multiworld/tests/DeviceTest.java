package io.multiworld.tests;

import static io.multiworld.tests.Workers.get;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.multiworld.Backend;
import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.DeviceBuffer;
import io.multiworld.MultiWorld;
import io.multiworld.ReduceOp;
import io.multiworld.World;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.Assume;
import org.junit.Before;
import org.junit.Test;

/**
 * Device memory on NCCL worlds, values checked on the host. Needs a GPU: without one every test is
 * skipped, saying why (and the ctest reports it skipped).
 */
public class DeviceTest {
  @Before
  public void needsAGpu() {
    String cuda = DeviceBuffer.unavailableReason();
    Assume.assumeTrue("no GPU here: mw_backend_available(MW_BACKEND_NCCL) is 0"
        + (cuda == null ? "" : " (" + cuda + ")"), MultiWorld.backendAvailable(Backend.NCCL));
  }

  static World ncclWorld(Context ctx, String name, int rank, int size, int device) {
    return ctx.createWorld(name, rank, size, Backend.NCCL, device, Duration.ofSeconds(60));
  }

  static DeviceBuffer deviceOf(int device, float... values) {
    DeviceBuffer d = DeviceBuffer.allocate(device, values.length, DataType.FLOAT32);
    ByteBuffer host = Buffers.allocate(values.length, DataType.FLOAT32);
    host.asFloatBuffer().put(values);
    d.copyFromHost(host);
    return d;
  }

  static float[] floats(DeviceBuffer d, long offset, int n) {
    ByteBuffer host = Buffers.allocate(n, DataType.FLOAT32);
    d.slice(offset * 4, n * 4L).copyToHost(host);
    float[] out = new float[n];
    host.asFloatBuffer().get(out);
    return out;
  }

  static float[] floats(DeviceBuffer d) {
    return floats(d, 0, (int) (d.byteSize() / 4));
  }

  @Test
  public void everyOperationOnASingleMemberNcclWorld() throws Exception {
    float[] x = {1, 2, 3, 4};
    try (Context ctx = new Context(); World w = ncclWorld(ctx, uniqueName("gpu-solo"), 0, 1, 0);
         DeviceBuffer in = deviceOf(0, x);
         DeviceBuffer out = DeviceBuffer.allocate(0, 8, DataType.FLOAT32)) {
      // A completed future means the result is on the device: copyToHost right after sees it.
      get(w.allreduce(in, out, 4, DataType.FLOAT32, ReduceOp.SUM));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      get(w.allreduce(in, in, 4, DataType.FLOAT32, ReduceOp.MAX));  // in place
      assertArrayEquals(x, floats(in), 0f);
      get(w.broadcast(in, 4, DataType.FLOAT32, 0));
      assertArrayEquals(x, floats(in), 0f);
      get(w.reduce(in, out.slice(16, 16), 4, DataType.FLOAT32, ReduceOp.SUM, 0));  // a slice: offset 4 floats
      assertArrayEquals(x, floats(out, 4, 4), 0f);
      get(w.allgather(in, out, 4, DataType.FLOAT32));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      get(w.gather(in, out, 4, DataType.FLOAT32, 0));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      get(w.scatter(in, out, 4, DataType.FLOAT32, 0));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      get(w.reduceScatter(in, out, 4, DataType.FLOAT32, ReduceOp.SUM));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      get(w.alltoall(in, out, 4, DataType.FLOAT32));
      assertArrayEquals(x, floats(out, 0, 4), 0f);
      // To self: the send first, as every NCCL operation of a world runs in issue order.
      try (DeviceBuffer y = DeviceBuffer.allocate(0, 4, DataType.FLOAT32)) {
        CompletableFuture<Void> s = w.send(in, 4, DataType.FLOAT32, 0);
        get(w.recv(y, 4, DataType.FLOAT32, 0));
        get(s);
        assertArrayEquals(x, floats(y), 0f);
      }
      get(w.barrier());
    }
  }

  @Test
  public void hostMemoryOnAnNcclWorldIsRefusedSayingSo() throws Exception {
    try (Context ctx = new Context(); World w = ncclWorld(ctx, uniqueName("gpu-host"), 0, 1, 0)) {
      ByteBuffer host = Buffers.allocate(4, DataType.FLOAT32);
      try {
        w.allreduce(host, host, 4, DataType.FLOAT32, ReduceOp.SUM);
        fail("host memory accepted by an NCCL world");
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("host memory") && e.getMessage().contains("DeviceBuffer"));
      }
      try {
        w.send(new float[4], 0);
        fail("a heap array accepted by an NCCL world");
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("NCCL"));
      }
      try (DeviceBuffer other = DeviceBuffer.wrap(0x10000L, 16, 1)) {
        w.send(other, 4, DataType.FLOAT32, 0);
        fail("memory of device 1 accepted by a world on device 0");
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("device 1"));
      }
      get(w.barrier());  // nothing was issued: the world is fine
    }
  }

  @Test
  public void closingABufferInFlightFreesItOnceTheOperationCompleted() throws Exception {
    try (Context ctx = new Context(); World w = ncclWorld(ctx, uniqueName("gpu-close"), 0, 1, 0)) {
      DeviceBuffer b = deviceOf(0, 5, 6);
      DeviceBuffer view = b.slice(0, 8);
      CompletableFuture<Void> f = w.allreduce(view, view, 2, DataType.FLOAT32, ReduceOp.SUM);
      b.close();  // the operation still holds the allocation
      get(f);
      assertTrue(b.isClosed() && view.isClosed());
      try {
        w.allreduce(view, view, 2, DataType.FLOAT32, ReduceOp.SUM);
        fail("an operation on a closed allocation was issued");
      } catch (IllegalStateException expected) {
      }
    }
  }

  @Test
  public void twoRanksOnTwoGpusExchangeDeviceMemory() throws Exception {
    int gpus = DeviceBuffer.deviceCount();
    Assume.assumeTrue("needs two GPUs, this machine has " + gpus + " (NCCL 2.28 runs one rank per GPU)", gpus >= 2);
    String name = uniqueName("gpu-pair");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (Context a = new Context(); Context b = new Context()) {
      Future<World> other = pool.submit(() -> ncclWorld(b, name, 1, 2, 1));
      try (World w0 = ncclWorld(a, name, 0, 2, 0); World w1 = other.get();
           DeviceBuffer x0 = deviceOf(0, 1, 2, 3); DeviceBuffer x1 = deviceOf(1, 10, 20, 30);
           DeviceBuffer y1 = DeviceBuffer.allocate(1, 3, DataType.FLOAT32)) {
        CompletableFuture<Void> s = w0.send(x0, 3, DataType.FLOAT32, 1);
        get(w1.recv(y1, 3, DataType.FLOAT32, 0));
        get(s);
        assertArrayEquals(new float[] {1, 2, 3}, floats(y1), 0f);
        CompletableFuture<Void> r0 = w0.allreduce(x0, x0, 3, DataType.FLOAT32, ReduceOp.SUM);
        get(w1.allreduce(x1, x1, 3, DataType.FLOAT32, ReduceOp.SUM));
        get(r0);
        assertArrayEquals(new float[] {11, 22, 33}, floats(x0), 0f);
        assertArrayEquals(new float[] {11, 22, 33}, floats(x1), 0f);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
