package io.multiworld.tests;

import static io.multiworld.tests.Workers.failure;
import static io.multiworld.tests.Workers.get;
import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.multiworld.Config;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.Event;
import io.multiworld.InvalidArgumentException;
import io.multiworld.World;
import io.multiworld.WorldBrokenException;
import io.multiworld.WorldOptions;
import io.multiworld.WorldState;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.Test;

/** A world's own settings (mw_world_create_with) and what its events carry (mw_next_event_info). */
public class ParamsTest {
  private static final Duration FORM = Duration.ofSeconds(30);

  private static ByteBuffer ints(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder());
  }

  @Test
  public void aWorldsOpTimeoutBreaksItWhereTheContextHasNone() throws Exception {
    try (Context ctx = new Context()) {
      World w = ctx.createWorld(uniqueName("own-limit"), 0, 1, Workers.backend(), 0, FORM,
          WorldOptions.defaults().opTimeout(Duration.ofMillis(300)));
      long t0 = System.nanoTime();
      Throwable t = failure(w.recv(ints(4), 4, DataType.INT32, 0), 10);
      assertTrue(String.valueOf(t), t instanceof WorldBrokenException);
      assertTrue(t.getMessage(), t.getMessage().contains("op_timeout_ms=300"));
      assertTrue((System.nanoTime() - t0) / 1_000_000 >= 250);
      Event e = ctx.nextEvent(Duration.ofSeconds(10));
      assertNotNull("no break event", e);
      assertEquals(Event.Type.WORLD_BROKEN, e.type());
      assertEquals(w.epoch(), e.worldEpoch());
      assertNull(e.path());
      w.close();
    }
  }

  @Test
  public void anUnlimitedWorldOutlivesTheContextsOpTimeout() throws Exception {
    try (Context ctx = new Context(Config.builder().opTimeout(Duration.ofMillis(200)).build())) {
      World w = ctx.createWorld(uniqueName("no-limit"), 0, 1, Workers.backend(), 0, FORM,
          WorldOptions.defaults().noOpTimeout());
      ByteBuffer in = ints(2);
      in.putInt(0, 7).putInt(4, 8);
      ByteBuffer out = ints(2);
      CompletableFuture<Void> r = w.recv(out, 2, DataType.INT32, 0);
      Thread.sleep(600);  // three of the context's limits
      get(w.send(in, 2, DataType.INT32, 0));
      get(r);
      assertEquals(8, out.getInt(4));
      assertEquals(WorldState.READY, w.state());
      w.close();
    }
  }

  @Test
  public void failoverOnIsRefusedWhereTheContextHasItOff() {
    try (Context ctx = new Context(Config.builder().set("path_failover", "off").build())) {
      try {
        ctx.createWorld(uniqueName("on"), 0, 1, Workers.backend(), 0, FORM, WorldOptions.defaults().pathFailover(true));
        fail("failover on accepted where the context has it off");
      } catch (InvalidArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("MW_PATH_FAILOVER_ON"));
      }
      ctx.createWorld(uniqueName("off"), 0, 1, Workers.backend(), 0, FORM, WorldOptions.defaults().pathFailover(false))
          .close();
    }
  }
}
