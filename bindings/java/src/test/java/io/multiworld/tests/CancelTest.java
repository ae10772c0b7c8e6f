package io.multiworld.tests;

import static io.multiworld.tests.Workers.failure;
import static io.multiworld.tests.Workers.get;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.multiworld.Backend;
import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.World;
import io.multiworld.WorldBrokenException;
import io.multiworld.WorldState;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * {@code cancel()} on an operation's future, against an echo worker (rank 1): the operation really
 * stops, nothing reaches the caller's array afterwards, the buffers stay referenced until the
 * library released them, and then the world goes on (UCX: a receive no message matched is taken
 * back) or is broken (Gloo: a posted receive cannot be taken back).
 */
public class CancelTest {
  /**
   * Holds the context's poller thread inside a completion stage, so that completions queue up
   * undelivered: the stage of a zero-length receive that the worker's echo of an empty message
   * completes.
   */
  private static final class PollerHold implements AutoCloseable {
    private final World world;
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch resume = new CountDownLatch(1);
    private final CompletableFuture<Void> stage;

    /** Posts the receive the hold waits for: before any other receive from the worker. */
    PollerHold(World world) {
      this.world = world;
      stage = world.recv(new float[0], 1).thenRun(() -> {
        entered.countDown();
        try {
          resume.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }

    /** Asks the worker for the empty echo and returns once the poller is held. */
    void engage() throws Exception {
      echoRequest(world, new float[0]);
      assertTrue("the poller never reached the hold", entered.await(30, TimeUnit.SECONDS));
    }

    void release() throws Exception {
      resume.countDown();
      get(stage);
    }

    /** Lets the poller go on whatever happened, so that closing the context cannot hang on it. */
    @Override
    public void close() {
      resume.countDown();
    }
  }

  /** The first half of Worker.echoRoundTrip: the worker will send data + 1 back. */
  static void echoRequest(World w, float[] data) {
    w.send(new int[] {data.length}, 1);
    w.send(data, 1);
  }

  @Test
  public void aCancelledReceiveKeepsItsBuffersUntilReleasedThenTheWorldGoesOnOrBreaks() throws Exception {
    String name = uniqueName("cancel");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process echo = workers.start("echo", name, 1, 2);
      try (World w = Workers.world(ctx, name, 0, 2)) {
        assertArrayEquals(new float[] {2}, Worker.echoRoundTrip(w, 1, new float[] {1}), 0f);
        try (PollerHold hold = new PollerHold(w)) {
          hold.engage();

          // Two receives no message will match: a direct buffer (then unreferenced here) and an array.
          ByteBuffer direct = Buffers.allocate(4, DataType.FLOAT32);
          WeakReference<ByteBuffer> directRef = new WeakReference<>(direct);
          CompletableFuture<Void> first = w.recv(direct, 4, DataType.FLOAT32, 1);
          float[] array = new float[4];
          CompletableFuture<Void> second = w.recv(array, 1);
          CompletableFuture<Void> firstReleased = World.released(first);
          CompletableFuture<Void> secondReleased = World.released(second);
          assertTrue(first.cancel(true));
          assertTrue(second.cancel(false));
          assertTrue(first.isCancelled() && second.isCancelled());
          assertFalse("cancel() of a done future", first.cancel(true));
          Arrays.fill(array, -1f);  // the caller reuses its array at once
          direct = null;
          first = null;

          // The library's completions wait behind the held poller: the buffers must stay referenced.
          for (int i = 0; i < 5; ++i) {
            System.gc();
            byte[][] garbage = new byte[64][];
            for (int k = 0; k < garbage.length; ++k) garbage[k] = new byte[64 * 1024];
            Thread.sleep(20);
          }
          assertNotNull("a cancelled receive's buffer was let go before the library was done", directRef.get());
          assertFalse(firstReleased.isDone() || secondReleased.isDone());

          hold.release();
          get(firstReleased, 10);
          get(secondReleased, 10);
          for (int i = 0; i < 100 && directRef.get() != null; ++i) {
            System.gc();
            Thread.sleep(20);
          }
          assertNull("the buffer of a released request is still referenced", directRef.get());

          if (Workers.backend() == Backend.UCX) {
            // Taken back: the world goes on, and neither receive took one of its messages.
            assertEquals(WorldState.READY, w.state());
            for (int i = 0; i < 3; ++i) {
              assertArrayEquals(new float[] {i + 1, i + 2}, Worker.echoRoundTrip(w, 1, new float[] {i, i + 1}), 0f);
            }
            Worker.stopEcho(w, 1);
          } else {
            // Gloo cannot take a posted receive back: the world broke, here and at the worker.
            assertEquals(WorldState.BROKEN, w.state());
            Throwable t = failure(w.barrier(), 10);
            assertTrue(String.valueOf(t), t instanceof WorldBrokenException);
          }
          assertArrayEquals(new float[] {-1, -1, -1, -1}, array, 0f);
        }
      }
      assertEquals(0, Workers.exitCode(echo, 30));
    }
  }

  @Test
  public void noResultReachesAnArrayOnceCancelReturned() throws Exception {
    String name = uniqueName("cancel-late");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process echo = workers.start("echo", name, 1, 2);
      try (World w = Workers.world(ctx, name, 0, 2)) {
        try (PollerHold hold = new PollerHold(w)) {
          float[] array = new float[4];
          CompletableFuture<Void> r = w.recv(array, 1);  // matched by the second echo below
          hold.engage();
          echoRequest(w, new float[] {1, 2, 3, 4});
          // The reply lands in the receive's native copy meanwhile; its completion waits behind the
          // held poller. (Should it land later, cancel takes the receive back or breaks the world:
          // the array must stay untouched all the same.)
          Thread.sleep(300);
          assertTrue(r.cancel(true));
          Arrays.fill(array, -1f);
          hold.release();
          get(World.released(r), 10);
          assertArrayEquals("a result was copied into the array after cancel()", new float[] {-1, -1, -1, -1}, array, 0f);
          System.out.println("CancelTest: after the late cancel the world is " + w.state());
        }
      }
      assertEquals(0, Workers.exitCode(echo, 30));
    }
  }
}
