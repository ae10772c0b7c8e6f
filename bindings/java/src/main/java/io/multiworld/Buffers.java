package io.multiworld;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Allocation of the buffers the library works on without copying: direct, in native byte order.
 *
 * <p>Every operation of {@link World} takes {@link java.nio.Buffer}s of any kind:
 * <ul>
 *   <li><b>direct</b> buffers ({@code ByteBuffer.allocateDirect}, its typed views, memory-mapped
 *       files) are zero-copy: the library reads and writes their off-heap memory directly, starting
 *       at the buffer's position. Typed views ({@code FloatBuffer}, ...) must be in native byte
 *       order; a {@code ByteBuffer}'s bytes are used as they are, so fill it in native order
 *       (as {@link #allocate} sets it up);</li>
 *   <li><b>heap</b> buffers and arrays ({@code FloatBuffer.wrap(float[])}, the {@code float[]}
 *       overloads, ...) are accepted too, but copied: into a temporary direct buffer when the
 *       operation is issued, and back into the array when it succeeds.</li>
 * </ul>
 * Positions and limits of the caller's buffers are never changed.
 */
public final class Buffers {
  private Buffers() {}

  /** A direct buffer of {@code count} elements of {@code type}, in native byte order, zeroed. */
  public static ByteBuffer allocate(long count, DataType type) {
    long bytes = Math.multiplyExact(count, (long) type.size());
    if (bytes > Integer.MAX_VALUE) throw new IllegalArgumentException(bytes + " bytes do not fit a ByteBuffer");
    return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
  }
}
