package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * CUDA device memory for the operations of NCCL worlds: a device address, a size in bytes and the
 * device's ordinal. {@link World}'s operations take these on worlds created with
 * {@link Backend#NCCL} on the same device, and refuse them on host worlds (and host buffers on
 * NCCL worlds) with an {@link IllegalArgumentException} naming the problem.
 *
 * <p><b>Ownership.</b>
 * <ul>
 *   <li>{@link #allocate} returns a buffer that <em>owns</em> its allocation ({@link #ownsMemory()}):
 *       {@link #close()} frees it. Memory comes from the device's primary context (the one the
 *       CUDA runtime and NCCL use) through the CUDA driver, which is found at run time
 *       ({@code libcuda.so.1}); nothing of CUDA is needed to build or to load this binding.
 *       An allocation that is never closed is freed once no buffer of it is reachable any more.</li>
 *   <li>{@link #wrap} describes memory the caller allocated and keeps owning (from CUDA, a tensor
 *       library, ...): {@link #close()} only stops further use through this object; the caller
 *       frees the memory, and only after every operation using it completed.</li>
 *   <li>{@link #slice} is a view of part of a buffer; it never owns memory, and keeps the
 *       allocation of the buffer it came from alive while it is in use.</li>
 * </ul>
 * An operation holds its buffers' allocations: closing an owning buffer while operations on it
 * (or on its slices) are in flight only refuses new ones, and the memory is freed when the last
 * of them completed. Operations started after {@code close()} throw {@link IllegalStateException}.
 *
 * <p><b>Ordering.</b> NCCL work of a world runs on that world's own CUDA stream. A completed
 * future means the result is on the device: CUDA work issued afterwards, on any stream, sees it,
 * and {@link #copyToHost} returns it. Conversely, finish writing a buffer (synchronize your
 * stream) before you issue an operation that reads it. {@link #copyFromHost} and
 * {@link #copyToHost} are synchronous.
 *
 * <p>Thread safety: any method from any thread.
 */
public final class DeviceBuffer implements AutoCloseable {
  private final long address;
  private final long byteSize;
  private final int device;
  private final Allocation allocation;  // null for memory the caller owns (wrap and its slices)
  private final boolean owner;
  private volatile boolean closed;

  /** An allocation of this binding: freed once closed and no operation uses it any more. */
  private static final class Allocation {
    private final Cleaner.Cleanable cleanable;
    private int uses;         // guarded by this: operations and copies in flight
    private boolean closed;   // guarded by this

    Allocation(long address, int device) {
      // The action must not reach the Allocation, or it would never become unreachable.
      cleanable = Cleaners.CLEANER.register(this, new Free(address, device));
    }

    synchronized boolean isClosed() {
      return closed;
    }

    synchronized void acquire(DeviceBuffer user) {
      if (closed) throw new IllegalStateException(user + " is part of an allocation that was closed");
      ++uses;
    }

    void release() {
      boolean free;
      synchronized (this) {
        free = --uses == 0 && closed;
      }
      if (free) cleanable.clean();
    }

    void close() {
      boolean free;
      synchronized (this) {
        if (closed) return;
        closed = true;
        free = uses == 0;
      }
      if (free) cleanable.clean();
    }
  }

  /** The cleaner's thread starts with the first allocation, not with this class. */
  private static final class Cleaners {
    static final Cleaner CLEANER = Cleaner.create();
  }

  /** Frees one allocation, once (Cleaner guarantees it). */
  private static final class Free implements Runnable {
    private final long address;
    private final int device;

    Free(long address, int device) {
      this.address = address;
      this.device = device;
    }

    @Override
    public void run() {
      if (Multiworld.mwj_device_free(device, address) != mw_status_t.MW_OK) {
        System.err.println("multiworld: freeing device memory 0x" + Long.toHexString(address) + " on device "
            + device + " failed: " + Multiworld.mwj_device_last_error());
      }
    }
  }

  private DeviceBuffer(long address, long byteSize, int device, Allocation allocation, boolean owner) {
    this.address = address;
    this.byteSize = byteSize;
    this.device = device;
    this.allocation = allocation;
    this.owner = owner;
  }

  /**
   * Allocates {@code byteSize} bytes (not zeroed) on CUDA device {@code device}; the buffer owns
   * them. A size of 0 allocates nothing (address 0).
   *
   * @throws MultiWorldException {@link Status#UNSUPPORTED} without a CUDA driver or device (the
   *     message says which), {@link Status#INVALID_ARGUMENT} for a device that is not visible,
   *     {@link Status#NO_MEMORY} when the device is full
   */
  public static DeviceBuffer allocate(int device, long byteSize) {
    if (byteSize < 0) throw new IllegalArgumentException("negative size " + byteSize);
    NativeLibrary.load();
    if (byteSize == 0) return new DeviceBuffer(0, 0, device, null, true);
    long[] out = new long[1];
    int st = Multiworld.mwj_device_alloc(device, byteSize, out);
    if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mwj_device_last_error());
    return new DeviceBuffer(out[0], byteSize, device, new Allocation(out[0], device), true);
  }

  /** {@code count} elements of {@code type} on {@code device}; see {@link #allocate(int, long)}. */
  public static DeviceBuffer allocate(int device, long count, DataType type) {
    if (count < 0) throw new IllegalArgumentException("negative count " + count);
    return allocate(device, Math.multiplyExact(count, (long) type.size()));
  }

  /**
   * Describes device memory the caller allocated and keeps owning: {@code byteSize} bytes at
   * {@code address} on CUDA device {@code device}. Nothing is checked here; the library refuses
   * memory that is not on the world's device when an operation is issued.
   */
  public static DeviceBuffer wrap(long address, long byteSize, int device) {
    if (byteSize < 0) throw new IllegalArgumentException("negative size " + byteSize);
    if (address == 0 && byteSize != 0) throw new IllegalArgumentException("null device address of " + byteSize + " bytes");
    if (device < 0) throw new IllegalArgumentException("negative device ordinal " + device);
    return new DeviceBuffer(address, byteSize, device, null, false);
  }

  /**
   * The number of CUDA devices this process sees; 0 without a CUDA driver or device
   * ({@link #unavailableReason()} says which).
   */
  public static int deviceCount() {
    NativeLibrary.load();
    int[] count = new int[1];
    return Multiworld.mwj_device_count(count) == mw_status_t.MW_OK ? count[0] : 0;
  }

  /** Why {@link #deviceCount()} is 0 (no driver, no device), or null when devices are there. */
  public static String unavailableReason() {
    NativeLibrary.load();
    int[] count = new int[1];
    return Multiworld.mwj_device_count(count) == mw_status_t.MW_OK ? null : Multiworld.mwj_device_last_error();
  }

  /**
   * {@code byteSize} bytes from {@code offset} of this buffer. The view never owns memory; an
   * operation on it holds this buffer's allocation like an operation on this buffer.
   */
  public DeviceBuffer slice(long offset, long byteSize) {
    if (offset < 0 || byteSize < 0 || offset > this.byteSize - byteSize) {
      throw new IndexOutOfBoundsException("slice [" + offset + ", +" + byteSize + ") of a buffer of "
          + this.byteSize + " bytes");
    }
    ensureOpen();
    return new DeviceBuffer(address + offset, byteSize, device, allocation, false);
  }

  public long address() {
    return address;
  }

  public long byteSize() {
    return byteSize;
  }

  /** The CUDA device ordinal. */
  public int device() {
    return device;
  }

  /** True for the buffer {@link #allocate} returned, whose {@link #close()} frees the memory. */
  public boolean ownsMemory() {
    return owner;
  }

  public boolean isClosed() {
    return closed || (allocation != null && allocation.isClosed());
  }

  /**
   * Copies {@code src.remaining()} bytes from {@code src} (from its position, which stays where
   * it is) to the start of this buffer, and returns once they are on the device.
   */
  public void copyFromHost(ByteBuffer src) {
    long n = Objects.requireNonNull(src, "src").remaining();
    checkFits(n);
    ByteBuffer direct = src.isDirect() ? src.slice() : ByteBuffer.allocateDirect((int) n).put(src.duplicate()).flip();
    acquire();
    try {
      check(Multiworld.mwj_device_copy_from_host(device, address, direct, n));
    } finally {
      release();
    }
  }

  /**
   * Copies {@code dst.remaining()} bytes from the start of this buffer into {@code dst} (from its
   * position, which stays where it is).
   */
  public void copyToHost(ByteBuffer dst) {
    long n = Objects.requireNonNull(dst, "dst").remaining();
    if (dst.isReadOnly()) throw new java.nio.ReadOnlyBufferException();
    checkFits(n);
    ByteBuffer direct = dst.isDirect() ? dst.slice() : ByteBuffer.allocateDirect((int) n).order(ByteOrder.nativeOrder());
    acquire();
    try {
      check(Multiworld.mwj_device_copy_to_host(device, direct, address, n));
    } finally {
      release();
    }
    if (!dst.isDirect()) dst.duplicate().put(direct);
  }

  /**
   * No further use through this object. For the owning buffer: the memory is freed now, or when
   * the last operation using it completed. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    if (owner && allocation != null) allocation.close();
  }

  @Override
  public String toString() {
    return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + byteSize + " bytes, device " + device
        + (owner ? ", owned" : "") + (isClosed() ? ", closed" : "") + "]";
  }

  // ---- used by Operation ---------------------------------------------------------------

  /** One use by an operation or a copy; refused once closed. */
  void acquire() {
    ensureOpen();
    if (allocation != null) allocation.acquire(this);
  }

  void release() {
    if (allocation != null) allocation.release();
  }

  private void ensureOpen() {
    if (closed) throw new IllegalStateException(this + " is closed");
  }

  private void checkFits(long n) {
    if (n > byteSize) throw new IllegalArgumentException(n + " bytes do not fit " + this);
  }

  private static void check(int status) {
    if (status != mw_status_t.MW_OK) throw MultiWorldException.of(status, Multiworld.mwj_device_last_error());
  }
}
