package io.multiworld.tests;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.multiworld.Context;
import io.multiworld.Event;
import io.multiworld.InvalidArgumentException;
import io.multiworld.ReduceOp;
import io.multiworld.World;
import io.multiworld.WorldState;
import java.time.Duration;
import org.junit.Test;

/**
 * {@link World#shrink} and {@link World#grow} through a real Redis: a worker JVM is killed, the
 * survivors shrink with the break's list (null), and a newcomer JVM grows the world back.
 */
public class ResizeTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  /** An allreduce every member checks: rank r gives r + 1. */
  static void summed(World w) throws Exception {
    long[] in = new long[8];
    java.util.Arrays.fill(in, w.rank() + 1);
    long[] out = new long[8];
    Workers.get(w.allreduce(in, out, ReduceOp.SUM), 60);
    long[] want = new long[8];
    java.util.Arrays.fill(want, (long) w.size() * (w.size() + 1) / 2);
    assertArrayEquals("rank " + w.rank() + " of " + w.size(), want, out);
  }

  /**
   * Every member is past what came before: rank 0, which kills rank 2 next, sees this barrier
   * complete only once every member entered it. The others may see it fail (rank 2 can die before
   * it completes there): the break then waits as an event.
   */
  static void fence(World w) {
    try {
      Workers.get(w.barrier(), 60);
    } catch (Exception broken) {
      // the victim died first: afterTheKill reads the break
    }
  }

  /** Waits for the break naming rank 2, shrinks, checks the successor and the retired world. */
  static World afterTheKill(Context ctx, World w) throws Exception {
    Event e = ctx.nextEvent(Duration.ofSeconds(30));
    while (e != null && e.type() != Event.Type.WORLD_BROKEN) e = ctx.nextEvent(Duration.ofSeconds(30));
    assertNotNull("no WORLD_BROKEN event", e);
    assertEquals(2, e.peerRank());
    World shrunk = w.shrink(null, World.ShrinkMode.ABORT, TIMEOUT);
    assertEquals(w.name(), shrunk.name());
    assertEquals(w.rank(), shrunk.rank());
    assertEquals(2, shrunk.size());
    assertEquals(w.epoch() + 1, shrunk.epoch());
    assertEquals(WorldState.RETIRED, w.state());
    Throwable late = Workers.failure(w.barrier(), 5);
    assertTrue(String.valueOf(late), late instanceof InvalidArgumentException);
    assertTrue(late.getMessage(), late.getMessage().contains(Long.toString(shrunk.epoch())));
    summed(shrunk);
    return shrunk;
  }

  @Test
  public void shrinkAfterAKillThenGrowWithANewcomer() throws Exception {
    String name = Workers.uniqueName("elastic");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process survivor = workers.start("elastic-survivor", name, 1, 3);
      Process victim = workers.start("elastic-victim", name, 2, 3);
      World w = Workers.world(ctx, name, 0, 3, TIMEOUT);
      summed(w);
      Workers.get(w.barrier(), 60);  // the fence: every member is past its sum
      Workers.kill(victim);
      try (World shrunk = afterTheKill(ctx, w)) {
        w.close();
        for (int[] bad : new int[][] {{0}, {5}, {1, 1}}) {
          try {
            shrunk.shrink(bad, World.ShrinkMode.DEFAULT, TIMEOUT);
            fail("a shrink excluding " + java.util.Arrays.toString(bad) + " ran");
          } catch (InvalidArgumentException expected) {
            // refused; nothing changed
          }
        }
        assertEquals(WorldState.READY, shrunk.state());
        Process newcomer = workers.start("elastic-newcomer", name, 2, 3);
        try (World grown = shrunk.grow(3, TIMEOUT)) {
          assertEquals(0, grown.rank());
          assertEquals(3, grown.size());
          summed(grown);
          Workers.get(grown.barrier(), 60);
        }
        assertEquals(0, Workers.exitCode(newcomer, 60));
      }
      assertEquals(0, Workers.exitCode(survivor, 60));
    }
  }
}
