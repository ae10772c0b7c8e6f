package io.multiworld;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.ShortBuffer;

/**
 * What one buffer argument of an operation hands to the native layer: a direct buffer whose
 * address is the first byte to use. For a direct caller buffer that is the buffer itself (or a
 * slice at its position): zero-copy. For a heap buffer it is a temporary direct copy, copied back
 * after success when the operation writes it. The pending-request table keeps this object, and so
 * both buffers, reachable until the native completion is delivered.
 */
final class NativeBuffer {
  static final NativeBuffer NONE = new NativeBuffer(null, null, 0, false);

  private final Buffer user;
  private final int position;  // the caller's position when the operation was issued
  final Buffer address;
  private final long bytes;
  private final boolean copyBack;

  private NativeBuffer(Buffer user, Buffer address, long bytes, boolean copyBack) {
    this.user = user;
    this.position = user == null ? 0 : user.position();
    this.address = address;
    this.bytes = bytes;
    this.copyBack = copyBack;
  }

  /**
   * @param bytes how many bytes from the position the operation uses
   * @param reads whether the operation reads the buffer's contents
   * @param writes whether the operation writes it
   */
  static NativeBuffer of(Buffer b, long bytes, boolean reads, boolean writes, String what) {
    if (b == null) {
      if (bytes == 0) return NONE;
      throw new NullPointerException(what + " is null but " + bytes + " bytes are needed");
    }
    int width = elementSize(b);
    long available = (long) b.remaining() * width;
    if (bytes > available) {
      throw new IllegalArgumentException(what + " has " + available + " bytes from its position, "
          + bytes + " are needed");
    }
    if (writes && b.isReadOnly()) throw new ReadOnlyBufferException();
    if (b.isDirect()) {
      if (!(b instanceof ByteBuffer) && order(b) != ByteOrder.nativeOrder()) {
        throw new IllegalArgumentException(what + " is a direct " + b.getClass().getSimpleName()
            + " in " + order(b) + " byte order; the library needs native order ("
            + ByteOrder.nativeOrder() + "): use ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder())");
      }
      return new NativeBuffer(b, b.position() == 0 ? b : b.slice(), bytes, false);
    }
    if (bytes % width != 0) {
      throw new IllegalArgumentException(what + ": " + bytes + " bytes is not a whole number of "
          + b.getClass().getSimpleName() + " elements");
    }
    if (bytes > Integer.MAX_VALUE) throw new IllegalArgumentException(what + ": too large to copy");
    ByteBuffer copy = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
    if (reads) transfer(b, b.position(), copy, (int) (bytes / width), true);
    return new NativeBuffer(b, copy, bytes, writes);
  }

  /** After success: copies a heap buffer's temporary back into it. */
  void complete() {
    if (copyBack) transfer(user, position, (ByteBuffer) address, (int) (bytes / elementSize(user)), false);
  }

  static int elementSize(Buffer b) {
    if (b instanceof ByteBuffer) return 1;
    if (b instanceof ShortBuffer || b instanceof CharBuffer) return 2;
    if (b instanceof IntBuffer || b instanceof FloatBuffer) return 4;
    if (b instanceof LongBuffer || b instanceof DoubleBuffer) return 8;
    throw new IllegalArgumentException("unsupported buffer type " + b.getClass().getName());
  }

  private static ByteOrder order(Buffer b) {
    if (b instanceof ShortBuffer) return ((ShortBuffer) b).order();
    if (b instanceof CharBuffer) return ((CharBuffer) b).order();
    if (b instanceof IntBuffer) return ((IntBuffer) b).order();
    if (b instanceof FloatBuffer) return ((FloatBuffer) b).order();
    if (b instanceof LongBuffer) return ((LongBuffer) b).order();
    if (b instanceof DoubleBuffer) return ((DoubleBuffer) b).order();
    return ((ByteBuffer) b).order();
  }

  /**
   * Copies n elements between the caller's buffer (from its position, which stays where it is)
   * and the start of the native-order direct copy, element by element so byte order is right.
   */
  private static void transfer(Buffer user, int position, ByteBuffer direct, int n, boolean toDirect) {
    ByteBuffer d = direct.duplicate().order(ByteOrder.nativeOrder());
    Buffer u = user.duplicate();
    u.limit(u.capacity()).position(position).limit(position + n);
    if (u instanceof ByteBuffer) {
      d.limit(n);
      if (toDirect) d.put((ByteBuffer) u); else ((ByteBuffer) u).put(d);
    } else if (u instanceof FloatBuffer) {
      FloatBuffer v = d.asFloatBuffer().limit(n);
      if (toDirect) v.put((FloatBuffer) u); else ((FloatBuffer) u).put(v);
    } else if (u instanceof IntBuffer) {
      IntBuffer v = d.asIntBuffer().limit(n);
      if (toDirect) v.put((IntBuffer) u); else ((IntBuffer) u).put(v);
    } else if (u instanceof LongBuffer) {
      LongBuffer v = d.asLongBuffer().limit(n);
      if (toDirect) v.put((LongBuffer) u); else ((LongBuffer) u).put(v);
    } else if (u instanceof DoubleBuffer) {
      DoubleBuffer v = d.asDoubleBuffer().limit(n);
      if (toDirect) v.put((DoubleBuffer) u); else ((DoubleBuffer) u).put(v);
    } else if (u instanceof ShortBuffer) {
      ShortBuffer v = d.asShortBuffer().limit(n);
      if (toDirect) v.put((ShortBuffer) u); else ((ShortBuffer) u).put(v);
    } else {
      CharBuffer v = d.asCharBuffer().limit(n);
      if (toDirect) v.put((CharBuffer) u); else ((CharBuffer) u).put(v);
    }
  }
}
