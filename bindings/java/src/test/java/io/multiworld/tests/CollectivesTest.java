package io.multiworld.tests;

import static io.multiworld.tests.Workers.uniqueName;
import static org.junit.Assert.assertEquals;

import io.multiworld.Context;
import io.multiworld.World;
import org.junit.Test;

/**
 * Every collective on a world of three processes: this JVM (rank 0) and two worker JVMs; each
 * member checks its own results (see {@link Scenarios#collectives}).
 */
public class CollectivesTest {
  @Test
  public void everyCollectiveOnThreeProcesses() throws Exception {
    String name = uniqueName("coll");
    try (Workers workers = new Workers(); Context ctx = new Context()) {
      Process one = workers.start("collectives", name, 1, 3);
      Process two = workers.start("collectives", name, 2, 3);
      try (World w = Workers.world(ctx, name, 0, 3)) {
        assertEquals(3, w.size());
        Scenarios.collectives(w);
      }
      assertEquals("rank 1 exit code", 0, Workers.exitCode(one, 60));
      assertEquals("rank 2 exit code", 0, Workers.exitCode(two, 60));
    }
  }
}
