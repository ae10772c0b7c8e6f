package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_event_t;
import io.multiworld.swig.mw_event_type_t;
import io.multiworld.swig.mw_status_t;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One connection to the control plane (Redis), with its heartbeat and watchdog, and the home of
 * {@link World}s. One per process is typical.
 *
 * <p>Each context runs one daemon <em>poller thread</em> ({@code multiworld-poller-N}). It drains
 * the context's completion queue ({@code mw_poll}, at most {@value #POLL_MS} ms per wait, so
 * {@link #close()} can stop it) and its events ({@code mw_next_event}), and completes the
 * {@link CompletableFuture}s of every world of this context; there is no thread per request.
 * Dependent stages attached with the non-async methods ({@code thenApply}, {@code whenComplete},
 * ...) therefore run on the poller thread: keep them short and never block there on another
 * future of the same context (use the {@code *Async} variants for such work).
 *
 * <p>Events (a world broke, Redis went down or came back) go to {@link EventListener}s and to a
 * bounded queue, {@link #events()}; when the queue is full the oldest event is dropped.
 *
 * <p>Thread safety: every method may be called from any thread. {@link #close()} waits for calls
 * in progress on this context and its worlds (a {@link #createWorld} blocks it until that
 * returns).
 */
public final class Context implements AutoCloseable {
  /** The longest the poller waits in one mw_poll call. */
  static final int POLL_MS = 50;
  private static final int BATCH = 64;
  private static final int EVENT_CAPACITY = 1024;
  /** How long a WORLD_BROKEN failure waits for the event that names the peer to blame. */
  private static final long BREAK_INFO_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final AtomicInteger COUNTER = new AtomicInteger();

  /** A request in flight: its future and everything the native side may still touch. */
  private static final class Pending {
    final World world;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    final NativeBuffer first;
    final NativeBuffer second;

    Pending(World world, NativeBuffer first, NativeBuffer second) {
      this.world = world;
      this.first = first;
      this.second = second;
    }
  }

  /** A completion polled before its issuer had put the request in the table. */
  private static final class Early {
    final int status;
    final String detail;

    Early(int status, String detail) {
      this.status = status;
      this.detail = detail;
    }
  }

  /** A WORLD_BROKEN failure waiting for the break event (the peer rank). */
  private static final class Awaiting {
    final CompletableFuture<Void> future;
    final World world;
    final String detail;
    final long deadline;

    Awaiting(CompletableFuture<Void> future, World world, String detail) {
      this.future = future;
      this.world = world;
      this.detail = detail;
      this.deadline = System.nanoTime() + BREAK_INFO_WAIT_NANOS;
    }
  }

  /** Why a world broke, from its WORLD_BROKEN event. */
  static final class BreakInfo {
    final int peerRank;
    final String detail;

    BreakInfo(int peerRank, String detail) {
      this.peerRank = peerRank;
      this.detail = detail;
    }
  }

  private final Config config;
  private volatile long handle;
  /** Read: a native call on this context or its worlds. Write: mw_context_free. */
  final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
  private volatile boolean closing;
  private boolean closed;  // guarded by this

  private final Map<Long, World> worlds = new ConcurrentHashMap<>();

  // The pending-request table, keyed by the request handle the completion carries (not by
  // user_data: a completion may be polled before mw_request_set_user_data could run).
  private final Object table = new Object();
  private final Map<Long, Pending> pending = new HashMap<>();
  private final Map<Long, Early> early = new HashMap<>();

  private final ConcurrentLinkedQueue<Awaiting> awaiting = new ConcurrentLinkedQueue<>();
  // Break events of worlds the map did not hold yet (a world that broke while being registered).
  private final Map<Long, Event> unclaimedBreaks = new LinkedHashMap<>(16, 0.75f, false) {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Event> eldest) {
      return size() > 256;
    }
  };

  private final List<EventListener> listeners = new CopyOnWriteArrayList<>();
  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>(EVENT_CAPACITY);
  private final Thread poller;
  private volatile boolean stopPoller;

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
    poller = new Thread(this::pollLoop, "multiworld-poller-" + COUNTER.incrementAndGet());
    poller.setDaemon(true);
    poller.start();
  }

  /** The config this context was created with. */
  public Config config() {
    return config;
  }

  /**
   * Creates (joins) a Gloo world and waits up to 30 seconds for every member. See
   * {@link #createWorld(String, int, int, Backend, int, Duration)}.
   */
  public World createWorld(String name, int rank, int size) {
    return createWorld(name, rank, size, Backend.GLOO, 0, Duration.ofSeconds(30));
  }

  /** Creates (joins) a Gloo world. See {@link #createWorld(String, int, int, Backend, int, Duration)}. */
  public World createWorld(String name, int rank, int size, Duration timeout) {
    return createWorld(name, rank, size, Backend.GLOO, 0, timeout);
  }

  /**
   * Creates (joins) a world: collective over its {@code size} members, so this blocks until every
   * rank joined or {@code timeout} passed. Each success is a new incarnation (epoch) of the name,
   * so a name can be created again after its previous incarnation broke.
   *
   * @param name 1..128 chars of {@code [A-Za-z0-9._:-]}
   * @param device the CUDA ordinal for {@link Backend#NCCL}; ignored for Gloo
   * @throws TimeoutException when not every member joined in time
   * @throws AlreadyExistsException when the rank is held by another live process
   * @throws InvalidArgumentException for bad arguments or members disagreeing on the size
   * @throws StoreException when Redis is down
   * @throws IllegalStateException when this context is closed
   */
  public World createWorld(String name, int rank, int size, Backend backend, int device, Duration timeout) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(backend, "backend");
    int timeoutMs = (int) Math.min(Integer.MAX_VALUE, Objects.requireNonNull(timeout, "timeout").toMillis());
    if (timeout.isNegative()) throw new IllegalArgumentException("negative timeout " + timeout);
    lifecycle.readLock().lock();
    try {
      ensureOpen();
      long[] out = new long[1];
      int st = Multiworld.mw_world_create(handle, name, rank, size, backend.code(), device, timeoutMs, out);
      if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
      long h = out[0];
      World world = new World(this, h, Multiworld.mw_world_name(h), Multiworld.mw_world_rank(h),
          Multiworld.mw_world_size(h), backend, Multiworld.mw_world_epoch(h));
      worlds.put(h, world);
      synchronized (unclaimedBreaks) {
        Event e = unclaimedBreaks.remove(h);
        if (e != null && e.worldName().equals(world.name())) world.breakInfo = new BreakInfo(e.peerRank(), e.detail());
      }
      if (closing) {  // close() ran meanwhile and may not have seen this world
        world.close();
        throw new IllegalStateException("context closed while creating world '" + name + "'");
      }
      return world;
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
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  public void removeEventListener(EventListener listener) {
    listeners.remove(listener);
  }

  /**
   * The queue every event of this context is put in, in order (bounded: the oldest is dropped when
   * full). Take from it ({@code take()}, {@code poll(timeout, unit)}) to consume events.
   */
  public BlockingQueue<Event> events() {
    return events;
  }

  /** The next event from {@link #events()}, or null when none came within {@code timeout}. */
  public Event nextEvent(Duration timeout) throws InterruptedException {
    return events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  public boolean isClosed() {
    return closing;
  }

  /**
   * Closes every world of this context (their pending operations fail with
   * {@link OperationCancelledException}), delivers the remaining completions, stops the poller
   * thread and frees the native context. Idempotent. Must not be called from the poller thread
   * (a completion stage or an event listener of this context).
   */
  @Override
  public void close() {
    if (Thread.currentThread() == poller) {
      throw new IllegalStateException("Context.close() called from its own poller thread "
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
    long deadline = System.nanoTime() + CLOSE_DRAIN_NANOS;
    synchronized (table) {
      while (!pending.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) break;
        try {
          TimeUnit.NANOSECONDS.timedWait(table, Math.min(left, TimeUnit.MILLISECONDS.toNanos(POLL_MS)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    stopPoller = true;
    boolean interrupted = false;
    while (poller.isAlive()) {
      try {
        poller.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    lifecycle.writeLock().lock();
    try {
      long h = handle;
      // Whatever the poller did not deliver (nothing, normally): deliver or cancel it here.
      pollOnce(h, 0);
      List<Pending> leftover;
      List<Long> leftoverRequests;
      synchronized (table) {
        leftover = new ArrayList<>(pending.values());
        leftoverRequests = new ArrayList<>(pending.keySet());
        leftoverRequests.addAll(early.keySet());
        pending.clear();
        early.clear();
        table.notifyAll();
      }
      for (long r : leftoverRequests) Multiworld.mw_request_free(r);
      for (Pending p : leftover) {
        p.future.completeExceptionally(new OperationCancelledException("context closed"));
      }
      resolveAwaiting(true);
      for (World w : worlds()) w.markClosed();
      worlds.clear();
      handle = 0;
      Multiworld.mw_context_free(h);
    } finally {
      lifecycle.writeLock().unlock();
    }
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

  /**
   * Puts an issued request in the table; the returned future completes when mw_poll delivers it.
   * The buffers stay referenced until then, whatever happens to the future (a cancelled future
   * does not release them).
   */
  CompletableFuture<Void> track(long request, World world, NativeBuffer first, NativeBuffer second) {
    Pending p = new Pending(world, first, second);
    Early done;
    synchronized (table) {
      done = early.remove(request);
      if (done == null) pending.put(request, p);
    }
    if (done != null) {
      Multiworld.mw_request_free(request);
      finish(p, done.status, done.detail);
    }
    return p.future;
  }

  /** The future of an operation the library refused at issue time. */
  CompletableFuture<Void> failedAtIssue(World world, int status, String detail) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    fail(f, world, status, detail);
    return f;
  }

  // ---- the poller -----------------------------------------------------------

  private void pollLoop() {
    mw_event_t event = new mw_event_t();
    long[] quads = new long[4 * BATCH];
    long[] n = new long[1];
    try {
      while (!stopPoller) {
        int timeout = awaiting.isEmpty() ? POLL_MS : 5;
        int st = Multiworld.mw_poll(handle, quads, timeout, n);
        drainEvents(event);
        if (st != mw_status_t.MW_OK) {
          System.err.println("multiworld: mw_poll failed: " + Multiworld.mw_last_error());
          sleepQuietly(POLL_MS);
          continue;
        }
        for (int i = 0; i < n[0]; ++i) delivered(quads[4 * i], (int) quads[4 * i + 3]);
        resolveAwaiting(false);
      }
      drainEvents(event);
    } catch (Throwable t) {
      System.err.println("multiworld: poller thread failed: " + t);
      t.printStackTrace();
    } finally {
      event.delete();
    }
  }

  /** One mw_poll without waiting, from close() once the poller has stopped. */
  private void pollOnce(long h, int timeoutMs) {
    long[] quads = new long[4 * BATCH];
    long[] n = new long[1];
    do {
      if (Multiworld.mw_poll(h, quads, timeoutMs, n) != mw_status_t.MW_OK) return;
      for (int i = 0; i < n[0]; ++i) delivered(quads[4 * i], (int) quads[4 * i + 3]);
    } while (n[0] == BATCH);
  }

  private void delivered(long request, int status) {
    String detail = "";
    if (status != mw_status_t.MW_OK) {
      Multiworld.mw_test(request);  // leaves the request's reason as this thread's last error
      detail = Multiworld.mw_last_error();
    }
    Pending p;
    synchronized (table) {
      p = pending.remove(request);
      if (p == null) {
        early.put(request, new Early(status, detail));
        return;
      }
      if (pending.isEmpty()) table.notifyAll();
    }
    Multiworld.mw_request_free(request);
    finish(p, status, detail);
  }

  private void finish(Pending p, int status, String detail) {
    if (status == mw_status_t.MW_OK) {
      try {
        p.first.complete();
        if (p.second != p.first) p.second.complete();
      } catch (RuntimeException e) {
        p.future.completeExceptionally(e);
        return;
      }
      p.future.complete(null);
    } else {
      fail(p.future, p.world, status, detail);
    }
  }

  private void fail(CompletableFuture<Void> f, World world, int status, String detail) {
    if (status != mw_status_t.MW_ERR_WORLD_BROKEN) {
      f.completeExceptionally(MultiWorldException.of(status, detail));
      return;
    }
    BreakInfo info = world.breakInfo;
    if (info != null) {
      f.completeExceptionally(new WorldBrokenException(world, world.name(), info.peerRank, detail));
    } else {
      awaiting.add(new Awaiting(f, world, detail));  // the poller completes it once the event is in
    }
  }

  private void resolveAwaiting(boolean now) {
    if (awaiting.isEmpty()) return;
    long t = System.nanoTime();
    for (Iterator<Awaiting> it = awaiting.iterator(); it.hasNext(); ) {
      Awaiting a = it.next();
      BreakInfo info = a.world.breakInfo;
      if (info != null || now || t - a.deadline >= 0) {
        it.remove();
        a.future.completeExceptionally(
            new WorldBrokenException(a.world, a.world.name(), info == null ? -1 : info.peerRank, a.detail));
      }
    }
  }

  private void drainEvents(mw_event_t ev) {
    while (Multiworld.mw_next_event(handle, ev, 0) == mw_status_t.MW_OK) {
      Event.Type type;
      switch (ev.getType()) {
        case mw_event_type_t.MW_EVENT_WORLD_BROKEN:
          type = Event.Type.WORLD_BROKEN;
          break;
        case mw_event_type_t.MW_EVENT_STORE_DOWN:
          type = Event.Type.STORE_DOWN;
          break;
        case mw_event_type_t.MW_EVENT_STORE_UP:
          type = Event.Type.STORE_UP;
          break;
        default:
          type = Event.Type.UNKNOWN;
      }
      long wh = ev.getWorld();
      String name = ev.getWorld_name();
      World world = wh == 0 ? null : worlds.get(wh);
      if (world != null && !world.name().equals(name)) world = null;
      Event e = new Event(type, world, name, ev.getPeer_rank(), ev.getReason(), ev.getDetail());
      if (type == Event.Type.WORLD_BROKEN) {
        if (world != null) {
          world.breakInfo = new BreakInfo(e.peerRank(), e.detail());
        } else if (wh != 0) {
          synchronized (unclaimedBreaks) {
            unclaimedBreaks.put(wh, e);
          }
          world = worlds.get(wh);  // registered meanwhile?
          if (world != null && world.name().equals(name)) world.breakInfo = new BreakInfo(e.peerRank(), e.detail());
        }
      }
      while (!events.offer(e)) events.poll();
      for (EventListener l : listeners) {
        try {
          l.onEvent(e);
        } catch (RuntimeException ex) {
          System.err.println("multiworld: event listener threw " + ex);
          ex.printStackTrace();
        }
      }
    }
  }

  private void ensureOpen() {
    if (closing) throw new IllegalStateException("context is closed");
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
