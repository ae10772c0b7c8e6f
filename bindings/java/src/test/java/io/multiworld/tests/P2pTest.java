package io.multiworld.tests;

import static io.multiworld.tests.Workers.failure;
import static io.multiworld.tests.Workers.get;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.InvalidArgumentException;
import io.multiworld.Status;
import io.multiworld.World;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.Test;

/** Point to point between this JVM (rank 0) and a worker JVM (rank 1). */
public class P2pTest {
  @Test
  public void directAndHeapBuffersRoundTrip() throws Exception {
    String name = uniqueName("p2p");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process echo = workers.start("echo", name, 1, 2);
      try (World w = Workers.world(ctx, name, 0, 2)) {
        // heap arrays of several sizes, including empty and 1 MiB
        for (int n : new int[] {0, 1, 7, 1 << 18}) {
          float[] x = new float[n];
          for (int i = 0; i < n; ++i) x[i] = i * 0.25f;
          float[] y = Worker.echoRoundTrip(w, 1, x);
          for (int i = 0; i < n; ++i) assertEquals(x[i] + 1, y[i], 0f);
        }
        // direct buffers, zero-copy, the payload at a non-zero position
        for (int round = 0; round < 3; ++round) {
          int n = 1000;
          ByteBuffer data = Buffers.allocate(n + 3, DataType.FLOAT32);
          FloatBuffer f = data.asFloatBuffer();
          for (int i = 0; i < n; ++i) f.put(3 + i, round * 1000 + i);
          f.position(3);
          FloatBuffer reply = Buffers.allocate(n, DataType.FLOAT32).asFloatBuffer();
          get(w.send(new int[] {n}, 1));
          CompletableFuture<Void> r = w.recv(reply, n, DataType.FLOAT32, 1);
          get(w.send(f, n, DataType.FLOAT32, 1));
          get(r);
          assertEquals(3, f.position());
          for (int i = 0; i < n; ++i) assertEquals(round * 1000 + i + 1, reply.get(i), 0f);
        }
        // many in flight at once: futures complete independently, no thread per request
        List<CompletableFuture<Void>> all = new ArrayList<>();
        List<float[]> replies = new ArrayList<>();
        int threadsBefore = Thread.activeCount();
        for (int k = 0; k < 50; ++k) {
          float[] reply = new float[16];
          replies.add(reply);
          get(w.send(new int[] {16}, 1));
          all.add(w.recv(reply, 1));
          float[] x = new float[16];
          java.util.Arrays.fill(x, k);
          all.add(w.send(x, 1));
        }
        assertTrue(Thread.activeCount() <= threadsBefore + 1);
        get(CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])));
        for (int k = 0; k < 50; ++k) assertEquals(k + 1, replies.get(k)[15], 0f);
        Worker.stopEcho(w, 1);
      }
      assertEquals(0, Workers.exitCode(echo, 30));
    }
  }

  @Test
  public void sizeMismatchFailsTheRecvAndTheWorldStaysUsable() throws Exception {
    String name = uniqueName("mismatch");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process peer = workers.start("mismatch", name, 1, 2);
      try (World w = Workers.world(ctx, name, 0, 2)) {
        int[] one = new int[1];
        Throwable t = failure(w.recv(one, 1), 30);  // the peer sends two ints
        assertTrue(String.valueOf(t), t instanceof InvalidArgumentException);
        assertEquals(Status.INVALID_ARGUMENT, ((InvalidArgumentException) t).status());
        assertFalse(w.isBroken());
        float[] y = Worker.echoRoundTrip(w, 1, new float[] {41});
        assertArrayEquals(new float[] {42}, y, 0f);
        Worker.stopEcho(w, 1);
      }
      assertEquals(0, Workers.exitCode(peer, 30));
    }
  }
}
