package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One connection to the control plane (Redis), with its heartbeat and watchdog, and the home of
 * {@link World}s. One per process is typical.
 *
 * <p>Each context runs two daemon threads, whatever the number of worlds and requests:
 * <ul>
 *   <li>{@code multiworld-poller-N} blocks in {@code mw_poll_info} and completes the
 *       {@code CompletableFuture}s of every world of this context as the library reports them: no
 *       timed polling, so no added latency and no CPU while idle. Dependent stages attached with
 *       the non-async methods ({@code thenApply}, {@code whenComplete}, ...) therefore run on
 *       this thread: keep them short and never block there on another future of the same
 *       context (use the {@code *Async} variants for such work).</li>
 *   <li>{@code multiworld-events-N} blocks in {@code mw_next_event_info} and hands events (a world
 *       broke, a data path went down or up, Redis went down or came back) to
 *       {@link EventListener}s and to a bounded queue, {@link #events()}; when the queue is full
 *       the oldest event is dropped.</li>
 * </ul>
 * {@link #close()} wakes both ({@code mw_context_wake}).
 *
 * <p>Thread safety: every method may be called from any thread. {@link #close()} waits for calls
 * in progress on this context and its worlds (a {@link #createWorld} blocks it until that
 * returns).
 */
public final class Context implements AutoCloseable {
  private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final AtomicInteger COUNTER = new AtomicInteger();

  private final Config config;
  private volatile long handle;
  /** Read: a native call on this context or its worlds. Write: mw_context_free. */
  final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
  private volatile boolean closing;
  private boolean closed;  // guarded by this

  private final Map<Long, World> worlds = new ConcurrentHashMap<>();
  final CompletionPoller poller;
  private final EventPump events;

  /** A context with the library's defaults (Redis from {@code MW_REDIS_URL}). */
  public Context() {
    this(Config.defaults());
  }

  /**
   * Connects to Redis and starts the heartbeat and the poller thread.
   *
   * @throws StoreException when Redis cannot be reached
   * @throws InvalidArgumentException for a bad config key or value
   */
  public Context(Config config) {
    this.config = Objects.requireNonNull(config, "config");
    long cfg = config.toNative();
    long[] out = new long[1];
    int st;
    String detail = null;
    try {
      st = Multiworld.mw_context_new(cfg, out);
      if (st != mw_status_t.MW_OK) detail = Multiworld.mw_last_error();
    } finally {
      Multiworld.mw_config_free(cfg);
    }
    if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, detail);
    handle = out[0];
    int n = COUNTER.incrementAndGet();
    poller = new CompletionPoller(this, "multiworld-poller-" + n);
    events = new EventPump(this, "multiworld-events-" + n);
    poller.start();
    events.start();
  }

  /** The config this context was created with. */
  public Config config() {
    return config;
  }

  /**
   * Creates (joins) a world on the host backend ({@link Backend#host()}: UCX where available,
   * else Gloo) and waits up to 30 seconds for every member. See
   * {@link #createWorld(String, int, int, Backend, int, Duration)}.
   */
  public World createWorld(String name, int rank, int size) {
    return createWorld(name, rank, size, Backend.host(), 0, Duration.ofSeconds(30));
  }

  /**
   * Creates (joins) a world on the host backend ({@link Backend#host()}). See
   * {@link #createWorld(String, int, int, Backend, int, Duration)}.
   */
  public World createWorld(String name, int rank, int size, Duration timeout) {
    return createWorld(name, rank, size, Backend.host(), 0, timeout);
  }

  /**
   * Creates (joins) a world: collective over its {@code size} members, so this blocks until every
   * rank joined or {@code timeout} passed. Each success is a new incarnation (epoch) of the name,
   * so a name can be created again after its previous incarnation broke.
   *
   * @param name 1..128 chars of {@code [A-Za-z0-9._:-]}
   * @param device the CUDA ordinal for {@link Backend#NCCL} (its operations take
   *     {@link DeviceBuffer}s of that device); ignored for host backends
   * @throws TimeoutException when not every member joined in time
   * @throws AlreadyExistsException when the rank is held by another live process
   * @throws InvalidArgumentException for bad arguments or members disagreeing on the size
   * @throws StoreException when Redis is down
   * @throws IllegalStateException when this context is closed
   */
  public World createWorld(String name, int rank, int size, Backend backend, int device, Duration timeout) {
    return createWorld(name, rank, size, backend, device, timeout, WorldOptions.defaults());
  }

  /**
   * {@link #createWorld(String, int, int, Backend, int, Duration)} with the world's own settings
   * ({@code mw_world_create_with}); a setting the library cannot honour is an
   * {@link InvalidArgumentException} naming it.
   */
  public World createWorld(String name, int rank, int size, Backend backend, int device, Duration timeout,
                           WorldOptions options) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(options, "options");
    Objects.requireNonNull(backend, "backend");
    int timeoutMs = (int) Math.min(Integer.MAX_VALUE, Objects.requireNonNull(timeout, "timeout").toMillis());
    if (timeout.isNegative()) throw new IllegalArgumentException("negative timeout " + timeout);
    lifecycle.readLock().lock();
    try {
      ensureOpen();
      long[] out = new long[1];
      int st = Multiworld.mwj_world_create_with(handle, name, rank, size, backend.code(), device, timeoutMs,
          options.opTimeoutMs(), options.pathFailoverCode(), out);
      if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
      return adopt(out[0], backend, device);
    } finally {
      lifecycle.readLock().unlock();
    }
  }

  /**
   * A world the library just formed (created, shrunk or grown), under {@link #lifecycle}'s read
   * lock: registered, or closed again when this context is closing.
   */
  World adopt(long h, Backend backend, int device) {
    World world = new World(this, h, Multiworld.mw_world_name(h), Multiworld.mw_world_rank(h),
        Multiworld.mw_world_size(h), backend, device, Multiworld.mw_world_epoch(h));
    worlds.put(h, world);
    events.claim(world, h);
    if (closing) {  // close() ran meanwhile and may not have seen this world
      world.close();
      throw new IllegalStateException("context closed while forming world '" + world.name() + "'");
    }
    return world;
  }

  /**
   * A snapshot of this context's metrics ({@code mw_metrics_snapshot}): every series, and the same as
   * Prometheus' text; empty with the config key {@code metrics} off.
   *
   * @throws IllegalStateException when this context is closed
   */
  public Metrics metrics() {
    lifecycle.readLock().lock();
    try {
      ensureOpen();
      return Metrics.snapshot(handle);
    } finally {
      lifecycle.readLock().unlock();
    }
  }

  /** The worlds of this context that are not closed yet. */
  public List<World> worlds() {
    return new ArrayList<>(worlds.values());
  }

  /** Adds a listener; it sees events that happen from now on (see {@link EventListener}). */
  public void addEventListener(EventListener listener) {
    events.listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  public void removeEventListener(EventListener listener) {
    events.listeners.remove(listener);
  }

  /**
   * The queue every event of this context is put in, in order (bounded: the oldest is dropped when
   * full). Take from it ({@code take()}, {@code poll(timeout, unit)}) to consume events.
   */
  public BlockingQueue<Event> events() {
    return events.queue;
  }

  /** The next event from {@link #events()}, or null when none came within {@code timeout}. */
  public Event nextEvent(Duration timeout) throws InterruptedException {
    return events.queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  public boolean isClosed() {
    return closing;
  }

  /**
   * Closes every world of this context (their pending operations fail with
   * {@link OperationCancelledException}), delivers the remaining completions and events, stops
   * both threads and frees the native context. Idempotent. Must not be called from this context's
   * own threads (a completion stage or an event listener).
   */
  @Override
  public void close() {
    if (poller.isCurrentThread() || events.isCurrentThread()) {
      throw new IllegalStateException("Context.close() called from its own poller or event thread "
          + "(a completion stage or event listener); use thenRunAsync or another thread");
    }
    synchronized (this) {
      if (closed) return;
      closed = true;
      closing = true;
    }
    RuntimeException failure = null;
    for (World w : worlds()) {
      try {
        w.close();
      } catch (RuntimeException e) {
        if (failure == null) failure = e;
      }
    }
    // Destroyed worlds complete their requests (MW_ERR_CANCELLED); let the poller deliver them.
    boolean interrupted = false;
    try {
      poller.awaitEmpty(System.nanoTime() + CLOSE_DRAIN_NANOS);
    } catch (InterruptedException e) {
      interrupted = true;
    }
    poller.stop();
    events.stop();
    Multiworld.mw_context_wake(handle);
    interrupted |= poller.join();
    interrupted |= events.join();
    List<Operation> leftover;
    lifecycle.writeLock().lock();
    try {
      long h = handle;
      leftover = poller.closeOut(h);  // nothing, normally
      for (World w : worlds()) w.markClosed();
      worlds.clear();
      handle = 0;
      Multiworld.mw_context_free(h);
    } finally {
      lifecycle.writeLock().unlock();
    }
    for (Operation op : leftover) op.finish(mw_status_t.MW_ERR_CANCELLED, "context closed");
    if (interrupted) Thread.currentThread().interrupt();
    if (failure != null) throw failure;
  }

  @Override
  public String toString() {
    return "Context[" + (closing ? "closed" : worlds.size() + " worlds") + "]";
  }

  // ---- used by World ------------------------------------------------------

  long handle() {
    return handle;
  }

  boolean isClosing() {
    return closing;
  }

  void unregister(long worldHandle, World world) {
    worlds.remove(worldHandle, world);
  }

  /** The open world with this handle and name (a handle can be reused after a destroy), or null. */
  World worldOf(long worldHandle, String name) {
    World w = worlds.get(worldHandle);
    return w != null && w.name().equals(name) ? w : null;
  }

  private void ensureOpen() {
    if (closing) throw new IllegalStateException("context is closed");
  }
}
