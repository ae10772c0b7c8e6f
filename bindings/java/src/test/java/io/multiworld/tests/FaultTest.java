package io.multiworld.tests;

import static io.multiworld.tests.Workers.failure;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.Event;
import io.multiworld.ReduceOp;
import io.multiworld.Status;
import io.multiworld.World;
import io.multiworld.WorldBrokenException;
import io.multiworld.WorldState;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.Test;

/**
 * A worker JVM is killed (SIGKILL) while operations on its world are pending: they fail with
 * {@link WorldBrokenException} naming the world and the peer, the event arrives, and a second
 * world with another worker keeps serving. The name is then created again with a new worker.
 */
public class FaultTest {
  @Test
  public void killedPeerFailsPendingFuturesAndOnlyItsWorld() throws Exception {
    String doomed = uniqueName("doomed");
    String healthy = uniqueName("healthy");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      List<Event> heard = new CopyOnWriteArrayList<>();
      ctx.addEventListener(heard::add);
      Process victim = workers.start("idle", doomed, 1, 2);
      Process echo = workers.start("echo", healthy, 1, 2);
      World a = Workers.world(ctx, doomed, 0, 2);
      World b = Workers.world(ctx, healthy, 0, 2);
      assertArrayEquals(new float[] {2}, Worker.echoRoundTrip(b, 1, new float[] {1}), 0f);

      ByteBuffer direct = Buffers.allocate(4, DataType.FLOAT32);
      CompletableFuture<Void> recv = a.recv(direct, 4, DataType.FLOAT32, 1);
      CompletableFuture<Void> heapRecv = a.recv(new float[8], 1);
      ByteBuffer x = Buffers.allocate(4, DataType.FLOAT32);
      CompletableFuture<Void> allreduce = a.allreduce(x, x, 4, DataType.FLOAT32, ReduceOp.SUM);
      Thread.sleep(200);
      assertFalse(recv.isDone() || heapRecv.isDone() || allreduce.isDone());

      long t0 = System.nanoTime();
      Workers.kill(victim);
      for (CompletableFuture<Void> f : List.of(recv, heapRecv, allreduce)) {
        Throwable t = failure(f, 10);
        assertTrue(String.valueOf(t), t instanceof WorldBrokenException);
        WorldBrokenException e = (WorldBrokenException) t;
        assertEquals(Status.WORLD_BROKEN, e.status());
        assertSame(a, e.world());
        assertEquals(doomed, e.worldName());
        assertEquals(1, e.peerRank());
        assertFalse(e.detail().isEmpty());
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      System.out.println("FaultTest: futures failed " + ms + " ms after the kill");
      assertTrue("took " + ms + " ms", ms < 5000);

      Event e = ctx.nextEvent(Duration.ofSeconds(5));
      while (e != null && e.type() != Event.Type.WORLD_BROKEN) e = ctx.nextEvent(Duration.ofSeconds(5));
      assertNotNull("no WORLD_BROKEN event", e);
      assertSame(a, e.world());
      assertEquals(doomed, e.worldName());
      assertEquals(1, e.peerRank());
      assertTrue(heard.stream().anyMatch(h -> h.type() == Event.Type.WORLD_BROKEN && h.world() == a));
      assertEquals(WorldState.BROKEN, a.state());
      assertEquals(1, a.brokenPeer());

      // New operations on the broken world fail at once, with the same details.
      Throwable late = failure(a.barrier(), 5);
      assertTrue(String.valueOf(late), late instanceof WorldBrokenException);
      assertEquals(1, ((WorldBrokenException) late).peerRank());

      // The other world never noticed.
      assertEquals(WorldState.READY, b.state());
      for (int i = 0; i < 5; ++i) {
        assertArrayEquals(new float[] {i + 1}, Worker.echoRoundTrip(b, 1, new float[] {i}), 0f);
      }
      a.close();

      // Elastic: the name forms again with a new worker, as a new incarnation.
      Process replacement = workers.start("echo", doomed, 1, 2);
      try (World again = Workers.world(ctx, doomed, 0, 2)) {
        assertTrue(again.epoch() > a.epoch());
        assertArrayEquals(new float[] {8}, Worker.echoRoundTrip(again, 1, new float[] {7}), 0f);
        Worker.stopEcho(again, 1);
      }
      Worker.stopEcho(b, 1);
      b.close();
      assertEquals(0, Workers.exitCode(replacement, 30));
      assertEquals(0, Workers.exitCode(echo, 30));
    }
  }
}
