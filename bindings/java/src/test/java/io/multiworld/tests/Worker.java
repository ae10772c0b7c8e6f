package io.multiworld.tests;

import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.World;
import io.multiworld.WorldBrokenException;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.time.Duration;

/**
 * A worker process of the tests: {@code Worker SCENARIO WORLD RANK SIZE [extra]}. Joins the world,
 * plays its part and exits 0, or prints the failure and exits 1.
 */
public final class Worker {
  private Worker() {}

  public static void main(String[] args) {
    String scenario = args[0];
    String name = args[1];
    int rank = Integer.parseInt(args[2]);
    int size = Integer.parseInt(args[3]);
    int rc = 0;
    try (Context ctx = new Context();
         World world = Workers.world(ctx, name, rank, size, Duration.ofSeconds(60))) {
      switch (scenario) {
        case "echo":
          echo(world, 0);
          break;
        case "mismatch":
          // Sends 2 ints where rank 0 expects 1 (only the recv fails, with INVALID_ARGUMENT; the
          // send completes as in MPI), then serves as an echo peer.
          Workers.get(world.send(new int[] {7, 8}, 0));
          System.out.println("worker: mismatched send completed");
          echo(world, 0);
          break;
        case "idle":
          Thread.sleep(120_000);  // until killed
          break;
        case "collectives":
          Scenarios.collectives(world);
          break;
        case "elastic-survivor":
          ResizeTest.summed(world);
          ResizeTest.fence(world);
          try (World shrunk = ResizeTest.afterTheKill(ctx, world);
               World grown = shrunk.grow(3, Duration.ofSeconds(60))) {
            ResizeTest.summed(grown);
            Workers.get(grown.barrier(), 60);
          }
          break;
        case "elastic-victim":
          ResizeTest.summed(world);
          ResizeTest.fence(world);
          Thread.sleep(120_000);  // until killed
          break;
        case "elastic-newcomer":
          ResizeTest.summed(world);
          Workers.get(world.barrier(), 60);
          break;
        default:
          throw new IllegalArgumentException("unknown scenario " + scenario);
      }
    } catch (Throwable t) {
      System.err.println("worker " + scenario + " rank " + rank + " failed:");
      t.printStackTrace();
      rc = 1;
    }
    System.exit(rc);
  }

  /**
   * Echo peer: receives a length n (int), then n floats, and sends them back plus one; n < 0 ends.
   * Direct buffers on this side.
   */
  static void echo(World world, int peer) throws Exception {
    ByteBuffer header = Buffers.allocate(1, DataType.INT32);
    IntBuffer n = header.asIntBuffer();
    while (true) {
      try {
        Workers.get(world.recv(header, 1, DataType.INT32, peer), 60);
      } catch (WorldBrokenException e) {
        return;  // the peer left
      }
      int count = n.get(0);
      if (count < 0) return;
      ByteBuffer data = Buffers.allocate(count, DataType.FLOAT32);
      Workers.get(world.recv(data, count, DataType.FLOAT32, peer));
      FloatBuffer f = data.asFloatBuffer();
      for (int i = 0; i < count; ++i) f.put(i, f.get(i) + 1);
      Workers.get(world.send(data, count, DataType.FLOAT32, peer));
    }
  }

  /** The other side of {@link #echo}: sends data and returns the reply (data + 1). */
  static float[] echoRoundTrip(World world, int peer, float[] data) throws Exception {
    Workers.get(world.send(new int[] {data.length}, peer));
    float[] reply = new float[data.length];
    java.util.concurrent.CompletableFuture<Void> r = world.recv(reply, peer);
    Workers.get(world.send(data, peer));
    Workers.get(r);
    return reply;
  }

  static void stopEcho(World world, int peer) throws Exception {
    Workers.get(world.send(new int[] {-1}, peer));
  }
}
