package io.multiworld.tests;

import io.multiworld.Backend;
import io.multiworld.Context;
import io.multiworld.World;
import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Worker JVMs for the tests: the same java, class path and native library settings as this JVM
 * (and its environment, so MW_REDIS_URL from tests/with_redis.sh), running {@link Worker}.
 */
final class Workers implements AutoCloseable {
  /** The host backend the tests run on: gloo (the default) or ucx. */
  static final String BACKEND_PROPERTY = "multiworld.test.backend";

  private final List<Process> processes = new ArrayList<>();

  static Backend backend() {
    return Backend.valueOf(System.getProperty(BACKEND_PROPERTY, "gloo").toUpperCase(java.util.Locale.ROOT));
  }

  /** Creates (joins) a world on the tests' backend, waiting up to 30 s for its members. */
  static World world(Context ctx, String name, int rank, int size) {
    return world(ctx, name, rank, size, Duration.ofSeconds(30));
  }

  static World world(Context ctx, String name, int rank, int size, Duration timeout) {
    return ctx.createWorld(name, rank, size, backend(), 0, timeout);
  }

  /** A world name no other test uses. */
  static String uniqueName(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Starts {@code Worker scenario world rank size extra...}; its output goes to ours. */
  Process start(String scenario, String world, int rank, int size, String... extra) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-Xmx64m");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("-Djava.library.path=" + System.getProperty("java.library.path"));
    String jni = System.getProperty("multiworld.jni.path");
    if (jni != null) cmd.add("-Dmultiworld.jni.path=" + jni);
    cmd.add("-D" + BACKEND_PROPERTY + "=" + backend().name().toLowerCase(java.util.Locale.ROOT));
    cmd.add(Worker.class.getName());
    cmd.add(scenario);
    cmd.add(world);
    cmd.add(Integer.toString(rank));
    cmd.add(Integer.toString(size));
    for (String e : extra) cmd.add(e);
    Process p = new ProcessBuilder(cmd).inheritIO().start();
    processes.add(p);
    return p;
  }

  /** Waits for the process and returns its exit code (-1 when it is still running after the timeout). */
  static int exitCode(Process p, long seconds) throws InterruptedException {
    if (!p.waitFor(seconds, TimeUnit.SECONDS)) return -1;
    return p.exitValue();
  }

  /** SIGKILL, and waits for the process to be gone. */
  static void kill(Process p) throws InterruptedException {
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    for (Process p : processes) {
      if (p.isAlive()) p.destroyForcibly();
    }
    for (Process p : processes) {
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** future.get with a timeout, the cause of an ExecutionException rethrown as is. */
  static <T> T get(Future<T> f) throws Exception {
    return get(f, 30);
  }

  static <T> T get(Future<T> f, long seconds) throws Exception {
    try {
      return f.get(seconds, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof Exception) throw (Exception) c;
      if (c instanceof Error) throw (Error) c;
      throw e;
    }
  }

  /** The exception a future failed with (fails the test when it succeeds or times out). */
  static Throwable failure(CompletableFuture<?> f, long seconds) throws Exception {
    try {
      f.get(seconds, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    }
    throw new AssertionError("future succeeded, a failure was expected");
  }
}
