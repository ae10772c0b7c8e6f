package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import io.multiworld.swig.mw_world_state_t;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A process group ("world") this process is a member of: its own communicator and its own fault
 * domain. Created by {@link Context#createWorld}.
 *
 * <p><b>Operations.</b> Every operation returns at once with a {@link CompletableFuture} that the
 * context's poller thread completes: normally, or exceptionally with a {@link MultiWorldException}
 * ({@link WorldBrokenException} when a member failed, {@link OperationCancelledException} when
 * the world was closed first, {@link InvalidArgumentException} e.g. for a recv whose size differs
 * from the send). Operations of one world run in issue order; collectives must be issued in the
 * same order on every member. Counts are in elements of the {@link DataType}, as in the C API.
 *
 * <p><b>Buffers.</b> Direct buffers are zero-copy and off-heap: the library reads and writes their
 * memory, from the buffer's position, while the operation runs; heap buffers and arrays are copied
 * (see {@link Buffers}). Do not modify a buffer until its future completed. The binding keeps
 * every buffer of an operation reachable until the library reports the operation finished, even
 * if the future was cancelled or completed by someone else meanwhile: cancelling a future does not
 * stop the operation, it only stops waiting for it.
 *
 * <p>Programming errors are thrown at once: a buffer too small for the count
 * ({@link IllegalArgumentException}), a null buffer that is needed ({@link NullPointerException}),
 * a read-only buffer to write into, an operation on a closed world ({@link IllegalStateException}).
 *
 * <p>Thread safety: any method from any thread. {@link #close()} waits for operations being
 * issued on other threads.
 */
public final class World implements AutoCloseable {
  @FunctionalInterface
  private interface Issue {
    int call(long world, long[] request);
  }

  @FunctionalInterface
  private interface TwoBufferIssue {
    int call(long world, Buffer send, Buffer recv, long[] request);
  }

  private final Context context;
  private volatile long handle;
  private final String name;
  private final int rank;
  private final int size;
  private final Backend backend;
  private final long epoch;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  /** Set by the poller from the WORLD_BROKEN event. */
  volatile Context.BreakInfo breakInfo;

  World(Context context, long handle, String name, int rank, int size, Backend backend, long epoch) {
    this.context = context;
    this.handle = handle;
    this.name = name;
    this.rank = rank;
    this.size = size;
    this.backend = backend;
    this.epoch = epoch;
  }

  public Context context() {
    return context;
  }

  public String name() {
    return name;
  }

  /** This process's rank, 0..size-1. */
  public int rank() {
    return rank;
  }

  public int size() {
    return size;
  }

  public Backend backend() {
    return backend;
  }

  /** The incarnation number of this world's name (>= 1); each creation is a new one. */
  public long epoch() {
    return epoch;
  }

  /** The state as this process knows it. */
  public WorldState state() {
    lock.readLock().lock();
    try {
      if (handle == 0) return WorldState.CLOSED;
      return Multiworld.mw_world_state(handle) == mw_world_state_t.MW_WORLD_BROKEN
          ? WorldState.BROKEN : WorldState.READY;
    } finally {
      lock.readLock().unlock();
    }
  }

  public boolean isBroken() {
    return state() == WorldState.BROKEN;
  }

  /** The member blamed for the break, once this process heard of it; -1 otherwise. */
  public int brokenPeer() {
    Context.BreakInfo info = breakInfo;
    return info == null ? -1 : info.peerRank;
  }

  /**
   * Leaves and destroys the world, in bounded time whether it is healthy or broken. Its pending
   * operations fail with {@link OperationCancelledException}; the other members see it break.
   * Idempotent.
   */
  @Override
  public void close() {
    context.lifecycle.readLock().lock();
    try {
      lock.writeLock().lock();
      try {
        long h = handle;
        if (h == 0) return;
        handle = 0;
        int st = Multiworld.mw_world_destroy(h);
        String detail = st == mw_status_t.MW_OK ? null : Multiworld.mw_last_error();
        context.unregister(h, this);
        if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, detail);
      } finally {
        lock.writeLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
  }

  /** The context freed this world (mw_context_free). */
  void markClosed() {
    lock.writeLock().lock();
    try {
      handle = 0;
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public String toString() {
    return "World['" + name + "' epoch " + epoch + ", rank " + rank + "/" + size + ", "
        + (handle == 0 ? "closed" : breakInfo != null ? "broken" : "open") + "]";
  }

  // ---- point to point ---------------------------------------------------------

  /** Sends {@code count} elements from {@code buf} (from its position) to rank {@code dst}. */
  public CompletableFuture<Void> send(Buffer buf, long count, DataType type, int dst) {
    NativeBuffer b = NativeBuffer.of(buf, bytes(count, type, 1), true, false, "send buffer");
    return issue((w, r) -> Multiworld.mw_send_async(w, b.address, count, type.code(), dst, r), b, b);
  }

  /**
   * Receives {@code count} elements from rank {@code src} into {@code buf}. The byte size must
   * equal the send's, else the future fails with {@link InvalidArgumentException} naming both
   * (the world stays usable).
   */
  public CompletableFuture<Void> recv(Buffer buf, long count, DataType type, int src) {
    NativeBuffer b = NativeBuffer.of(buf, bytes(count, type, 1), false, true, "recv buffer");
    return issue((w, r) -> Multiworld.mw_recv_async(w, b.address, count, type.code(), src, r), b, b);
  }

  // ---- collectives ---------------------------------------------------------------

  /** {@code count} elements of root's {@code buf} into everyone's {@code buf}. */
  public CompletableFuture<Void> broadcast(Buffer buf, long count, DataType type, int root) {
    NativeBuffer b = NativeBuffer.of(buf, bytes(count, type, 1), rank == root, rank != root, "broadcast buffer");
    return issue((w, r) -> Multiworld.mw_broadcast_async(w, b.address, count, type.code(), root, r), b, b);
  }

  /** Reduces {@code count} elements of every member's {@code send} into everyone's {@code recv}. In place when they are the same object. */
  public CompletableFuture<Void> allreduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return twoBuffers("allreduce", send, recv, count, type, 1, 1, false,
        (w, s, d, r) -> Multiworld.mw_allreduce_async(w, s, d, count, type.code(), op.code(), r));
  }

  /** Like {@link #allreduce} with the result in root's {@code recv} only; {@code recv} may be null elsewhere. */
  public CompletableFuture<Void> reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
    Objects.requireNonNull(op, "op");
    return twoBuffers("reduce", send, recv, count, type, 1, rank == root ? 1 : 0, false,
        (w, s, d, r) -> Multiworld.mw_reduce_async(w, s, d, count, type.code(), op.code(), root, r));
  }

  /** Everyone's {@code sendCount} elements into everyone's {@code recv}, rank-major ({@code size * sendCount} elements). */
  public CompletableFuture<Void> allgather(Buffer send, Buffer recv, long sendCount, DataType type) {
    return twoBuffers("allgather", send, recv, sendCount, type, 1, size, true,
        (w, s, d, r) -> Multiworld.mw_allgather_async(w, s, d, sendCount, type.code(), r));
  }

  /** Like {@link #allgather} into root's {@code recv} only; {@code recv} may be null elsewhere. */
  public CompletableFuture<Void> gather(Buffer send, Buffer recv, long sendCount, DataType type, int root) {
    return twoBuffers("gather", send, recv, sendCount, type, 1, rank == root ? size : 0, true,
        (w, s, d, r) -> Multiworld.mw_gather_async(w, s, d, sendCount, type.code(), root, r));
  }

  /** Block j of root's {@code send} ({@code size * recvCount} elements) to rank j's {@code recv}; {@code send} may be null off root. */
  public CompletableFuture<Void> scatter(Buffer send, Buffer recv, long recvCount, DataType type, int root) {
    return twoBuffers("scatter", send, recv, recvCount, type, rank == root ? size : 0, 1, false,
        (w, s, d, r) -> Multiworld.mw_scatter_async(w, s, d, recvCount, type.code(), root, r));
  }

  /** Reduces everyone's {@code send} ({@code size * recvCount} elements); this rank gets block {@code rank} in {@code recv}. */
  public CompletableFuture<Void> reduceScatter(Buffer send, Buffer recv, long recvCount, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return twoBuffers("reduce_scatter", send, recv, recvCount, type, size, 1, false,
        (w, s, d, r) -> Multiworld.mw_reduce_scatter_async(w, s, d, recvCount, type.code(), op.code(), r));
  }

  /** Block j of {@code send} goes to rank j; both hold {@code size * count} elements. */
  public CompletableFuture<Void> alltoall(Buffer send, Buffer recv, long count, DataType type) {
    return twoBuffers("alltoall", send, recv, count, type, size, size, false,
        (w, s, d, r) -> Multiworld.mw_alltoall_async(w, s, d, count, type.code(), r));
  }

  /** Completes once every member reached it. */
  public CompletableFuture<Void> barrier() {
    return issue(Multiworld::mw_barrier_async, NativeBuffer.NONE, NativeBuffer.NONE);
  }

  // ---- heap arrays: copied, count and type from the array ---------------------------------

  /** Sends the whole array (copied). */
  public CompletableFuture<Void> send(float[] data, int dst) {
    return send(FloatBuffer.wrap(data), data.length, DataType.FLOAT32, dst);
  }

  public CompletableFuture<Void> send(double[] data, int dst) {
    return send(DoubleBuffer.wrap(data), data.length, DataType.FLOAT64, dst);
  }

  public CompletableFuture<Void> send(int[] data, int dst) {
    return send(IntBuffer.wrap(data), data.length, DataType.INT32, dst);
  }

  public CompletableFuture<Void> send(long[] data, int dst) {
    return send(LongBuffer.wrap(data), data.length, DataType.INT64, dst);
  }

  public CompletableFuture<Void> send(byte[] data, int dst) {
    return send(ByteBuffer.wrap(data), data.length, DataType.UINT8, dst);
  }

  /** Receives into the whole array (through a copy, written back on success). */
  public CompletableFuture<Void> recv(float[] data, int src) {
    return recv(FloatBuffer.wrap(data), data.length, DataType.FLOAT32, src);
  }

  public CompletableFuture<Void> recv(double[] data, int src) {
    return recv(DoubleBuffer.wrap(data), data.length, DataType.FLOAT64, src);
  }

  public CompletableFuture<Void> recv(int[] data, int src) {
    return recv(IntBuffer.wrap(data), data.length, DataType.INT32, src);
  }

  public CompletableFuture<Void> recv(long[] data, int src) {
    return recv(LongBuffer.wrap(data), data.length, DataType.INT64, src);
  }

  public CompletableFuture<Void> recv(byte[] data, int src) {
    return recv(ByteBuffer.wrap(data), data.length, DataType.UINT8, src);
  }

  /** Broadcasts the whole array from root (copied). */
  public CompletableFuture<Void> broadcast(float[] data, int root) {
    return broadcast(FloatBuffer.wrap(data), data.length, DataType.FLOAT32, root);
  }

  public CompletableFuture<Void> broadcast(double[] data, int root) {
    return broadcast(DoubleBuffer.wrap(data), data.length, DataType.FLOAT64, root);
  }

  public CompletableFuture<Void> broadcast(int[] data, int root) {
    return broadcast(IntBuffer.wrap(data), data.length, DataType.INT32, root);
  }

  public CompletableFuture<Void> broadcast(long[] data, int root) {
    return broadcast(LongBuffer.wrap(data), data.length, DataType.INT64, root);
  }

  public CompletableFuture<Void> broadcast(byte[] data, int root) {
    return broadcast(ByteBuffer.wrap(data), data.length, DataType.UINT8, root);
  }

  /** Allreduce over whole arrays (copied; the same array for both is in place). */
  public CompletableFuture<Void> allreduce(float[] send, float[] recv, ReduceOp op) {
    FloatBuffer s = FloatBuffer.wrap(send);
    return allreduce(s, send == recv ? s : FloatBuffer.wrap(recv), send.length, DataType.FLOAT32, op);
  }

  public CompletableFuture<Void> allreduce(double[] send, double[] recv, ReduceOp op) {
    DoubleBuffer s = DoubleBuffer.wrap(send);
    return allreduce(s, send == recv ? s : DoubleBuffer.wrap(recv), send.length, DataType.FLOAT64, op);
  }

  public CompletableFuture<Void> allreduce(int[] send, int[] recv, ReduceOp op) {
    IntBuffer s = IntBuffer.wrap(send);
    return allreduce(s, send == recv ? s : IntBuffer.wrap(recv), send.length, DataType.INT32, op);
  }

  public CompletableFuture<Void> allreduce(long[] send, long[] recv, ReduceOp op) {
    LongBuffer s = LongBuffer.wrap(send);
    return allreduce(s, send == recv ? s : LongBuffer.wrap(recv), send.length, DataType.INT64, op);
  }

  // ---- plumbing ----------------------------------------------------------------------

  private static long bytes(long count, DataType type, long blocks) {
    Objects.requireNonNull(type, "type");
    if (count < 0) throw new IllegalArgumentException("negative count " + count);
    return Math.multiplyExact(Math.multiplyExact(count, (long) type.size()), blocks);
  }

  /**
   * Prepares a (send, recv) pair; {@code sendBlocks}/{@code recvBlocks} are the buffer sizes on
   * this rank in multiples of {@code count} (0: not used here, may be null). The same object for
   * both is in place.
   */
  private CompletableFuture<Void> twoBuffers(String op, Buffer send, Buffer recv, long count, DataType type,
      long sendBlocks, long recvBlocks, boolean gathers, TwoBufferIssue call) {
    long sendBytes = bytes(count, type, sendBlocks);
    long recvBytes = bytes(count, type, recvBlocks);
    NativeBuffer s;
    NativeBuffer d;
    if (send != null && send == recv) {
      long need = Math.max(sendBytes, recvBytes);
      if (gathers) need = Math.max(need, bytes(count, type, size));  // this rank's block of recv
      s = d = NativeBuffer.of(send, need, true, true, op + " buffer (in place)");
    } else {
      s = sendBlocks == 0 ? NativeBuffer.NONE : NativeBuffer.of(send, sendBytes, true, false, op + " send buffer");
      d = recvBlocks == 0 ? NativeBuffer.NONE : NativeBuffer.of(recv, recvBytes, false, true, op + " recv buffer");
    }
    return issue((w, r) -> call.call(w, s.address, d.address, r), s, d);
  }

  private CompletableFuture<Void> issue(Issue issue, NativeBuffer first, NativeBuffer second) {
    context.lifecycle.readLock().lock();
    try {
      lock.readLock().lock();
      try {
        long h = handle;
        if (h == 0 || context.isClosing()) throw new IllegalStateException(this + " is closed");
        long[] request = new long[1];
        int st = issue.call(h, request);
        if (st != mw_status_t.MW_OK) return context.failedAtIssue(this, st, Multiworld.mw_last_error());
        return context.track(request[0], this, first, second);
      } finally {
        lock.readLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
  }
}
