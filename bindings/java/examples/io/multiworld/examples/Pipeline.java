package io.multiworld.examples;

import io.multiworld.Backend;
import io.multiworld.Buffers;
import io.multiworld.Context;
import io.multiworld.DataType;
import io.multiworld.Event;
import io.multiworld.MultiWorldException;
import io.multiworld.World;
import io.multiworld.WorldBrokenException;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A 3-process serving pipeline that keeps serving when a worker is killed.
 *
 * <p>A frontend holds one two-member world per worker ({@code PREFIX-w1}, {@code PREFIX-w2}) and
 * sends each request to a live worker, which transforms it and sends it back. When a worker dies,
 * only its world breaks: the request in flight fails with {@link WorldBrokenException}, the
 * frontend retries it on the other worker, and keeps re-creating the broken world in the
 * background so a restarted worker is admitted again (a new incarnation of the name).
 *
 * <pre>
 *   Pipeline                         the demo: starts both workers as child JVMs, serves 120
 *                                    requests, kills worker 2 (SIGKILL) after 40, restarts it
 *                                    after 80, prints "pipeline: OK ..." and exits 0
 *   Pipeline frontend PREFIX N       a frontend serving N requests (run the workers yourself)
 *   Pipeline worker PREFIX I         worker I (1 or 2)
 * </pre>
 * The worlds use UCX where the library has it, else Gloo ({@link Backend#host()}). Redis comes
 * from {@code MW_REDIS_URL} (default redis://127.0.0.1:6379). Run with only
 * {@code java -cp multiworld-examples.jar:multiworld.jar -Djava.library.path=DIR}.
 */
public final class Pipeline {
  static final int WIDTH = 256;  // floats per request
  static final int BYTES = 4 + 4 * WIDTH;  // int id, then the payload
  static final Duration FORM_TIMEOUT = Duration.ofSeconds(60);
  /** UCX where available (TCP, or RDMA where present), else Gloo. */
  static final Backend BACKEND = Backend.host();

  private Pipeline() {}

  public static void main(String[] args) throws Exception {
    String mode = args.length > 0 ? args[0] : "demo";
    switch (mode) {
      case "demo":
        System.exit(demo());
        break;
      case "frontend":
        try (Frontend f = new Frontend(args[1])) {
          System.exit(f.serve(Integer.parseInt(args[2]), null) ? 0 : 1);
        }
        break;
      case "worker":
        System.exit(worker(args[1], Integer.parseInt(args[2])));
        break;
      default:
        System.err.println("usage: Pipeline [demo | frontend PREFIX N | worker PREFIX I]");
        System.exit(2);
    }
  }

  // ---- worker ----------------------------------------------------------------

  /** Serves requests until the frontend says stop (id < 0) or goes away. */
  static int worker(String prefix, int index) {
    String tag = "worker " + index + " (pid " + ProcessHandle.current().pid() + ")";
    try (Context ctx = new Context();
         World world = ctx.createWorld(prefix + "-w" + index, 1, 2, BACKEND, 0, FORM_TIMEOUT)) {
      System.out.println(tag + ": joined " + world.name() + " epoch " + world.epoch() + " on " + BACKEND);
      ByteBuffer in = Buffers.allocate(BYTES, DataType.UINT8);  // direct: zero-copy
      ByteBuffer out = Buffers.allocate(BYTES, DataType.UINT8);
      FloatBuffer x = in.duplicate().position(4).slice().order(in.order()).asFloatBuffer();
      FloatBuffer y = out.duplicate().position(4).slice().order(out.order()).asFloatBuffer();
      int served = 0;
      while (true) {
        world.recv(in, BYTES, DataType.UINT8, 0).get();
        int id = in.getInt(0);
        if (id < 0) break;
        for (int i = 0; i < WIDTH; ++i) y.put(i, 2 * x.get(i) + id);  // the "model"
        out.putInt(0, id);
        Thread.sleep(5);  // pretend it takes a while
        world.send(out, BYTES, DataType.UINT8, 0).get();
        ++served;
      }
      System.out.println(tag + ": served " + served + ", stopping");
      return 0;
    } catch (ExecutionException e) {
      System.out.println(tag + ": " + e.getCause().getMessage());
      return e.getCause() instanceof WorldBrokenException ? 0 : 1;
    } catch (Exception e) {
      System.out.println(tag + ": " + e);
      return 1;
    }
  }

  // ---- frontend -----------------------------------------------------------------

  /** One worker slot: its world when admitted, re-created in the background after a break. */
  static final class Slot {
    final int index;
    volatile World world;
    int served;

    Slot(int index) {
      this.index = index;
    }
  }

  static final class Frontend implements AutoCloseable {
    final String prefix;
    final Context ctx = new Context();
    final Slot[] slots = {new Slot(1), new Slot(2)};
    final List<Thread> admitters = new ArrayList<>();
    volatile boolean closing;
    final ByteBuffer request = Buffers.allocate(BYTES, DataType.UINT8);
    final ByteBuffer reply = Buffers.allocate(BYTES, DataType.UINT8);
    int next;

    Frontend(String prefix) {
      this.prefix = prefix;
      ctx.addEventListener(e -> {
        if (e.type() == Event.Type.WORLD_BROKEN) {
          System.out.println("frontend: event: world " + e.worldName() + " broke, peer " + e.peerRank());
        }
      });
      for (Slot s : slots) admit(s);
    }

    /** Creates the slot's world in the background, retrying until a worker joins. */
    void admit(Slot slot) {
      Thread t = new Thread(() -> {
        while (!closing) {
          try {
            World w = ctx.createWorld(prefix + "-w" + slot.index, 0, 2, BACKEND, 0, Duration.ofSeconds(2));
            System.out.println("frontend: worker " + slot.index + " admitted (epoch " + w.epoch() + ")");
            slot.world = w;
            return;
          } catch (MultiWorldException | IllegalStateException e) {
            // nobody joined yet (TimeoutException), or closing
          }
        }
      }, "admit-" + slot.index);
      t.setDaemon(true);
      admitters.add(t);
      t.start();
    }

    Slot pick() throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (System.nanoTime() < deadline) {
        for (int k = 0; k < slots.length; ++k) {
          Slot s = slots[(next + k) % slots.length];
          if (s.world != null) {
            next = (next + k + 1) % slots.length;
            return s;
          }
        }
        Thread.sleep(10);
      }
      throw new IllegalStateException("no worker for 60 s");
    }

    /** Serves n requests; {@code hook} runs before each (the demo kills and restarts workers there). */
    boolean serve(int n, java.util.function.IntConsumer hook) throws Exception {
      int retries = 0;
      for (int id = 0; id < n; ++id) {
        if (hook != null) hook.accept(id);
        FloatBuffer x = request.duplicate().position(4).slice().order(request.order()).asFloatBuffer();
        for (int i = 0; i < WIDTH; ++i) x.put(i, i * 0.5f);
        request.putInt(0, id);
        while (true) {
          Slot s = pick();
          World w = s.world;
          try {
            CompletableFuture<Void> back = w.recv(reply, BYTES, DataType.UINT8, 1);
            CompletableFuture.allOf(w.send(request, BYTES, DataType.UINT8, 1), back).get(30, TimeUnit.SECONDS);
            check(id);
            s.served++;
            break;
          } catch (ExecutionException e) {
            if (!(e.getCause() instanceof WorldBrokenException)) throw e;
            WorldBrokenException b = (WorldBrokenException) e.getCause();
            System.out.println("frontend: request " + id + " failed on worker " + s.index + " ("
                + b.getMessage() + "); retrying on another worker");
            ++retries;
            s.world = null;
            w.close();
            admit(s);
          }
        }
      }
      System.out.println("frontend: served " + n + " requests (worker 1: " + slots[0].served
          + ", worker 2: " + slots[1].served + ", retried " + retries + ")");
      return true;
    }

    void check(int id) {
      if (reply.getInt(0) != id) throw new IllegalStateException("reply for " + reply.getInt(0) + ", expected " + id);
      FloatBuffer y = reply.duplicate().position(4).slice().order(reply.order()).asFloatBuffer();
      for (int i = 0; i < WIDTH; ++i) {
        if (y.get(i) != 2 * (i * 0.5f) + id) throw new IllegalStateException("wrong reply to request " + id);
      }
    }

    /** Tells live workers to stop. */
    void stopWorkers() {
      for (Slot s : slots) {
        World w = s.world;
        if (w == null) continue;
        request.putInt(0, -1);
        try {
          w.send(request, BYTES, DataType.UINT8, 1).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
          System.out.println("frontend: could not stop worker " + s.index + ": " + e);
        }
      }
    }

    @Override
    public void close() {
      closing = true;
      for (Thread t : admitters) {
        try {
          t.join(5000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      ctx.close();
    }
  }

  // ---- demo ------------------------------------------------------------------------

  static Process spawnWorker(String prefix, int index) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("-Djava.library.path=" + System.getProperty("java.library.path"));
    String jni = System.getProperty("multiworld.jni.path");
    if (jni != null) cmd.add("-Dmultiworld.jni.path=" + jni);
    cmd.add(Pipeline.class.getName());
    cmd.add("worker");
    cmd.add(prefix);
    cmd.add(Integer.toString(index));
    return new ProcessBuilder(cmd).inheritIO().start();
  }

  static int demo() throws Exception {
    final int total = 120;
    String prefix = "pipeline-" + UUID.randomUUID().toString().substring(0, 8);
    Process[] workers = {spawnWorker(prefix, 1), spawnWorker(prefix, 2)};
    boolean ok;
    Slot w2;
    try (Frontend f = new Frontend(prefix)) {
      w2 = f.slots[1];
      int[] servedByW2BeforeRestart = {0};
      ok = f.serve(total, id -> {
        try {
          if (id == 40) {
            System.out.println("frontend: killing worker 2 (pid " + workers[1].pid() + ") with SIGKILL");
            workers[1].destroyForcibly().waitFor();
          } else if (id == 80) {
            servedByW2BeforeRestart[0] = w2.served;
            System.out.println("frontend: restarting worker 2");
            workers[1] = spawnWorker(prefix, 2);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (w2.world == null && System.nanoTime() < deadline) Thread.sleep(10);
          }
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      ok &= w2.served > servedByW2BeforeRestart[0];  // the restarted worker served again
      f.stopWorkers();
    }
    for (Process p : workers) {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        ok = false;
      } else if (p.exitValue() != 0) {
        ok = false;
      }
    }
    System.out.println(ok ? "pipeline: OK, " + total + " requests served while worker 2 was killed and restarted"
        : "pipeline: FAILED");
    return ok ? 0 : 1;
  }
}
