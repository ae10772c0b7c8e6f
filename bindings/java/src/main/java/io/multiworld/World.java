package io.multiworld;

import static io.multiworld.WorldIssuer.bytes;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_op_kind_t;
import io.multiworld.swig.mw_shrink_flags_t;
import io.multiworld.swig.mw_status_t;
import io.multiworld.swig.mw_world_state_t;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.time.Duration;
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
 * <p><b>Memory.</b> Host worlds ({@link Backend#UCX}, {@link Backend#GLOO}) take
 * {@link java.nio.Buffer}s and arrays: direct buffers are zero-copy and off-heap, the library
 * reads and writes their memory, from the buffer's position, while the operation runs; heap
 * buffers and arrays are copied (see {@link Buffers}). NCCL worlds take {@link DeviceBuffer}s of
 * the world's {@link #device()}; a completed future means the result is on the device, ready for
 * any later CUDA work (see {@link DeviceBuffer}). Handing host memory to an NCCL world, or device
 * memory to a host world, throws {@link IllegalArgumentException} saying so. Do not modify a
 * buffer until its future completed. The binding keeps every buffer of an operation reachable
 * (and a {@link DeviceBuffer}'s allocation alive) until the library reports the operation
 * finished, even if the future was cancelled or completed by someone else meanwhile.
 *
 * <p><b>Cancel.</b> {@code cancel()} on the future an operation returned stops the operation
 * ({@code mw_request_cancel}): a receive that no message matched yet is taken back and the world
 * stays usable (on UCX worlds); anything else (any operation already moving data, every
 * collective, and on Gloo and NCCL worlds every operation) breaks the world, which the other
 * members then hear. Either way nothing is written to the caller's array or heap buffer once
 * {@code cancel()} returned true; a direct or device buffer may still be written until
 * {@link #released(CompletableFuture)} completes. Cancelling a dependent stage
 * ({@code thenApply(...)}) does not cancel the operation.
 *
 * <p>Programming errors are thrown at once: a buffer too small for the count
 * ({@link IllegalArgumentException}), a null buffer that is needed ({@link NullPointerException}),
 * a read-only buffer to write into, an operation on a closed world or with a closed
 * {@link DeviceBuffer} ({@link IllegalStateException}).
 *
 * <p>Thread safety: any method from any thread. {@link #close()} waits for operations being
 * issued on other threads.
 */
public final class World implements AutoCloseable {
  private final Context context;
  private volatile long handle;
  private final String name;
  private final int rank;
  private final int size;
  private final Backend backend;
  private final int device;
  private final long epoch;
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final WorldIssuer issuer = new WorldIssuer(this);
  /** Who broke this world, from its WORLD_BROKEN event. */
  final BreakNotice notice = new BreakNotice(this);

  World(Context context, long handle, String name, int rank, int size, Backend backend, int device, long epoch) {
    this.context = context;
    this.handle = handle;
    this.name = name;
    this.rank = rank;
    this.size = size;
    this.backend = backend;
    this.device = device;
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

  /** The CUDA device of an NCCL world (its operations take {@link DeviceBuffer}s of it). */
  public int device() {
    return device;
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
      int s = Multiworld.mw_world_state(handle);
      if (s == mw_world_state_t.MW_WORLD_RETIRED) return WorldState.RETIRED;
      return s == mw_world_state_t.MW_WORLD_BROKEN ? WorldState.BROKEN : WorldState.READY;
    } finally {
      lock.readLock().unlock();
    }
  }

  public boolean isBroken() {
    return state() == WorldState.BROKEN;
  }

  /** The member blamed for the break, once this process heard of it; -1 otherwise. */
  public int brokenPeer() {
    return notice.peerRank();
  }

  /** What {@link #shrink} does with operations still pending ({@code mw_shrink_flags_t}). */
  public enum ShrinkMode {
    /** The world must be ready with nothing pending. */
    DEFAULT,
    /**
     * Pending operations first fail with {@link OperationCancelledException}; the mode for a broken
     * world.
     */
    ABORT
  }

  /**
   * The world without the members {@code exclude} (ranks of this world; {@code null}: exactly those
   * its break named), as its successor ({@code mw_world_shrink}): the same name, the next epoch,
   * the survivors in their order renumbered from 0. Every survivor calls it with the same list.
   * This world is retired afterwards ({@link WorldState#RETIRED}); close it.
   *
   * @throws InvalidArgumentException for a bad rank, or a list that differs from the other
   *     survivors' (the message names both)
   * @throws WorldBrokenException when this member is excluded, or a member died meanwhile
   * @throws TimeoutException when a survivor did not come in time
   */
  public World shrink(int[] exclude, ShrinkMode mode, Duration timeout) {
    int flags = mode == ShrinkMode.ABORT ? mw_shrink_flags_t.MW_SHRINK_ABORT : mw_shrink_flags_t.MW_SHRINK_DEFAULT;
    int ms = timeoutMs(timeout);
    return resized((h, out) -> Multiworld.mw_world_shrink(h, exclude, flags, ms, out));
  }

  /**
   * This world with {@code newSize} members, as its successor ({@code mw_world_grow}): every member
   * calls it and keeps its rank; each newcomer calls {@link Context#createWorld} with the world's
   * name, {@code newSize} and a rank from {@link #size()} up. This world is retired afterwards.
   *
   * @throws TimeoutException when a newcomer did not come in time; this world runs on
   * @throws InvalidArgumentException when {@code newSize} is not above the size
   */
  public World grow(int newSize, Duration timeout) {
    int ms = timeoutMs(timeout);
    return resized((h, out) -> Multiworld.mw_world_grow(h, newSize, ms, out));
  }

  private interface Resize {
    int call(long handle, long[] out);
  }

  private static int timeoutMs(Duration timeout) {
    if (Objects.requireNonNull(timeout, "timeout").isNegative()) {
      throw new IllegalArgumentException("negative timeout " + timeout);
    }
    return (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
  }

  private World resized(Resize resize) {
    context.lifecycle.readLock().lock();
    try {
      lock.readLock().lock();
      try {
        if (handle == 0) throw new IllegalStateException("world '" + name + "' is closed");
        long[] out = new long[1];
        int st = resize.call(handle, out);
        if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
        return context.adopt(out[0], backend, device);
      } finally {
        lock.readLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
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
        notice.closed();
        if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, detail);
      } finally {
        lock.writeLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
  }

  /** The native handle, 0 once closed; read it under {@link #lock}'s read lock. */
  long handle() {
    return handle;
  }

  ReentrantReadWriteLock lock() {
    return lock;
  }

  /** The context freed this world (mw_context_free). */
  void markClosed() {
    lock.writeLock().lock();
    try {
      handle = 0;
    } finally {
      lock.writeLock().unlock();
    }
    notice.closed();
  }

  @Override
  public String toString() {
    return "World['" + name + "' epoch " + epoch + ", rank " + rank + "/" + size + ", "
        + backend + (handle == 0 ? ", closed" : notice.peerRank() >= 0 ? ", broken" : "") + "]";
  }

  // ---- point to point, host memory ---------------------------------------------

  /** Sends {@code count} elements from {@code buf} (from its position) to rank {@code dst}. */
  public CompletableFuture<Void> send(Buffer buf, long count, DataType type, int dst) {
    NativeBuffer b = issuer.host(buf, bytes(count, type, 1), true, false, "send buffer");
    return issuer.submitHost(mw_op_kind_t.MW_OP_SEND, b, NativeBuffer.NONE, count, type, null, dst);
  }

  /**
   * Receives {@code count} elements from rank {@code src} into {@code buf}. The byte size must
   * equal the send's, else the future fails with {@link InvalidArgumentException} naming both
   * (the world stays usable).
   */
  public CompletableFuture<Void> recv(Buffer buf, long count, DataType type, int src) {
    NativeBuffer b = issuer.host(buf, bytes(count, type, 1), false, true, "recv buffer");
    return issuer.submitHost(mw_op_kind_t.MW_OP_RECV, NativeBuffer.NONE, b, count, type, null, src);
  }

  // ---- collectives, host memory ----------------------------------------------------

  /** {@code count} elements of root's {@code buf} into everyone's {@code buf}. */
  public CompletableFuture<Void> broadcast(Buffer buf, long count, DataType type, int root) {
    NativeBuffer b = issuer.host(buf, bytes(count, type, 1), rank == root, rank != root, "broadcast buffer");
    return issuer.submitHost(mw_op_kind_t.MW_OP_BROADCAST, NativeBuffer.NONE, b, count, type, null, root);
  }

  /** Reduces {@code count} elements of every member's {@code send} into everyone's {@code recv}. In place when they are the same object. */
  public CompletableFuture<Void> allreduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return issuer.twoHost(mw_op_kind_t.MW_OP_ALLREDUCE, "allreduce", send, recv, count, type, 1, 1, false, op, -1);
  }

  /** Like {@link #allreduce} with the result in root's {@code recv} only; {@code recv} may be null elsewhere. */
  public CompletableFuture<Void> reduce(Buffer send, Buffer recv, long count, DataType type, ReduceOp op, int root) {
    Objects.requireNonNull(op, "op");
    return issuer.twoHost(mw_op_kind_t.MW_OP_REDUCE, "reduce", send, recv, count, type, 1, rank == root ? 1 : 0, false, op, root);
  }

  /** Everyone's {@code sendCount} elements into everyone's {@code recv}, rank-major ({@code size * sendCount} elements). */
  public CompletableFuture<Void> allgather(Buffer send, Buffer recv, long sendCount, DataType type) {
    return issuer.twoHost(mw_op_kind_t.MW_OP_ALLGATHER, "allgather", send, recv, sendCount, type, 1, size, true, null, -1);
  }

  /** Like {@link #allgather} into root's {@code recv} only; {@code recv} may be null elsewhere. */
  public CompletableFuture<Void> gather(Buffer send, Buffer recv, long sendCount, DataType type, int root) {
    return issuer.twoHost(mw_op_kind_t.MW_OP_GATHER, "gather", send, recv, sendCount, type, 1, rank == root ? size : 0, true, null, root);
  }

  /** Block j of root's {@code send} ({@code size * recvCount} elements) to rank j's {@code recv}; {@code send} may be null off root. */
  public CompletableFuture<Void> scatter(Buffer send, Buffer recv, long recvCount, DataType type, int root) {
    return issuer.twoHost(mw_op_kind_t.MW_OP_SCATTER, "scatter", send, recv, recvCount, type, rank == root ? size : 0, 1, false, null, root);
  }

  /** Reduces everyone's {@code send} ({@code size * recvCount} elements); this rank gets block {@code rank} in {@code recv}. */
  public CompletableFuture<Void> reduceScatter(Buffer send, Buffer recv, long recvCount, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return issuer.twoHost(mw_op_kind_t.MW_OP_REDUCE_SCATTER, "reduce_scatter", send, recv, recvCount, type, size, 1, false, op, -1);
  }

  /** Block j of {@code send} goes to rank j; both hold {@code size * count} elements. */
  public CompletableFuture<Void> alltoall(Buffer send, Buffer recv, long count, DataType type) {
    return issuer.twoHost(mw_op_kind_t.MW_OP_ALLTOALL, "alltoall", send, recv, count, type, size, size, false, null, -1);
  }

  /** Completes once every member reached it. Any backend. */
  public CompletableFuture<Void> barrier() {
    return issuer.submitHost(mw_op_kind_t.MW_OP_BARRIER, NativeBuffer.NONE, NativeBuffer.NONE, 0, DataType.UINT8, null, -1);
  }

  // ---- device memory (NCCL worlds): the same operations on DeviceBuffers ---------------------

  /** {@link #send(Buffer, long, DataType, int)} from device memory. */
  public CompletableFuture<Void> send(DeviceBuffer buf, long count, DataType type, int dst) {
    DeviceBuffer b = issuer.onDevice(buf, bytes(count, type, 1), "send buffer");
    return issuer.submitDevice(mw_op_kind_t.MW_OP_SEND, b, null, count, type, null, dst);
  }

  /** {@link #recv(Buffer, long, DataType, int)} into device memory. */
  public CompletableFuture<Void> recv(DeviceBuffer buf, long count, DataType type, int src) {
    DeviceBuffer b = issuer.onDevice(buf, bytes(count, type, 1), "recv buffer");
    return issuer.submitDevice(mw_op_kind_t.MW_OP_RECV, null, b, count, type, null, src);
  }

  /** {@link #broadcast(Buffer, long, DataType, int)} in device memory. */
  public CompletableFuture<Void> broadcast(DeviceBuffer buf, long count, DataType type, int root) {
    DeviceBuffer b = issuer.onDevice(buf, bytes(count, type, 1), "broadcast buffer");
    return issuer.submitDevice(mw_op_kind_t.MW_OP_BROADCAST, null, b, count, type, null, root);
  }

  /** {@link #allreduce(Buffer, Buffer, long, DataType, ReduceOp)} in device memory. */
  public CompletableFuture<Void> allreduce(DeviceBuffer send, DeviceBuffer recv, long count, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return issuer.twoDevice(mw_op_kind_t.MW_OP_ALLREDUCE, "allreduce", send, recv, count, type, 1, 1, false, op, -1);
  }

  /** {@link #reduce(Buffer, Buffer, long, DataType, ReduceOp, int)} in device memory. */
  public CompletableFuture<Void> reduce(DeviceBuffer send, DeviceBuffer recv, long count, DataType type, ReduceOp op, int root) {
    Objects.requireNonNull(op, "op");
    return issuer.twoDevice(mw_op_kind_t.MW_OP_REDUCE, "reduce", send, recv, count, type, 1, rank == root ? 1 : 0, false, op, root);
  }

  /** {@link #allgather(Buffer, Buffer, long, DataType)} in device memory. */
  public CompletableFuture<Void> allgather(DeviceBuffer send, DeviceBuffer recv, long sendCount, DataType type) {
    return issuer.twoDevice(mw_op_kind_t.MW_OP_ALLGATHER, "allgather", send, recv, sendCount, type, 1, size, true, null, -1);
  }

  /** {@link #gather(Buffer, Buffer, long, DataType, int)} in device memory. */
  public CompletableFuture<Void> gather(DeviceBuffer send, DeviceBuffer recv, long sendCount, DataType type, int root) {
    return issuer.twoDevice(mw_op_kind_t.MW_OP_GATHER, "gather", send, recv, sendCount, type, 1, rank == root ? size : 0, true, null, root);
  }

  /** {@link #scatter(Buffer, Buffer, long, DataType, int)} in device memory. */
  public CompletableFuture<Void> scatter(DeviceBuffer send, DeviceBuffer recv, long recvCount, DataType type, int root) {
    return issuer.twoDevice(mw_op_kind_t.MW_OP_SCATTER, "scatter", send, recv, recvCount, type, rank == root ? size : 0, 1, false, null, root);
  }

  /** {@link #reduceScatter(Buffer, Buffer, long, DataType, ReduceOp)} in device memory. */
  public CompletableFuture<Void> reduceScatter(DeviceBuffer send, DeviceBuffer recv, long recvCount, DataType type, ReduceOp op) {
    Objects.requireNonNull(op, "op");
    return issuer.twoDevice(mw_op_kind_t.MW_OP_REDUCE_SCATTER, "reduce_scatter", send, recv, recvCount, type, size, 1, false, op, -1);
  }

  /** {@link #alltoall(Buffer, Buffer, long, DataType)} in device memory. */
  public CompletableFuture<Void> alltoall(DeviceBuffer send, DeviceBuffer recv, long count, DataType type) {
    return issuer.twoDevice(mw_op_kind_t.MW_OP_ALLTOALL, "alltoall", send, recv, count, type, size, size, false, null, -1);
  }

  /**
   * Completes once the library no longer uses the buffers of the operation whose future is
   * {@code operation}: when the operation finished, failed, or, after {@code cancel()}, once the
   * library took it back. Until then a cancelled operation may still write into a direct buffer
   * or device buffer; reuse those only after this.
   *
   * @throws IllegalArgumentException when {@code operation} is not a future an operation returned
   */
  public static CompletableFuture<Void> released(CompletableFuture<?> operation) {
    if (!(operation instanceof Operation)) {
      throw new IllegalArgumentException("not the future of a World operation: " + operation);
    }
    return ((Operation) operation).released.copy();
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

  /** mw_request_cancel of a request of this world that has not reported yet; see {@link Operation#cancel}. */
  void cancelRequest(long request) {
    // A close in progress holds one of these for writing and cancels every request itself; waiting
    // for it here, under the operation's lock, could deadlock with it.
    if (!context.lifecycle.readLock().tryLock()) return;
    try {
      if (!lock.readLock().tryLock()) return;
      try {
        if (handle != 0) Multiworld.mw_request_cancel(request);
      } finally {
        lock.readLock().unlock();
      }
    } finally {
      context.lifecycle.readLock().unlock();
    }
  }

  /** Fails an operation's future with the exception for {@code status}. */
  void fail(CompletableFuture<Void> f, int status, String detail) {
    if (status == mw_status_t.MW_ERR_WORLD_BROKEN) {
      notice.fail(f, detail);  // names the peer once the break event is in
    } else {
      f.completeExceptionally(MultiWorldException.of(status, detail));
    }
  }
}
